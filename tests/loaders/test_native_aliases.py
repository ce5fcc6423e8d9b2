"""The native shape under the common column names a first checkpointing sketch uses."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from debugger.contract import pending_entries
from debugger.store import Store
from loaders.native import ALIASES
from tests.fixtures.native import stepscope, stepscope_json


def _table(path: Path, ddl: str, rows: list[tuple[Any, ...]]) -> Path:
    with sqlite3.connect(path) as con:
        con.execute(f"CREATE TABLE checkpoints ({ddl})")
        marks = ", ".join("?" for _ in rows[0])
        con.executemany(f"INSERT INTO checkpoints VALUES ({marks})", rows)
    return path


def _sketch(tmp_path: Path) -> Path:
    """``(run_id, step, payload)``: pending effects listed as their idempotency keys."""
    rows = []
    for i in range(4):
        record = {"working_state": {"i": i}, "schema_version": 1, "model_version": "m-1",
                  "tool_versions": {"refund": "1.0"}, "tokens_spent": 10 * i,
                  "pending_effects": ["refund-A-17"] if i == 3 else [],
                  "metadata": {"agent": "sketch"}}  # fmt: skip
        rows.append(("r-1", i, json.dumps(record)))
    return _table(tmp_path / "sketch.sqlite", "run_id TEXT, step INTEGER, payload TEXT", rows)


def test_the_first_sketch_shape_imports_and_its_string_keys_are_keys(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    report = stepscope_json("import", _sketch(tmp_path), "--store", store)
    assert report["flavour"] == "native" and report["total"]["imported"] == 4
    with Store.open(store, read_only=True) as s:
        head = s.checkpoint("r-1")
    assert head.step_index == 3 and head.working_state == {"i": 3}
    assert head.pending_effects == [{"idempotency_key": "refund-A-17"}]
    audit = stepscope_json("audit", "r-1", "--store", store)
    assert not [f for f in audit["findings"] if f["rule_id"] == "pending-effect-without-key"]
    assert [c["idempotency_key"] for c in audit["verify_effects"]] == ["refund-A-17"]
    assert "refund-A-17" in stepscope("audit", "r-1", "--store", store).stdout


def test_column_aliases(tmp_path: Path) -> None:
    ddl = "thread_id TEXT, step_number INTEGER, state TEXT, ts TEXT, tokens INTEGER, meta TEXT"
    rows = [("t-1", i, json.dumps({"i": i}), f"2026-11-01T10:00:0{i}Z", 5 * i,
             json.dumps({"agent": "a"})) for i in range(3)]  # fmt: skip
    store = tmp_path / "s.duckdb"
    stepscope_json("import", _table(tmp_path / "a.sqlite", ddl, rows), "--store", store)
    with Store.open(store, read_only=True) as s:
        ck = s.checkpoint("t-1", step=2)
        assert s.run("t-1").agent == "a"
        assert ck.working_state == {"i": 2} and ck.budgets.tokens_spent == 10
        assert ck.created_at is not None and ck.created_at.second == 2
        assert ck.parent_id == s.checkpoint("t-1", step=1).checkpoint_id  # chained in order


def test_the_canonical_name_wins_over_an_alias(tmp_path: Path) -> None:
    ddl = "run_id TEXT, step INTEGER, step_index INTEGER, state TEXT, working_state TEXT"
    rows = [("r", 100 + i, i, '"alias"', json.dumps({"i": i})) for i in range(2)]
    store = tmp_path / "s.duckdb"
    stepscope_json("import", _table(tmp_path / "a.sqlite", ddl, rows), "--store", store)
    with Store.open(store, read_only=True) as s:
        assert s.checkpoint("r", step=1).working_state == {"i": 1}


def test_two_aliases_of_one_name_are_refused_with_one_line(tmp_path: Path) -> None:
    path = _table(tmp_path / "a.sqlite", "run TEXT, thread_id TEXT, step INTEGER, state TEXT",
                  [("a", "b", 0, "{}")])  # fmt: skip
    result = stepscope("import", path, "--store", tmp_path / "s.duckdb")
    assert result.exit_code == 2
    assert "run and thread_id" in result.stderr and "--mapping" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()


def test_aliases_are_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "native-shape.md").read_text()
    for name, aliases in ALIASES.items():
        for alias in aliases:
            assert f"`{alias}`" in doc, (name, alias)


def test_pending_entries() -> None:
    assert pending_entries(["k-1", {"tool": "t", "idempotency_key": "k-2"}, 3]) == [
        {"idempotency_key": "k-1"},
        {"tool": "t", "idempotency_key": "k-2"},
        {"value": 3},
    ]
    assert pending_entries({"not": "a list"}) == []
