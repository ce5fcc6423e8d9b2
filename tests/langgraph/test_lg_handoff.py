"""A multi-agent handoff (``Command(graph=Command.PARENT)``) imported from the real
package's databases (tests/langgraph/handoff.py, on SqliteSaver and PostgresSaver)."""

from __future__ import annotations

import pytest

from debugger.audit import audit_run
from debugger.store import Store
from tests.langgraph.conftest import Written
from tests.langgraph.expect import expected
from tests.langgraph.test_langgraph_history import check_history, imported

pytestmark = pytest.mark.postgres


def _agent_run(w: Written, agent: str) -> str:
    with Store.open(w.store_path, read_only=True) as store:
        [run] = [r for r in store.runs()["run_id"] if r.startswith(f"handoff/{agent}:")]
    return str(run)


@pytest.mark.parametrize("agent", ["triage", "refunds"])
def test_each_agent_is_a_run_matching_its_history(written: Written, agent: str) -> None:
    run = _agent_run(written, agent)
    check_history(imported(written, run), expected(written.graphs["handoff"], "handoff",
                                                   run.split("/", 1)[1]))  # fmt: skip


def test_the_agent_that_handed_over_completed(written: Written) -> None:
    """Its tool node raised the command out of the subgraph: its last checkpoint still has
    ``tools`` due and no write, as LangGraph's history shows; the parent's task that ran it
    finished. Not a run that stopped before a node, nor a call in flight."""
    run = _agent_run(written, "triage")
    with Store.open(written.store_path, read_only=True) as store:
        record = store.run(run)
        head = store.checkpoint(run)
        report = audit_run(store, run)
    assert head.metadata["next"] == ["tools"]
    assert record.status == "completed"
    assert record.status_reason == (
        "node tools at step 1 handed control to the parent graph (Command(graph=Command.PARENT)):"
        " the parent's task that ran this subgraph finished"
    )
    assert head.pending_effects == []
    assert report.verdict == "completed"
    assert not [f for f in report.findings if f.severity == "error"]


def test_each_agent_counts_the_tokens_it_spent(written: Written) -> None:
    """The refunds agent's input holds the triage agent's answer (the handoff passes the
    conversation on): that is triage's spend, not its own; the thread counts each once."""
    with Store.open(written.store_path, read_only=True) as store:
        root = store.run("handoff")
        triage = store.run(_agent_run(written, "triage"))
        refunds = store.run(_agent_run(written, "refunds"))
        [_, given, *_] = store.checkpoints(refunds.run_id)  # the input, and it applied
    assert root.status == refunds.status == "completed"
    assert "triage-ai-0" in [m["id"] for m in given.working_state["messages"]]
    assert given.budgets.tokens_spent == 0
    assert (triage.budgets.tokens_spent, refunds.budgets.tokens_spent) == (50, 60 + 70)
    # each agent's run is named after its node (the graph's root names none)
    assert (root.agent, triage.agent, refunds.agent) == (None, "triage", "refunds")
    assert root.budgets.tokens_spent == 50 + 60 + 70
