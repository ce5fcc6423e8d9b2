"""A stored LangGraph checkpoint, restored in the replay's saver, is what LangGraph restores:
the same Python objects, the same next nodes, the same task ids (checked against the
graph's own ``get_state`` at every checkpoint of real runs)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pydantic
import pytest
from langgraph.graph import END, START, StateGraph

from debugger.replay.graph.original import start_input
from debugger.replay.graph.restore import replay_saver, restore
from debugger.replay.graph.revive import encode
from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.patterns_model import cfg, postgres_saver, sqlite_saver


class Priority(enum.Enum):
    HIGH = "high"
    LOW = "low"


class Ticket(pydantic.BaseModel):
    ticket_id: str
    amount_cents: int
    opened: datetime


@dataclasses.dataclass
class Customer:
    name: str
    tags: set[str]


class Typed(TypedDict):
    ticket: Ticket
    customer: Customer
    priority: Priority
    due: datetime
    seen: set[str]
    note: str


def typed_run(saver: Any) -> dict[str, Any]:
    """A state of a pydantic model, a dataclass, an enum, a datetime and a set."""
    when = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
    g: Any = StateGraph(Typed)
    g.add_node("triage", lambda s: {"priority": Priority.HIGH, "seen": {"triage", "intake"}})
    g.add_node("note", lambda s: {"note": f"{s['ticket'].ticket_id} {s['priority'].value}"})
    g.add_edge(START, "triage")
    g.add_edge("triage", "note")
    g.add_edge("note", END)
    graph = g.compile(checkpointer=saver)
    graph.invoke({"ticket": Ticket(ticket_id="T-1", amount_cents=4200, opened=when),
                  "customer": Customer("Ada", {"vip"}), "priority": Priority.LOW, "due": when,
                  "seen": set(), "note": ""}, cfg("typed"))  # fmt: skip
    return {"typed": graph}


PATTERNS: list[Callable[[Any], dict[str, Any]]] = [
    typed_run, T.react_clean, T.react_keyed_crash, T.send_tokens, T.subgraph_tokens,
    T.tool_answered_in_failed_step, P.two_questions, P.parallel_questions, P.join_crash,
    P.breakpoint_before,
]  # fmt: skip


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.__name__)
def test_every_checkpoint_restores_as_langgraph_has_it(
    pattern: Callable[[Any], dict[str, Any]], tmp_path: Path
) -> None:
    source, store = tmp_path / "lg.sqlite", tmp_path / "s.duckdb"
    with sqlite_saver(source) as saver:
        graphs = pattern(saver)
        with Store.open(store) as s:
            import_source(s, str(source), ImportOptions())
            for thread, graph in graphs.items():
                checkpoints = s.checkpoints(thread)
                assert checkpoints
                for c in checkpoints:
                    _check(graph, thread, c)


@pytest.mark.postgres
@pytest.mark.parametrize(
    "pattern",
    [typed_run, T.react_keyed_crash, T.send_tokens, P.two_questions],
    ids=lambda p: p.__name__,
)
def test_a_postgres_saver_run_restores_the_same(
    pattern: Callable[[Any], dict[str, Any]], pg_server: Any, tmp_path: Path
) -> None:
    url, store = pg_server.create_database("replay_restore"), tmp_path / "s.duckdb"
    with postgres_saver(url) as saver:
        graphs = pattern(saver)
        with Store.open(store) as s:
            import_source(s, url, ImportOptions())
            for thread, graph in graphs.items():
                for c in s.checkpoints(thread):
                    _check(graph, thread, c)


def _check(graph: Any, thread: str, c: Any) -> None:
    saver = replay_saver()
    mine = graph.copy(update={"checkpointer": saver})
    config = restore(mine, saver, "replay", start_input(c))
    got = mine.get_state(config)
    want = graph.get_state({"configurable": {"thread_id": thread, "checkpoint_ns": "",
                                             "checkpoint_id": c.checkpoint_id}})  # fmt: skip
    where = f"{thread} step {c.step_index}"
    assert got.values == want.values, where
    assert {k: type(v) for k, v in got.values.items()} == {
        k: type(v) for k, v in want.values.items()}, where  # fmt: skip
    # LangGraph's tasks of the step, a finished one too (its writes are taken, not rerun)
    assert sorted(got.next) == sorted(want.next), where
    assert set(c.metadata["next"]) <= set(got.next), where
    # task ids derive from the checkpoint id: the replay's tasks are the original's
    assert {t.id for t in got.tasks} <= {t.id for t in want.tasks}, where
    assert encode(got.values) == encode(want.values), where
    head = graph.get_state({"configurable": {"thread_id": thread}})
    if c.checkpoint_id == head.config["configurable"]["checkpoint_id"]:
        # as the run stands (the finished tasks' writes applied), what a resume starts from
        live = mine.get_state({"configurable": {"thread_id": "replay"}})
        assert sorted(live.next) == sorted(head.next) == sorted(c.metadata["next"]), where
        known = {m.get("id") for m in (c.working_state or {}).get("messages") or []}
        assert _new_ids_out(encode(live.values), known) == _new_ids_out(
            encode(head.values), known
        ), where


def _new_ids_out(values: Any, known: set[Any]) -> Any:
    """``values`` with the ids of messages the pending writes added left out: a write of a
    message without an id gets a new random one each time LangGraph applies it."""
    messages = values.get("messages") if isinstance(values, dict) else None
    if not isinstance(messages, list):
        return values
    out = [{k: v for k, v in m.items() if k != "id" or v in known} for m in messages]
    return {**values, "messages": out}
