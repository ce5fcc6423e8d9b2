"""The notebook API: ``debugger.open(path)`` and the reads the CLI and the app use."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

import debugger
from debugger.errors import NotFound, StoreError
from debugger.model import Checkpoint, Run
from debugger.store import Store
from debugger.store.schema import LARGE_STATE_BYTES
from loaders import ImportOptions, import_source
from tests.fixtures.native import (
    effect_rows,
    native_rows,
    tool_call_rows,
    write_native_sqlite,
)

BIG = {"blob": "x" * (LARGE_STATE_BYTES + 10), "items": list(range(2000)), "tail": "é€"}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with three ordinary runs, a run with a large state and LangGraph-style -1 step."""
    d = tmp_path_factory.mktemp("api")
    rows = native_rows()
    base = dict(rows[0], run_id="lg", metadata=json.dumps({"agent": "graph"}))
    rows += [
        dict(base, step_index=-1, created_at="2026-11-02T09:00:00", working_state="{}"),
        dict(base, step_index=0, created_at="2026-11-02T09:00:01",
             working_state=json.dumps(BIG)),
        dict(base, step_index=1, created_at="2026-11-02T09:00:02",
             working_state=json.dumps({"small": True})),
    ]  # fmt: skip
    src = write_native_sqlite(d / "src.sqlite", rows, effect_rows(), tool_call_rows())
    with Store.open(d / "s.duckdb") as store:
        import_source(store, str(src), ImportOptions(batch_rows=4))  # several batches
    return d / "s.duckdb"


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    with debugger.open(store_path) as s:
        yield s


def test_runs_is_a_dataframe_newest_first(store: Store) -> None:
    runs = store.runs()
    assert isinstance(runs, pd.DataFrame)
    assert list(runs["run_id"]) == ["lg", "run-2", "run-1", "run-0"]
    assert {"run_id", "agent", "status", "status_reason", "first_step", "last_step",
            "checkpoint_count", "first_at", "last_at", "tokens_spent", "steps_spent",
            "wall_clock_ms", "model_versions", "last_error",
            "pending_count"} <= set(runs.columns)  # fmt: skip


def test_runs_filters(store: Store) -> None:
    assert list(store.runs(status="completed")["run_id"]) == ["run-0"]
    assert sorted(store.runs(status="completed,crashed")["run_id"]) == [
        "lg", "run-0", "run-1", "run-2"]  # fmt: skip
    assert list(store.runs(agent="graph")["run_id"]) == ["lg"]
    assert list(store.runs(text="RUN-1")["run_id"]) == ["run-1"]
    assert list(store.runs(text="in flight")["run_id"]) == ["run-1"]
    assert list(store.runs(since=datetime(2026, 11, 2))["run_id"]) == ["lg"]
    assert [r.run_id for r in store.run_records(status="completed")] == ["run-0"]


def test_run_record(store: Store) -> None:
    run = store.run("run-1")
    assert isinstance(run, Run)
    assert (run.status, run.first_step, run.last_step, run.checkpoint_count) == (
        "crashed", 0, 4, 5)  # fmt: skip
    assert run.model_versions == ["scripted-1", "scripted-2"]
    assert run.schema_versions == [3]
    assert run.first_at == datetime(2026, 11, 1, 10, 1, 0)
    with pytest.raises(NotFound, match="stepscope runs"):
        store.run("nope")


def test_timeline_is_a_dataframe_with_counts(store: Store) -> None:
    tl = store.timeline("run-1")
    assert isinstance(tl, pd.DataFrame)
    assert list(tl["step_index"]) == [0, 1, 2, 3, 4]
    assert list(tl["tokens_spent"]) == [0, 120, 240, 360, 480]
    assert list(tl["effects"]) == [0, 0, 2, 0, 1]  # the email twice, the refund once
    assert list(tl["open_effects"]) == [0, 0, 0, 0, 1]
    assert list(tl["pending_effects"]) == [0, 0, 0, 0, 1]
    assert list(tl["calls"]) == [2] * 5
    assert (tl["state_bytes"] > 0).all()
    assert tl["state_hash"].str.len().eq(32).all()


