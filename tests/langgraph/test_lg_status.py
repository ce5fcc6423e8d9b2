"""Statuses and ``next`` of LangGraph runs (issue 16, section 1), against LangGraph's own view.

Every pattern a-k is written by the real ``langgraph`` into one database per saver and
imported once; each test compares what the store says of a thread with what ``get_state``
and ``get_state_history`` say of it (``patterns.says``), never with a literal guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debugger.audit import audit_run
from debugger.model import Checkpoint, Run
from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.langgraph.map import is_internal
from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.patterns_model import postgres_saver, sqlite_saver

BUILDERS: tuple[Callable[[Any], dict[str, Any]], ...] = (
    P.breakpoint_before, P.breakpoint_after, P.two_questions, P.parallel_questions,
    P.join_crash, P.retried, P.recursion, T.subgraph_tokens, T.subgraph_private_tokens,
    T.send_tokens, T.trimmed, T.react_clean, T.react_keyed_crash, T.fork_edited_call,
    T.tool_answered_in_failed_step,
)  # fmt: skip
THREADS = ("bp-before", "bp-after", "two-questions", "parallel-questions", "join-crash",
           "retry-ok", "retry-failed", "recursion", "subgraph-tokens", "subgraph-private",
           "send-tokens", "trimmed", "react-clean", "react-keyed-crash", "fork-edited",
           "failed-step-tool")  # fmt: skip


@dataclass
class Imported:
    """LangGraph's view of every pattern thread, and the store the database went into."""

    says: dict[str, dict[str, Any]]
    store: Path


def _build(
    opened: Any, source: str, store: Path, builders: tuple[Callable[[Any], Any], ...] = BUILDERS
) -> Imported:
    with opened as saver:
        says = {t: P.says(g, t) for b in builders for t, g in b(saver).items()}
    with Store.open(store) as st:
        import_source(st, source, ImportOptions())
    return Imported(says, store)


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def imported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    """Every pattern written by one saver and imported into a fresh store."""
    base = tmp_path_factory.mktemp(f"lgstatus-{request.param}")
    if request.param == "sqlite":
        path = base / "lg.sqlite"
        return _build(sqlite_saver(path), str(path), base / "s.duckdb")
    url = request.getfixturevalue("pg_server").create_database("lgstatus")
    return _build(postgres_saver(url), url, base / "s.duckdb")


@pytest.fixture(scope="module")
def store(imported: Imported) -> Iterator[Store]:
    with Store.open(imported.store, read_only=True) as st:
        yield st


def _head(store: Store, run: Run) -> Checkpoint:
    return max(store.checkpoints(run.run_id), key=lambda c: (c.created_at, c.step_index))


def expected_status(head: dict[str, Any]) -> tuple[str, str | None]:
    """The status LangGraph's head implies, with the error it reports (if any)."""
    errors = [t["error"] for t in head["tasks"] if t["error"]]
    if errors:
        return "failed", errors[0]
    if any(t["interrupts"] for t in head["tasks"]):
        return "parked", None
    return ("completed", None) if not head["next"] else ("parked", None)


@pytest.mark.parametrize("thread", THREADS)
def test_head_next_is_langgraphs(imported: Imported, store: Store, thread: str) -> None:
    head = _head(store, store.run(thread))
    assert head.metadata["next"] == list(imported.says[thread]["head"]["next"])


@pytest.mark.parametrize("thread", THREADS)
def test_history_next_is_langgraphs(imported: Imported, store: Store, thread: str) -> None:
    """Every checkpoint that has a child lists the tasks of its superstep, in LangGraph's order."""
    by_id = {c.checkpoint_id: c for c in store.checkpoints(thread)}
    head_id = imported.says[thread]["head"]["checkpoint_id"]
    for snap in imported.says[thread]["history"]:
        if snap["checkpoint_id"] != head_id:
            assert by_id[snap["checkpoint_id"]].metadata["next"] == list(snap["next"]), snap


@pytest.mark.parametrize("thread", THREADS)
def test_status_is_what_langgraph_implies(imported: Imported, store: Store, thread: str) -> None:
    head = imported.says[thread]["head"]
    run = store.run(thread)
    status, error = expected_status(head)
    assert run.status == status
    assert run.last_error == error
    if status == "parked" and not any(t["interrupts"] for t in head["tasks"]):
        # a breakpoint, a recursion limit or a stopped process: the node is named
        assert f"paused before node {', '.join(head['next'])} at step {head['step']}" in (
            run.status_reason
        )


