"""The audit on LangGraph histories (SqliteSaver): every run audited, the contract gaps named
as LangGraph can close them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from debugger.audit import audit_store
from debugger.store import Store
from loaders import ImportOptions, import_source


def test_langgraph_runs_are_audited(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.langgraph.graphs import write_all

    source = tmp_path / "lg.sqlite"
    con = sqlite3.connect(source, check_same_thread=False)
    write_all(SqliteSaver(con))
    con.close()
    with Store.open(tmp_path / "lg.duckdb") as store:
        import_source(store, str(source), ImportOptions())
        reports = {r.run_id: r for r in audit_store(store)}
    # LangGraph has no place for a state-schema version or tool versions: warnings, not errors
    for report in reports.values():
        gaps = {f.rule_id: f.severity for f in report.findings if f.rule_id.startswith("missing-")}
        assert gaps == {"missing-schema-version": "warning", "missing-run-metadata": "warning"}
    # a failed node is retried after its cause is fixed; nothing makes it a restart
    assert reports["raises"].verdict == "resumable_after_checks"
    # update_state and a replay from an old checkpoint are forks made on purpose, not repeats
    fork = {f.rule_id for f in reports["fork"].findings}
    assert "fork" in fork and not {"step-repeated", "step-backwards"} & fork
    assert reports["fork"].branches
    # the write the finished task left is applied by LangGraph on resume: not in doubt
    assert "pending-effect-without-key" not in {
        f.rule_id for f in reports["parallel-fail"].findings
    }
