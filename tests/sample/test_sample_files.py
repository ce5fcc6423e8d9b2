"""The sample files: regeneration is byte-for-byte, and every form gives the same runs."""

from __future__ import annotations

import filecmp
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from sample_checkpoints.regenerate import FILES, regenerate
from tests.fixtures.sample import SAMPLE_RUN_IDS, import_sample, sample_files


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_regeneration_is_byte_for_byte(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    regenerate(first)
    regenerate(second)
    assert sorted(p.name for p in first.iterdir()) == sorted(FILES)
    a, b = _tree(first), _tree(second)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    # and the committed files are what the script writes
    committed = _tree(sample_files().native.parent)
    assert [k for k in a if committed.get(k) != a[k]] == []
    assert filecmp.cmp(first / "native.sqlite", sample_files().native, shallow=False)


def test_sample_is_small() -> None:
    total = sum(p.stat().st_size for p in sample_files().native.parent.rglob("*") if p.is_file())
    assert total < 4 * 1024 * 1024


def _snapshot(path: Path) -> dict[str, Any]:
    with Store.open(path, read_only=True) as s:
        return {
            "runs": s.sql(
                "SELECT run_id, agent, status, first_step, last_step, checkpoint_count "
                "FROM runs ORDER BY run_id"
            ),
            "checkpoints": s.sql(
                "SELECT run_id, checkpoint_id, parent_id, step_index, schema_version, created_at,"
                " state_hash, tokens_spent, steps_spent, wall_clock_ms,"
                " CAST(pending_effects AS VARCHAR), model_version,"
                " CAST(tool_versions AS VARCHAR), CAST(metadata AS VARCHAR)"
                " FROM checkpoints ORDER BY run_id, checkpoint_id"
            ),
            "effects": s.sql(
                "SELECT run_id, effect_id, step_index, idempotency_key, tool,"
                " CAST(args AS VARCHAR), status, CAST(result AS VARCHAR), created_at"
                " FROM effects ORDER BY ALL"
            ),
            "tool_calls": s.sql(
                "SELECT run_id, call_id, step_index, seq, kind, name, CAST(request AS VARCHAR),"
                " CAST(response AS VARCHAR), error, idempotency_key, is_write FROM tool_calls"
                " ORDER BY ALL"
            ),
        }


@pytest.fixture(scope="module")
def native_snapshot(sample_native_store: Path) -> dict[str, Any]:
    return _snapshot(sample_native_store)


@pytest.mark.parametrize("form", ["payload", "mapped", "parquet"])
def test_every_form_gives_the_same_runs_and_states(
    form: str, native_snapshot: dict[str, Any], tmp_path: Path
) -> None:
    other = _snapshot(import_sample(tmp_path / f"{form}.duckdb", (form,)))
    assert [r[0] for r in native_snapshot["runs"]] == sorted(SAMPLE_RUN_IDS)
    for table, rows in native_snapshot.items():
        assert other[table] == rows, f"{form}: {table} differs from native.sqlite"


def test_importing_every_form_into_one_store_adds_each_run_once(
    sample_store: Path, native_snapshot: dict[str, Any]
) -> None:
    assert _snapshot(sample_store) == native_snapshot
    with Store.open(sample_store, read_only=True) as s:
        assert len(s.sources()) == 4
