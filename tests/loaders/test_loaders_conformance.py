"""The shared loader suite: every way of writing the same native rows must round-trip the same.

Parametrised over ``WRITERS`` (tests/fixtures/native.py), so a writer another area registers
(Postgres) runs the same checks. Everything goes through the CLI in-process, except effects
and tool calls, which the CLI does not print and the Python API returns.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import debugger
from tests.fixtures.native import (
    WRITER_MARKS,
    WRITERS,
    Rows,
    Written,
    effect_rows,
    native_rows,
    stepscope_json,
    tool_call_rows,
    written,
)

CASES = [pytest.param(name, marks=WRITER_MARKS.get(name, []), id=name) for name in WRITERS]


def dataset(grown: bool = False) -> tuple[Rows, Rows, Rows]:
    """The rows every writer writes; the grown one adds a run and a step to run-2."""
    if not grown:
        return native_rows(3, 5), effect_rows(3), tool_call_rows(3, 5)
    rows = native_rows(4, 5)
    extra = dict(rows[14], step_index=5, created_at="2026-11-01T10:02:05+00:00", tokens_spent=600)
    extra["working_state"] = json.dumps({"step": 5, "done": False})
    return [*rows, extra], effect_rows(4), tool_call_rows(4, 5)


def write(name: str, directory: Path, grown: bool = False) -> Written:
    return written(WRITERS[name](directory, *dataset(grown)))


def do_import(w: Written, store: Path) -> dict[str, Any]:
    return stepscope_json("import", w.source, *w.args, "--store", str(store))  # type: ignore[no-any-return]


def n_rows(w: Written, grown: bool = False) -> int:
    rows, effects, calls = dataset(grown)
    sizes = {"checkpoints": len(rows), "effects": len(effects), "tool_calls": len(calls)}
    return sum(sizes[t] for t in w.tables)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=None)


@pytest.fixture(scope="module", params=CASES)
def imported(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Written, Path, dict[str, Any]]]:
    """Each writer's source, imported once into its own store."""
    name = request.param
    base = tmp_path_factory.mktemp(name)
    w = write(name, base / "src")
    store = base / "store.duckdb"
    report = do_import(w, store)
    yield name, w, store, report


def test_first_import_counts_every_row(imported: tuple[str, Written, Path, dict[str, Any]]) -> None:
    _, w, _, report = imported
    total = report["total"]
    assert total == {"read": n_rows(w), "imported": n_rows(w), "already_present": 0,
                     "quarantined": 0, "updated": 0}  # fmt: skip
    assert set(report["tables"]) == set(w.tables)
    assert report["runs_touched"] == 3


def assert_checkpoint_is(doc: dict[str, Any], row: dict[str, Any]) -> None:
    """A checkpoint as ``show --json`` prints it holds exactly what the row wrote."""
    assert doc["working_state"] == json.loads(row["working_state"])
    assert doc["budgets"] == {
        "tokens_spent": row["tokens_spent"],
        "steps_spent": row["steps_spent"],
        "wall_clock_ms": row["wall_clock_ms"],
    }
    assert doc["pending_effects"] == json.loads(row["pending_effects"])
    assert doc["schema_version"] == row["schema_version"]
    assert utc(doc["created_at"]) == utc(row["created_at"])
    assert doc["model_version"] == row["model_version"]
    assert doc["tool_versions"] == json.loads(row["tool_versions"])
    assert doc["metadata"] == json.loads(row["metadata"])


def test_show_gives_back_exactly_what_was_written(
    imported: tuple[str, Written, Path, dict[str, Any]],
) -> None:
    _, _, store, _ = imported
    rows, _, _ = dataset()
    # through the CLI for the rows that matter most (one is a pending refund) ...
    for row in (rows[0], rows[7], rows[9]):
        doc = stepscope_json(
            "show", row["run_id"], "--step", str(row["step_index"]), "--store", str(store)
        )["checkpoint"]
        assert_checkpoint_is(doc, row)
    # ... and every row through the Python API the CLI calls (one open, so it stays quick)
    previous: dict[str, str] = {}
    with debugger.open(store) as s:
        for row in rows:
            doc = s.checkpoint(row["run_id"], row["step_index"]).to_dict()
            assert_checkpoint_is(json.loads(json.dumps(doc, default=str)), row)
            # no parent column in any writer: checkpoints are chained in time order
            assert doc["parent_id"] == previous.get(row["run_id"])
            previous[row["run_id"]] = doc["checkpoint_id"]