@pytest.mark.parametrize("thread", ["two-questions", "parallel-questions"])
def test_parked_on_the_open_question(imported: Imported, store: Store, thread: str) -> None:
    """The open interrupt is the one LangGraph's head task still holds; none is called answered."""
    head = imported.says[thread]["head"]
    open_q = [i for t in head["tasks"] for i in t["interrupts"]]
    assert len(open_q) == 1
    md = _head(store, store.run(thread)).metadata
    assert md["interrupt"] == {"value": open_q[0]["value"], "id": open_q[0]["id"]}
    resolved = [i["id"] for i in md.get("resolved_interrupts", [])]
    assert open_q[0]["id"] not in resolved
    assert str(open_q[0]["value"]["question"]) in store.run(thread).status_reason


@pytest.mark.parametrize("thread", THREADS)
def test_no_internal_channel_in_state(store: Store, thread: str) -> None:
    for c in store.checkpoints(thread):
        state = c.working_state if isinstance(c.working_state, dict) else {}
        assert not [k for k in state if is_internal(k)], c.checkpoint_id
        assert not [k for k in state if k.startswith(("join:", "branch:"))]


def retried_through_a_fork(saver: Any) -> dict[str, Any]:
    """A node fails; ``update_state`` on the failed head forks it, ``invoke(None)`` recovers."""
    graph = P._flaky_graph(saver, 1)
    c = {"configurable": {"thread_id": "retry-fork"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"log": []}, c)
    graph.update_state(c, {"log": ["fixed by hand"]})
    graph.invoke(None, c)
    return {"retry-fork": graph}


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_error_retried_past_is_the_last_error(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """LangGraph still shows the error on the forked checkpoint: so does ``last_error``."""
    if kind == "sqlite":
        source = str(tmp_path / "lg.sqlite")
        opened = sqlite_saver(source)
    else:
        source = request.getfixturevalue("pg_server").create_database("lgfork")
        opened = postgres_saver(source)
    got = _build(opened, source, tmp_path / "s.duckdb", (retried_through_a_fork,))
    says = got.says["retry-fork"]
    errors = [t["error"] for s in says["history"] for t in s["tasks"] if t["error"]]
    assert says["head"]["next"] == () and len(errors) == 1
    with Store.open(got.store, read_only=True) as st:
        run = st.run("retry-fork")
    assert run.status == "completed" and run.last_error == errors[0]


def test_a_question_in_a_prebuilt_agent_s_tool_names_the_tools_node(tmp_path: Path) -> None:
    """Human in the loop as LangGraph's documentation does it: ``interrupt()`` inside a tool
    of the prebuilt agent, whose tool calls run as ``Send`` tasks (``push:0`` in the
    writes' path): the reason names the node they start, as ``get_state`` does."""
    import warnings

    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph.types import interrupt

    from tests.langgraph.patterns_model import ScriptedModel, ai, cfg

    @tool
    def issue_refund(order: str, amount: int) -> str:
        """Refund an order once a person approves."""
        return "refunded" if interrupt({"question": f"refund {amount} on {order}?"}) else "no"

    call = {"name": "issue_refund", "args": {"order": "A-1", "amount": 42}, "id": "call-1"}
    with sqlite_saver(tmp_path / "lg.sqlite") as saver:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent moved to langchain in 1.0
            from langgraph.prebuilt import create_react_agent

            graph: Any = create_react_agent(ScriptedModel(script=[ai("ai-0", "", [call], 80)]),
                                            [issue_refund], checkpointer=saver)  # fmt: skip
        graph.invoke({"messages": [HumanMessage("refund A-1", id="u-1")]}, cfg("hitl"))
        [task] = graph.get_state(cfg("hitl")).tasks
    assert task.name == "tools" and task.interrupts
    with Store.open(tmp_path / "s.duckdb") as s:
        import_source(s, str(tmp_path / "lg.sqlite"), ImportOptions())
        run = s.run("hitl")
        report = audit_run(s, "hitl")
    # the call waits for its answer: nothing of it is in doubt; resuming runs the tool again
    # from its start, which the audit asks to check (the tool has no key)
    assert report.verdict == "resumable_after_checks"
    [keyless] = [f for f in report.findings if f.rule_id == "pending-effect-without-key"]
    assert keyless.severity == "warning"
    assert report.reasons[0] == (
        'make sure issue_refund {"order":"A-1","amount":42} does nothing before it asks: '
        "resuming runs it from its start"
    )
    assert run.status == "parked"
    assert run.status_reason == (
        "interrupt() in node tools waits for an answer (Command(resume=...)): "
        '{"question":"refund 42 on A-1?"}'
    )
