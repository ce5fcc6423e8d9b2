"""``stepscope diff`` driven in-process, on a real store imported from a native SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.fixtures.native import native_rows, write_native_sqlite


@pytest.fixture(scope="session")
def diff_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp("diff-store")
    rows = native_rows()
    rows += [dict(r, run_id="ops@desk") for r in rows if r["run_id"] == "run-2"]
    source = write_native_sqlite(base / "native.sqlite", rows)
    store_path = base / "store.duckdb"
    with Store.open(str(store_path), read_only=False) as store:
        import_source(store, str(source), ImportOptions())
    return str(store_path)


def run(store: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["diff", "--store", store, *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_has_stable_keys_and_all_parts(diff_store: str) -> None:
    code, out, _ = run(diff_store, "run-1:2", "run-1:4", "--json")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["a", "b", "state", "budgets", "effects", "metadata", "summary"]
    assert doc["a"]["run_id"] == "run-1" and doc["a"]["step_index"] == 2
    assert doc["state"][0] == {"path": "root['step']", "kind": "values_changed", "old": 2, "new": 4}
    assert {r["path"] for r in doc["state"]} == {"root['step']", "root['notes'][2]",
                                                 "root['notes'][3]"}  # fmt: skip
    assert [b["name"] for b in doc["budgets"]] == ["tokens_spent", "steps_spent", "wall_clock_ms"]
    assert doc["effects"] == [
        {"idempotency_key": "refund-1-4", "change": "added", "tool": "issue_refund",
         "old_status": None, "new_status": "unknown", "old": None,
         "new": {"tool": "issue_refund", "idempotency_key": "refund-1-4",
                 "args": {"order": "A-17", "amount": 42.5}, "status": "unknown"}}
    ]  # fmt: skip
    assert doc["metadata"] == [{"path": "root['model_version']", "kind": "values_changed",
                                "old": "scripted-1", "new": "scripted-2"}]  # fmt: skip


def test_text_table_across_runs(diff_store: str) -> None:
    code, out, _ = run(diff_store, "run-0:4", "run-1:4")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("run-0:4 -> run-1:4:")
    assert "pending effects:" in lines
    assert any(line.split()[:2] == ["added", "refund-1-4"] for line in lines)
    assert any("root['metadata']['status']" in line and '"completed"' in line for line in lines)


def test_checkpoint_id_reference_and_ignore(diff_store: str) -> None:
    with Store.open(diff_store, read_only=True) as store:
        ckpt_id = store.checkpoint("run-2", step=1).checkpoint_id
    code, out, _ = run(diff_store, f"run-2@{ckpt_id}", "run-2:2", "--json",
                       "--ignore", "root['step']", "--ignore", "re:notes")  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert doc["a"]["checkpoint_id"] == ckpt_id
    assert [r["path"] for r in doc["state"]] == ["root['order']['ok']"]


def test_at_signs_in_run_ids_resolve_against_the_store(diff_store: str) -> None:
    with Store.open(diff_store, read_only=True) as store:
        ckpt_id = store.checkpoint("ops@desk", step=1).checkpoint_id
    code, out, _ = run(diff_store, f"ops@desk@{ckpt_id}", "ops@desk:1", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["a"] == {"run_id": "ops@desk", "step_index": 1, "checkpoint_id": ckpt_id}
    assert doc["state"] == []


def test_same_checkpoint_says_no_differences(diff_store: str) -> None:
    code, out, _ = run(diff_store, "run-0:2", "run-0:2")
    assert code == 0 and out.strip() == "run-0:2 -> run-0:2: no differences"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run-1:two", "run-1:4"), "must be an integer"),
        (("run-1", "run-1:4"), "is not RUN:STEP or RUN@CHECKPOINT_ID"),
        (("nope:1", "run-1:4"), "no run 'nope'"),
        (("run-1:99", "run-1:4"), "has no step 99"),
        (("run-1:1", "run-1:4", "--ignore-order", "[*]"), "must start with 'root'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    diff_store: str, args: tuple[str, ...], message: str
) -> None:
    code, out, err = run(diff_store, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_bad_reference_fails_before_opening_the_store(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "missing.duckdb"), "run:x", "run:1")
    assert code == 2 and "must be an integer" in err