@pytest.fixture(scope="module")
def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """``stepscope runs --json`` of the rows written as column-form SQLite."""
    base = tmp_path_factory.mktemp("reference")
    do_import(write("sqlite", base / "src"), base / "ref.duckdb")
    return stepscope_json("runs", "--store", str(base / "ref.duckdb"))["runs"]  # type: ignore[no-any-return]


def test_runs_are_derived_the_same_for_every_format(
    imported: tuple[str, Written, Path, dict[str, Any]], reference_runs: list[dict[str, Any]]
) -> None:
    _, _, store, _ = imported
    runs = stepscope_json("runs", "--store", str(store))["runs"]
    assert runs == reference_runs
    by_id = {r["run_id"]: r for r in runs}
    assert {k: r["status"] for k, r in by_id.items()} == {
        "run-0": "completed",
        "run-1": "crashed",
        "run-2": "crashed",
    }
    assert by_id["run-1"]["pending_count"] == 1
    assert by_id["run-0"]["budgets"] == {"tokens_spent": 480, "steps_spent": 4,
                                         "wall_clock_ms": 6000}  # fmt: skip
    assert by_id["run-0"]["model_versions"] == ["scripted-1", "scripted-2"]
    assert (by_id["run-0"]["first_step"], by_id["run-0"]["last_step"]) == (0, 4)
    assert by_id["run-0"]["agent"] == "refund_desk"


def _effect_key(e: Any) -> tuple[Any, ...]:
    return (e.step_index, e.idempotency_key, e.tool, json.dumps(e.args), e.status,
            json.dumps(e.result))  # fmt: skip


def test_effects_and_tool_calls_round_trip(
    imported: tuple[str, Written, Path, dict[str, Any]],
) -> None:
    _, w, store, _ = imported
    if "effects" not in w.tables:
        pytest.skip("this source kind carries checkpoints only")
    _, effects, calls = dataset()
    with debugger.open(store) as s:
        for run_id in ("run-0", "run-1", "run-2"):
            got = Counter(_effect_key(e) for e in s.effects(run_id))
            want = Counter(
                (e["step_index"], e["idempotency_key"], e["tool"],
                 json.dumps(json.loads(e["args"])), e["status"],
                 json.dumps(json.loads(e["result"]) if e["result"] else None))
                for e in effects if e["run_id"] == run_id
            )  # fmt: skip
            assert got == want
            tape = [
                (c.step_index, c.seq, c.kind, c.name, c.request, c.response, c.is_write)
                for c in s.tool_calls(run_id)
            ]
            assert tape == [
                (c["step_index"], c["seq"], c["kind"], c["name"], json.loads(c["request"]),
                 json.loads(c["response"]), c["is_write"])
                for c in calls if c["run_id"] == run_id
            ]  # fmt: skip
        emails = [e for e in s.effects("run-1") if e.tool == "send_email"]
        assert len(emails) == 2  # recorded twice, so stored twice
        assert emails[0].effect_id != emails[1].effect_id


def test_reimport_and_growth(imported: tuple[str, Written, Path, dict[str, Any]]) -> None:
    # last test of the module: it grows the source and the store the others read
    name, w, store, _ = imported
    runs_before = stepscope_json("runs", "--store", str(store))["runs"]

    again = do_import(w, store)["total"]
    assert again == {"read": n_rows(w), "imported": 0, "already_present": n_rows(w),
                     "quarantined": 0, "updated": 0}  # fmt: skip
    assert stepscope_json("runs", "--store", str(store))["runs"] == runs_before

    w = write(name, store.parent / "src", grown=True)  # the directory the fixture wrote
    grown = do_import(w, store)["total"]
    added = n_rows(w, grown=True) - n_rows(w)
    assert grown == {"read": n_rows(w, grown=True), "imported": added,
                     "already_present": n_rows(w), "quarantined": 0, "updated": 0}  # fmt: skip
    runs = {r["run_id"]: r for r in stepscope_json("runs", "--store", str(store))["runs"]}
    assert set(runs) == {"run-0", "run-1", "run-2", "run-3"}
    assert runs["run-2"]["last_step"] == 5
    assert runs["run-2"]["checkpoint_count"] == 6
    with debugger.open(store) as s:
        head = s.checkpoint("run-2", 5)
        assert head.working_state == {"step": 5, "done": False}
        assert head.parent_id == s.checkpoint("run-2", 4).checkpoint_id
        assert s.checkpoint("run-2").checkpoint_id == head.checkpoint_id
        if "effects" in w.tables:
            assert len(s.effects("run-1")) == 3
            assert len(s.effects("run-3")) == 1
