"""Rows that fail validation go to quarantine with a reason, and the counts add up."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import debugger
from tests.fixtures.native import COLUMNS, native_rows, stepscope, stepscope_json

GOOD = native_rows(1, 3)


def bad(**changes: Any) -> dict[str, Any]:
    return {**GOOD[0], "step_index": 100 + len(changes), **changes}


BAD_ROWS: dict[str, dict[str, Any]] = {
    "working_state is not valid JSON": bad(step_index=10, working_state='{"a": 1'),
    "missing working_state": bad(step_index=11, working_state=None),
    "missing run_id": bad(run_id=None),
    "missing step_index": bad(step_index=None),
    "negative tokens_spent: -5": bad(step_index=12, tokens_spent=-5),
    "negative wall_clock_ms: -1": bad(step_index=13, wall_clock_ms=-1),
    "step_index is not an integer: abc": bad(step_index="abc"),
    "step_index is not an integer: 12.5": bad(step_index=12.5),
    "step_index out of range: 4294967296": bad(step_index=2**32),
    "created_at is not a timestamp: yesterday": bad(step_index=14, created_at="yesterday"),
    "pending_effects is not a JSON array": bad(step_index=15, pending_effects='{"x": 1}'),
    "metadata is not a JSON object": bad(step_index=16, metadata="[1, 2]"),
    "tool_versions is not a JSON object": bad(step_index=17, tool_versions='"1.0"'),
}
BAD_EFFECTS = {
    "effect status must be pending, committed, failed or unknown: sent": (
        "run-0", 1, "k-1", "send_email", "{}", "sent"),
    "missing tool": ("run-0", 1, "k-2", None, "{}", "committed"),
    "args is not valid JSON": ("run-0", 1, "k-3", "send_email", "{oops", "committed"),
}  # fmt: skip
BAD_CALLS = {
    "call kind must be tool or model: rpc": ("run-0", 1, 1, "rpc", "lookup"),
    "negative seq: -3": ("run-0", 1, -3, "tool", "lookup"),
}


@pytest.fixture
def dirty_source(tmp_path: Path) -> Path:
    """A SQLite source with good rows and one row for each reason."""
    path = tmp_path / "dirty.sqlite"
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE checkpoints ({', '.join(COLUMNS)})")
    rows = [*GOOD, *BAD_ROWS.values()]
    con.executemany(
        f"INSERT INTO checkpoints VALUES ({', '.join('?' for _ in COLUMNS)})",
        [tuple(r[c] for c in COLUMNS) for r in rows],
    )
    con.execute("CREATE TABLE effects (run_id, step_index, idempotency_key, tool, args, status)")
    con.execute("INSERT INTO effects VALUES ('run-0', 1, 'k-0', 'send_email', '{}', 'committed')")
    con.executemany("INSERT INTO effects VALUES (?, ?, ?, ?, ?, ?)", list(BAD_EFFECTS.values()))
    con.execute("CREATE TABLE tool_calls (run_id, step_index, seq, kind, name)")
    con.executemany("INSERT INTO tool_calls VALUES (?, ?, ?, ?, ?)", list(BAD_CALLS.values()))
    con.commit()
    con.close()
    return path


def test_every_bad_row_is_quarantined_with_its_reason(dirty_source: Path) -> None:
    report = stepscope_json("import", dirty_source)
    expected = {**dict.fromkeys(BAD_ROWS, 1), **dict.fromkeys(BAD_EFFECTS, 1),
                **dict.fromkeys(BAD_CALLS, 1)}  # fmt: skip
    assert report["quarantine_reasons"] == expected
    assert report["tables"]["checkpoints"] == {
        "read": len(GOOD) + len(BAD_ROWS), "imported": len(GOOD), "already_present": 0,
        "quarantined": len(BAD_ROWS), "updated": 0,
    }  # fmt: skip
    for counts in [*report["tables"].values(), report["total"]]:
        assert counts["read"] == (
            counts["imported"]
            + counts["updated"]
            + counts["already_present"]
            + counts["quarantined"]
        )
    with debugger.open("stepscope.duckdb") as store:
        q = store.quarantine()
        assert sorted(q["reason"]) == sorted(expected)
        raw = q[q["reason"] == "negative tokens_spent: -5"]["raw"].iloc[0]
        assert json.loads(raw)["tokens_spent"] == -5
        assert [c.step_index for c in store.checkpoints("run-0")] == [0, 1, 2]


def test_the_report_line_adds_up(dirty_source: Path) -> None:
    result = stepscope("import", dirty_source)
    assert result.exit_code == 0
    n = len(GOOD) + len(BAD_ROWS) + len(BAD_EFFECTS) + len(BAD_CALLS) + 1
    q = len(BAD_ROWS) + len(BAD_EFFECTS) + len(BAD_CALLS)
    assert f"read {n} rows = {n - q} imported + 0 already present + {q} quarantined" in (
        result.stdout
    )
    assert "quarantined 1: negative tokens_spent: -5" in result.stdout


def test_reimport_does_not_duplicate_quarantine(dirty_source: Path) -> None:
    stepscope_json("import", dirty_source)
    again = stepscope_json("import", dirty_source)
    assert again["total"]["imported"] == 0
    assert again["total"]["quarantined"] == len(BAD_ROWS) + len(BAD_EFFECTS) + len(BAD_CALLS)
    with debugger.open("stepscope.duckdb") as store:
        assert len(store.quarantine()) == len(BAD_ROWS) + len(BAD_EFFECTS) + len(BAD_CALLS)
        sources = store.sources()
        assert list(sources["quarantined"]) == [again["total"]["quarantined"]] * 2


def test_payload_form_rejects_a_payload_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "payload.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, payload TEXT)")
    con.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?)",
        [("r", 0, '{"working_state": {"a": 1}}'), ("r", 1, "[1]"), ("r", 2, "{bad"),
         ("r", 3, None), ("r", 4, '{"tokens_spent": 5}')],
    )  # fmt: skip
    con.commit()
    con.close()
    report = stepscope_json("import", path)
    assert report["quarantine_reasons"] == {
        "payload is not a JSON object": 1,
        "payload is not valid JSON": 1,
        "missing payload": 1,
        "missing working_state": 1,
    }
    assert report["total"]["imported"] == 1


def test_a_grown_parquet_dataset_does_not_duplicate_quarantine(tmp_path: Path) -> None:
    # a new file that sorts first must not shift the keys of the rows already seen
    rows = native_rows(2, 3)
    rows[4]["tokens_spent"] = -1
    (tmp_path / "export").mkdir()

    def part(name: str, part_rows: list[dict[str, Any]]) -> None:
        table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in part_rows])
        pq.write_table(table, tmp_path / "export" / name)

    part("part-b.parquet", rows[3:])
    assert stepscope_json("import", tmp_path / "export")["total"]["quarantined"] == 1
    part("part-a.parquet", rows[:3])
    grown = stepscope_json("import", tmp_path / "export")["total"]
    assert grown == {"read": 6, "imported": 3, "already_present": 2, "quarantined": 1, "updated": 0}
    with debugger.open("stepscope.duckdb") as store:
        assert list(store.quarantine()["reason"]) == ["negative tokens_spent: -1"]


def test_a_step_beyond_32_bits_cannot_shadow_another_run(tmp_path: Path) -> None:
    # the store's lookup key keeps 32 bits for the step: step 2**32 of one run would have
    # been found as step 0 of the next run
    path = tmp_path / "steps.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, working_state TEXT)")
    con.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?)",
        [("a", 0, '{"run": "a"}'), ("b", 0, '{"run": "b"}'), ("a", 2**32, '{"run": "a-far"}'),
         ("a", -(2**31), '{"run": "a-lowest"}')],
    )  # fmt: skip
    con.commit()
    con.close()
    report = stepscope_json("import", path)
    assert report["quarantine_reasons"] == {"step_index out of range: 4294967296": 1}
    with debugger.open("stepscope.duckdb") as store:
        assert store.checkpoint("b", 0).working_state == {"run": "b"}
        assert store.checkpoint("a", -(2**31)).working_state == {"run": "a-lowest"}
    result = stepscope("show", "a", "--step", str(2**32))
    assert result.exit_code == 2 and "has no step 4294967296" in result.stderr


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "batches"])
def test_whole_numbers_written_as_floats_are_integers(tmp_path: Path, whole: bool) -> None:
    """pandas writes an integer column with a missing value as floats (4.0), a decimal type
    keeps 4.00: those are the integers; 2.5 is not, and only its row goes to quarantine."""
    import pandas as pd

    df = pd.DataFrame({
        "run_id": ["r"] * 4, "step_index": [0.0, 1.0, 2.0, 3.0],
        "working_state": [json.dumps({"s": s}) for s in range(4)],
        "tokens_spent": [10.0, None, 2.5, 40.0],
        "wall_clock_ms": pd.array(["1.00", "2", "3.0", "4"], dtype="string"),
    })  # fmt: skip
    df.to_parquet(tmp_path / "c.parquet")
    args = [] if whole else ["--batch-rows", "1024"]
    report = stepscope_json("import", tmp_path / "c.parquet", *args)
    assert report["quarantine_reasons"] == {"tokens_spent is not an integer: 2.5": 1}
    with debugger.open("stepscope.duckdb") as store:
        rows = store.sql(
            "SELECT step_index, tokens_spent, wall_clock_ms FROM checkpoints ORDER BY 1"
        )
    assert rows == [(0, 10, 1), (1, 0, 2), (3, 40, 4)]