def test_checkpoint_by_step_by_id_and_head(store: Store) -> None:
    ckpt = store.checkpoint("run-0", 3)
    assert isinstance(ckpt, Checkpoint)
    assert ckpt.working_state == json.loads(native_rows()[3]["working_state"])
    assert ckpt.state_bytes == len(native_rows()[3]["working_state"].encode())
    assert store.checkpoint("run-0", checkpoint_id=ckpt.checkpoint_id) == ckpt
    head = store.checkpoint("run-0")
    assert head.step_index == 4 and head.metadata["status"] == "completed"
    assert [c.step_index for c in store.checkpoints("run-0")] == [0, 1, 2, 3, 4]
    with pytest.raises(NotFound, match="step 9"):
        store.checkpoint("run-0", 9)
    with pytest.raises(NotFound):
        store.checkpoint("run-0", checkpoint_id="nope")


def test_large_states_round_trip_through_the_side_table(store: Store) -> None:
    ckpt = store.checkpoint("lg", 0)
    assert ckpt.working_state == BIG
    assert ckpt.state_bytes == len(json.dumps(BIG).encode())
    con = store._con
    assert con.execute("SELECT count(*) FROM large_states").fetchone() == (1,)
    assert con.execute(
        "SELECT count(*) FROM checkpoint_rows WHERE working_state IS NULL"
    ).fetchone() == (1,)
    # the view SQL users query sees every state, large or not
    big = con.execute(
        "SELECT working_state->>'tail' FROM checkpoints WHERE run_id = 'lg' AND step_index = 0"
    ).fetchone()
    assert big == ("é€",)
    assert con.execute(
        "SELECT count(*) FROM checkpoints WHERE working_state IS NULL"
    ).fetchone() == (0,)
    assert [c.working_state == BIG for c in store.checkpoints("lg")] == [False, True, False]


def test_sql_runs_a_query_on_the_tables_sql_users_see(store: Store) -> None:
    assert store.sql("SELECT count(*) FROM checkpoints WHERE run_id = ?", ["run-0"]) == [(5,)]
    steps = store.sql("SELECT step_index FROM checkpoints WHERE run_id = 'run-0' ORDER BY 1")
    assert steps == [(c.step_index,) for c in store.checkpoints("run-0")]
    assert store.sql("SELECT run_id FROM runs WHERE run_id = 'nope'") == []


def test_sql_gives_a_failed_query_as_one_store_error_with_a_hint(store: Store) -> None:
    with pytest.raises(StoreError) as caught:
        store.sql("SELECT no_such_column FROM checkpoints")
    assert "no_such_column" in caught.value.message
    assert "\n" not in str(caught.value)
    assert "duckdb_tables()" in (caught.value.hint or "")


def test_negative_steps(store: Store) -> None:
    run = store.run("lg")
    assert (run.first_step, run.last_step) == (-1, 1)
    assert store.checkpoint("lg", -1).working_state == {}
    assert list(store.timeline("lg")["step_index"]) == [-1, 0, 1]


def test_effects_and_tool_calls(store: Store) -> None:
    effects = store.effects("run-1")
    assert [(e.step_index, e.tool, e.status) for e in effects] == [
        (2, "send_email", "committed"), (2, "send_email", "committed"),
        (4, "issue_refund", "unknown")]  # fmt: skip
    assert effects[2].args == {"order": "A-17", "amount": 42.5}
    calls = store.tool_calls("run-1", step=2)
    assert [(c.seq, c.kind, c.name) for c in calls] == [(5, "tool", "lookup_order"),
                                                         (6, "model", "scripted-1")]  # fmt: skip
    assert calls[0].response == {"ok": True, "usage": {"total_tokens": 60}}
    assert len(store.tool_calls("run-1")) == 10


def test_sources_and_quarantine(store: Store) -> None:
    sources = store.sources()
    assert list(sources["rows_read"]) == [18 + 5 + 30]
    assert list(sources["kind"]) == ["sqlite"] and list(sources["flavour"]) == ["native"]
    assert store.quarantine().empty


def test_rows_are_stored_in_step_order_whatever_the_batches(tmp_path: Path) -> None:
    # two thousand checkpoints without created_at: the write order is the source's order,
    # so model versions appear in order and the head is the last step
    rows = [dict(native_rows(1, 1)[0], step_index=s, created_at=None,
                 model_version="m-a" if s < 50 else "m-b") for s in range(2000)]  # fmt: skip
    src = write_native_sqlite(tmp_path / "n.sqlite", rows)
    with Store.open(tmp_path / "s.duckdb") as store:
        import_source(store, str(src))
        assert store.run("run-0").model_versions == ["m-a", "m-b"]
        assert [c.step_index for c in store.checkpoints("run-0")] == list(range(2000))
        assert store.checkpoint("run-0").step_index == 1999
