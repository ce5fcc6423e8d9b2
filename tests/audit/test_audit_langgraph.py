"""The audit on LangGraph histories (SqliteSaver): every run audited, the contract gaps named."""

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
    # LangGraph checkpoints carry no state-schema version and no model or tool versions
    for report in reports.values():
        assert {"missing-schema-version", "missing-run-metadata"} <= {
            f.rule_id for f in report.findings
        }
    assert reports["raises"].verdict == "restart_required"
    fork = {f.rule_id for f in reports["fork"].findings}
    assert {"fork", "step-repeated", "step-backwards"} <= fork and reports["fork"].branches
    pending = [f for f in reports["parallel-fail"].findings
               if f.rule_id == "pending-effect-without-key"]  # fmt: skip
    # the good sibling finished: its write is applied on resume, not run again (not in flight)
    assert pending == []
