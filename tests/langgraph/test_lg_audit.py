"""The audit on LangGraph runs (issue 16, section 5), on SqliteSaver and PostgresSaver.

Every pattern is written by the real ``langgraph``, imported, and audited through the Store;
what is asserted is checked against LangGraph's own view (``patterns.says``: the head's next,
tasks and interrupts, the history's sources).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from debugger.audit import audit_records, audit_run
from debugger.model import AuditReport
from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph import graphs as G
from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.lg_import import open_saver


def versioned(saver: Any) -> dict[str, Any]:
    """A run whose config records a schema version, as the audit's hint says to."""
    graph = G._linear_graph(saver)
    config = {"configurable": {"thread_id": "versioned"}, "metadata": {"schema_version": 2}}
    graph.invoke({"n": 0, "log": []}, config)
    return {"versioned": graph}


BUILDERS = (T.react_clean, T.react_keyed_crash, T.fork_edited_call,
            T.tool_answered_in_failed_step, G.fork, G.approval, P.parallel_questions,
            versioned)  # fmt: skip


class Written:
    """One database holding every pattern, imported once; LangGraph's view of each thread."""

    def __init__(self, store: Store, says: dict[str, dict[str, Any]]) -> None:
        self.store = store
        self.says = says

    def audit(self, thread: str) -> AuditReport:
        return audit_run(self.store, thread)


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def lg(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Written]:
    base = tmp_path_factory.mktemp(f"lg-audit-{request.param}")
    source, opened = open_saver(request, base, "lgaudit")
    with opened as saver:
        says = {t: P.says(g, t) for b in BUILDERS for t, g in b(saver).items()}
    with Store.open(base / "store.duckdb") as store:
        import_source(store, source, ImportOptions())
        yield Written(store, says)


def _rules(report: AuditReport, severity: str | None = None) -> set[str]:
    return {f.rule_id for f in report.findings if severity in (None, f.severity)}


def test_the_store_knows_the_runtime(lg: Written) -> None:
    assert lg.store.run_flavour("react-clean") == "langgraph"
    assert lg.store.run_flavour("no-such-run") is None


def test_clean_react_run_audits_without_error(lg: Written) -> None:
    assert lg.says["react-clean"]["head"]["next"] == ()
    report = lg.audit("react-clean")
    assert report.verdict == "completed" and _rules(report, "error") == set()
    # what LangGraph cannot carry is named as a warning, with where to record it
    warned = {f.rule_id: f for f in report.findings if f.severity == "warning"}
    assert {"missing-schema-version", "missing-run-metadata"} <= set(warned)
    assert '"schema_version"' in warned["missing-schema-version"].hint
    # the answered lookup (LangGraph: a tool message answers call-1) is not pending
    answered = [m["tool_call_id"] for m in lg.says["react-clean"]["head"]["messages"]
                if m["type"] == "tool"]  # fmt: skip
    assert answered == ["call-1"] and "pending-effect-without-key" not in _rules(report)


def test_the_hinted_schema_version_is_read(lg: Written) -> None:
    graph_says = lg.says["versioned"]["history"]
    assert graph_says and lg.says["versioned"]["head"]["next"] == ()
    report = lg.audit("versioned")
    assert "missing-schema-version" not in _rules(report)
    assert {c.schema_version for c in lg.store.checkpoints("versioned")} == {2}


def test_keyed_unanswered_call_names_its_key(lg: Written) -> None:
    head = lg.says["react-keyed-crash"]["head"]
    assert head["next"] == ("tools",) and head["tasks"][0]["error"]
    report = lg.audit("react-keyed-crash")
    assert "pending-effect-without-key" not in _rules(report)
    assert report.verdict == "resumable_after_checks"
    assert [(c.idempotency_key, c.tool, c.status) for c in report.verify_effects] == [
        ("refund-A-2-30", "refund", "unknown")
    ]
    assert any("by key refund-A-2-30" in r for r in report.reasons)
    unknown = [f for f in report.findings if f.rule_id == "effect-outcome-unknown"]
    assert unknown and "look up key refund-A-2-30" in unknown[0].hint


def test_update_state_on_the_head_is_history(lg: Written) -> None:
    sources = [s["source"] for s in reversed(lg.says["fork-edited"]["history"])]
    assert "update" in sources
    report = lg.audit("fork-edited")
    assert report.verdict == "completed" and _rules(report, "error") == set()
    forks = [f for f in report.findings if f.rule_id == "fork"]
    assert [f.step_index for f in forks] == [sources.index("update") - 1]
    assert "update_state" in forks[0].message


def test_time_travel_is_not_a_repeated_step(lg: Written) -> None:
    sources = {s["source"] for s in lg.says["fork"]["history"]}
    assert {"update", "fork"} <= sources
    report = lg.audit("fork")
    assert not {"step-repeated", "step-backwards"} & _rules(report)
    assert _rules(report, "error") == set()
    forks = [f for f in report.findings if f.rule_id == "fork"]
    # the replay on the head's path, and the two branches left off it
    assert len(forks) == 3 and len(report.branches) == 2
    assert any("metadata.source fork" in f.message for f in forks)


def test_pending_writes_of_finished_tasks_are_not_in_doubt(lg: Written) -> None:
    head = lg.says["failed-step-tool"]["head"]
    assert sorted((t["name"], t["error"] is not None) for t in head["tasks"]) == [
        ("boom", True), ("tools", False)
    ]  # fmt: skip
    report = lg.audit("failed-step-tool")
    keyless = [f for f in report.findings if f.rule_id == "pending-effect-without-key"]
    assert not any("write to" in f.message for f in keyless)
    parallel = lg.audit("parallel-questions")
    assert "pending-effect-without-key" not in _rules(parallel)


def test_parked_run_says_how_it_resumes(lg: Written) -> None:
    head = lg.says["approval-parked"]["head"]
    (task,) = head["tasks"]
    (ask,) = task["interrupts"]
    report = lg.audit("approval-parked")
    assert report.verdict == "resumable_after_checks"
    how = [r for r in report.reasons if "Command(resume=" in r]
    assert how and ask["value"]["question"] in how[0] and '"approval-parked"' in how[0]
    done = lg.audit("approval-resumed")
    assert done.verdict == "completed" and _rules(done, "error") == set()


def test_the_runtime_decides_what_is_an_error(lg: Written) -> None:
    # the same records held to the native runtime's contract: the gaps are errors again
    records = (lg.store.checkpoints("fork"), lg.store.effects("fork"), lg.store.tool_calls("fork"))
    native = audit_records("fork", *records, runtime="native")
    assert {"missing-schema-version", "step-repeated"} <= _rules(native, "error")
    told = audit_records("fork", *records)  # no flavour: told from metadata.langgraph
    assert _rules(told, "error") == set()
