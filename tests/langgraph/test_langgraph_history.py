"""Every imported checkpoint matches what LangGraph's own get_state_history() says about it.

Each scenario of tests/langgraph/graphs.py is written by the real graph through SqliteSaver
and PostgresSaver (the ``written`` fixture runs every test on both) and imported once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from debugger.model import Checkpoint
from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.langgraph.decode import type_label
from tests.langgraph.conftest import Written
from tests.langgraph.expect import expected, same_state
from tests.langgraph.graphs import EXPECTED_STATUS

pytestmark = pytest.mark.postgres


def imported(w: Written, run_id: str) -> dict[str, Checkpoint]:
    with Store.open(w.store_path, read_only=True) as store:
        return {c.checkpoint_id: c for c in store.checkpoints(run_id)}


def check_history(got: dict[str, Checkpoint], want: list[dict[str, Any]]) -> None:
    assert set(got) == {e["checkpoint_id"] for e in want}
    for e in want:
        c = got[e["checkpoint_id"]]
        assert c.parent_id == e["parent_id"], e["checkpoint_id"]
        assert c.step_index == e["step"]
        assert same_state(c.working_state, e["values"]), (c.working_state, e["values"])
        assert sorted(c.metadata["next"]) == e["next"]


@pytest.mark.parametrize("thread", sorted(EXPECTED_STATUS))
def test_checkpoints_match_state_history(written: Written, thread: str) -> None:
    want = expected(written.graphs[thread], thread)
    assert want, "the scenario wrote no checkpoints"
    check_history(imported(written, thread), want)


@pytest.mark.parametrize("thread", sorted(EXPECTED_STATUS))
def test_run_status(written: Written, thread: str) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        assert store.run(thread).status == EXPECTED_STATUS[thread]


def test_import_counts_add_up(written: Written) -> None:
    total = written.report.total
    assert total.read == total.imported + total.updated + total.already_present + total.quarantined
    assert total.quarantined == 0
    assert written.report.flavour == "langgraph"


def test_subgraph_is_its_own_run(written: Written) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        runs = [r for r in store.runs()["run_id"] if r.startswith("subgraph/")]
        assert len(runs) == 1
        assert store.run(runs[0]).status == "completed"
    ns = runs[0].split("/", 1)[1]
    want = expected(written.graphs["subgraph"], "subgraph", ns)
    check_history(imported(written, runs[0]), want)
    # the subgraph's checkpoints point at the root checkpoint that ran it
    parents = {c.metadata["parents"].get("") for c in imported(written, runs[0]).values()}
    assert parents <= set(imported(written, "subgraph"))


def test_failed_node_gives_the_error(written: Written) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        run = store.run("raises")
        head = store.checkpoint("raises")
    assert run.last_error == "ValueError('b failed on n=1')"
    assert head.metadata["error"] == run.last_error
    assert head.metadata["next"] == ["b"]


def test_head_pending_writes_are_kept_not_in_flight(written: Written) -> None:
    # the task that wrote them finished: LangGraph applies them on resume, it does not rerun it
    with Store.open(written.store_path, read_only=True) as store:
        head = store.checkpoint("parallel-fail")
        run = store.run("parallel-fail")
    assert run.last_error == "RuntimeError('carrier API timed out')"
    writes = head.metadata["pending_writes"]
    assert [(w["channel"], w["value"]) for w in writes] == [("log", ["good"])]
    assert head.pending_effects == [] and run.pending_count == 0


def test_interrupt_parks_with_value_and_id(written: Written) -> None:
    graph = written.graphs["approval-parked"]
    cfg = {"configurable": {"thread_id": "approval-parked"}}
    interrupt = graph.get_state(cfg).interrupts[0]
    with Store.open(written.store_path, read_only=True) as store:
        head = store.checkpoint("approval-parked")
    assert head.metadata["status"] == "parked"
    assert head.metadata["interrupt"] == {"value": interrupt.value, "id": interrupt.id}


def test_resumed_interrupt_is_kept_as_history(written: Written) -> None:
    got = imported(written, "approval-resumed")
    resolved = [c for c in got.values() if "resolved_interrupts" in c.metadata]
    assert len(resolved) == 1
    assert resolved[0].metadata["resolved_interrupts"][0]["value"] == {
        "question": "refund?",
        "amount": 7,
    }
    assert resolved[0].metadata["resume"] == [True]


def test_fork_and_replay_are_branches(written: Written) -> None:
    got = imported(written, "fork")
    children: dict[str | None, int] = {}
    for c in got.values():
        children[c.parent_id] = children.get(c.parent_id, 0) + 1
    assert sum(1 for n in children.values() if n > 1) == 2  # update_state and the replay
    sources = {c.metadata["source"] for c in got.values()}
    assert {"input", "loop", "update", "fork"} <= sources


def test_send_fan_out(written: Written) -> None:
    got = imported(written, "send")
    head = max(got.values(), key=lambda c: c.step_index)
    assert sorted(head.working_state["results"]) == [1, 4, 9]
    first = min(got.values(), key=lambda c: c.step_index)
    sends = first.metadata["internal_channels"]["__start__"]
    assert sends["items"] == [1, 2, 3]


def test_rich_state_is_readable_json(written: Written) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        head = store.checkpoint("rich")
    ws = head.working_state
    assert ws["ticket"]["__type__"] == "pydantic:tests.langgraph.graphs.Ticket"
    assert type_label(ws["ticket"]) == "Ticket (pydantic)"
    assert ws["ticket"]["opened"] == "2026-11-01T09:30:00+00:00"
    assert ws["ticket"]["priority"] == {
        "__type__": "enum:tests.langgraph.graphs.Priority",
        "value": "low",
    }
    assert type_label(ws["customer"]) == "Customer (dataclass)"
    assert ws["due"] == "2026-11-01T09:30:00+00:00"
    assert ws["tags"] == ["refund", "vip"]
    assert [m["type"] for m in ws["messages"]] == ["human", "ai", "tool", "ai"]


def test_tokens_model_and_tool_tape(written: Written) -> None:
    with Store.open(written.store_path, read_only=True) as store:
        head = store.checkpoint("rich")
        calls = store.tool_calls("rich")
        run = store.run("rich")
    assert head.budgets.tokens_spent == 140 + 230
    assert run.budgets.tokens_spent == 370
    assert head.model_version == "gpt-test-1"
    assert run.model_versions == ["gpt-test-1"]
    assert [(c.seq, c.kind, c.name) for c in calls] == [
        (0, "model", "gpt-test-1"),
        (1, "tool", "lookup_order"),
        (2, "model", "gpt-test-1"),
    ]
    assert calls[1].request == {"order": "A-17"}
    assert calls[1].response == '{"status": "shipped"}'


def test_answered_tool_call_is_never_pending(written: Written) -> None:
    # the checkpoint that asked for the call has a child that answered it: not in flight
    got = imported(written, "rich")
    waiting = [c for c in got.values() if c.metadata["next"] == ["tools"]]
    assert len(waiting) == 1
    assert all(c.pending_effects == [] for c in got.values())


def test_internal_channels_hidden_but_kept(written: Written) -> None:
    got = imported(written, "linear")
    for c in got.values():
        assert not any(k.startswith(("branch:", "__")) for k in c.working_state)
    inputs = [c for c in got.values() if c.metadata["source"] == "input"]
    assert inputs[0].metadata["internal_channels"]["__start__"] == {"n": 0, "log": []}


def test_budgets_steps_and_clock(written: Written) -> None:
    got = sorted(imported(written, "linear").values(), key=lambda c: c.step_index)
    assert [c.budgets.steps_spent for c in got] == [0, 0, 1, 2, 3]
    clocks = [c.budgets.wall_clock_ms for c in got]
    assert clocks[0] == 0
    assert clocks == sorted(clocks)


def test_reimport_adds_nothing(written: Written, tmp_path: Any) -> None:
    from loaders import import_source

    with Store.open(written.store_path) as store:
        report = import_source(store, written.source)
    total = report.total
    assert total.imported == 0
    assert total.read == total.already_present == written.report.total.read


def test_given_state_hashes_are_the_stored_texts(written: Written) -> None:
    """The walk hashes each state's text itself (contract.GIVEN_STATE_HASH): the hash must be
    the one the store computes for the text it keeps, or stepping would miss the cache."""
    import duckdb

    from debugger.store import state_hash

    con = duckdb.connect(str(written.store_path), read_only=True)
    try:
        rows = con.execute(
            "SELECT CAST(working_state AS VARCHAR), state_hash FROM checkpoints"
        ).fetchall()
    finally:
        con.close()
    assert rows
    assert all(state_hash.of_text(text) == digest for text, digest in rows)


def test_small_batches_store_the_same_rows(tmp_path: Path) -> None:
    """``batch_rows`` bounds the walk's batches too (a power of two, at most 1,024), and
    splitting a run across batches changes nothing stored."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class Loop(TypedDict):
        n: int

    g: Any = StateGraph(Loop)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 150 else END)
    path = tmp_path / "loop.sqlite"
    con = sqlite3.connect(path, check_same_thread=False)
    g.compile(checkpointer=SqliteSaver(con)).invoke(
        {"n": 0}, {"configurable": {"thread_id": "loop"}, "recursion_limit": 200}
    )
    con.close()

    def rows(batch_rows: int) -> tuple[list[int], list[tuple[object, ...]]]:
        seen: list[int] = []
        with Store.open(tmp_path / f"s{batch_rows}.duckdb") as store:
            options = ImportOptions(
                batch_rows=batch_rows,
                progress=lambda t, n, total: seen.append(n) if t == "checkpoints" else None,
            )
            import_source(store, str(path), options)
            stored = store.sql(
                "SELECT run_id, checkpoint_id, parent_id, step_index, working_state, metadata, "
                "pending_effects FROM checkpoints ORDER BY checkpoint_id"
            )
        return seen, stored

    small_batches, small = rows(100)
    whole_batches, whole = rows(16_384)
    assert small == whole and len(whole) == 152
    assert small_batches == [64, 128, 152] and whole_batches == [152]
