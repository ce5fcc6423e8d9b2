"""The pages' plain data (no Streamlit): replay report pieces, the Runs filters in words,
the Import page's progress and rows, the Timeline's URL and navigator labels."""

from __future__ import annotations

import html
import sqlite3
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from debugger.errors import StepscopeError
from debugger.model import Budgets, ImportReport, Run, TableCounts
from debugger.pages_data import fork_tree, replay, run_list, runs, timeline
from debugger.pages_data.imports import app_hint, progress, reason_rows, table_rows
from debugger.pages_data.timeline import StepRef
from debugger.store import Store
from loaders import ImportOptions, import_source


def _run(run_id: str, **overrides: Any) -> Run:
    fields: dict[str, Any] = dict(
        run_id=run_id, agent="desk", status="failed", status_reason="an error", first_step=0,
        last_step=3, checkpoint_count=4, first_at=None, last_at=None,
        budgets=Budgets(1200, 3, 4500), limits={}, model_versions=["m-1"],
        schema_versions=[1], last_error="boom", pending_count=0,
    )  # fmt: skip
    fields.update(overrides)
    return Run(**fields)


def _report(**overrides: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "run_id": "orig", "replay_run_id": "orig~r1", "from_step": 4, "last_step": 7,
        "outcome": "completed", "reason": "the agent finished", "diverged": False,
        "steps": [
            {"step_index": 5, "original_checkpoint_id": "o5", "replay_checkpoint_id": "r5"},
            {"step_index": 6, "original_checkpoint_id": None, "replay_checkpoint_id": "r6"},
        ],
        "divergences": [], "duplicate_writes": [], "violations": [], "missing_writes": [],
        "ledger": [],
    }  # fmt: skip
    report.update(overrides)
    return report


def test_replay_headline_tone_follows_the_outcome() -> None:
    assert replay.headline(_report()) == ("**completed**: the agent finished", "success")
    fixed = replay.headline(_report(diverged=True))  # a fix behaves differently: expected
    assert fixed[1] == "success" and "diverged from the original" in fixed[0]
    assert "as a fix is expected to" in fixed[0]
    assert replay.headline(_report(outcome="diverged"))[1] == "warning"
    assert replay.headline(_report(outcome="parked"))[1] == "warning"
    assert replay.headline(_report(outcome="failed", reason="boom")) == (
        "**failed**: boom",
        "error",
    )


def test_replay_step_links_fall_back_to_steps_both_runs_have() -> None:
    both = replay.step_links(_report(), 5)
    assert [link.url for link in both] == ["diff", "timeline", "timeline"]
    assert both[0].query == {"a": "orig:5", "b": "orig~r1:5"}
    assert both[2].query == {"run": "orig~r1", "step": "7"}
    only_replay = replay.step_links(_report(), 6)[0]
    assert only_replay.label == "Diff original step 5 / replay step 6"
    neither = replay.step_links(_report(), 9)[0]
    assert neither.query == {"a": "orig:8", "b": "orig~r1:8"}
    assert replay.query_string({"a": "x:1", "b": "y:2"}) == "?a=x:1&b=y:2"


def test_replay_tables_leave_out_the_empty_ones_and_trim_divergences() -> None:
    divergence = {"step_index": 5, "kind": "state", "message": "m", "diff": [{"path": "p"}]}
    tables = replay.report_tables(_report(divergences=[divergence]))
    assert list(tables) == ["Aligned steps", "All divergences"]
    assert tables["All divergences"] == [{"step_index": 5, "kind": "state", "message": "m"}]
    assert replay.counts(_report(divergences=[divergence]))["Divergences"] == 1


def test_replay_duplicate_messages_name_who_would_repeat_the_write() -> None:
    dup = {"tool": "refund", "step_index": 6, "idempotency_key": "k-1", "original_step": 5,
           "original_status": "committed"}  # fmt: skip
    mine = replay.duplicate_messages(_report(duplicate_writes=[dup]))
    base = replay.duplicate_messages(_report(duplicate_writes=[dup]), baseline=True)
    assert [html.unescape(m) for m in mine] == [
        "In production this code would have sent a **duplicate refund** at step 6 (key "
        "k-1): the original already made it at step 5 (status committed)."
    ]
    assert base[0].startswith("The original code would") and "the original run already" in base[0]


def test_replay_inputs_runs_and_baseline() -> None:
    sample, other = _run("a", agent="refund_desk"), _run("b", agent="desk")
    assert replay.suggested_inputs(sample)["replay_agent"].endswith(":fixed_agent")
    assert replay.suggested_inputs(other) == {}
    copy = _run("a~r1", replay_of="a", replay_from_step=2)
    assert replay.originals([sample, copy]) == [sample]
    assert replay.replay_ids([sample, copy]) == ["a~r1"]
    assert replay.split_baseline({"agent": "m:a", "baseline": "m:a"}) == ({"agent": "m:a"}, None)
    assert replay.split_baseline({"agent": "m:a", "baseline": "m:b"})[1] == "m:b"


def test_runs_filters_and_their_caption() -> None:
    filters = runs.run_filters(["failed", "parked"], "desk", "boom", (date(2026, 3, 1),))
    assert filters["status"] == "failed,parked" and filters["agent"] == "desk"
    assert filters["since"] == datetime(2026, 3, 1)
    assert filters["until"] == datetime(2026, 3, 1, 23, 59, 59, 999999)
    assert runs.described(filters) == (
        "Filtered by status failed, parked; agent desk; matching “boom”; "
        "last checkpoint 2026-03-01 to 2026-03-01. "
    )
    none = runs.run_filters([], runs.ANY_AGENT, "", ())
    assert set(none.values()) == {None} and runs.described(none) == ""
    assert runs.range_caption(1, 3, 120, 50) == "Runs 51–100 of 120 (page 2 of 3)"
    assert runs.range_caption(2, 3, 120, 50) == "Runs 101–120 of 120 (page 3 of 3)"
    assert run_list.order_note(run_list.DEFAULT_ORDER) == ""
    assert run_list.order_note("Run id") == "Ordered: run id. "


def test_import_progress_and_report_rows() -> None:
    assert progress("checkpoints", 50, 200) == (0.25, "checkpoints: 50 of 200 rows")
    assert progress("checkpoints", 300, 200)[0] == 1.0
    assert progress("writes", 1234, None) == (0.5, "writes: 1,234 rows")
    report = ImportReport(1, "sqlite", "native", "x.sqlite",
                          tables={"checkpoints": TableCounts(3, 2, 0, 1)},
                          quarantine_reasons={"bad json": 1})  # fmt: skip
    assert table_rows(report) == [
        {"table": "checkpoints", "read": 3, "imported": 2, "already_present": 0,
         "quarantined": 1, "updated": 0}
    ]  # fmt: skip
    assert reason_rows(report) == [{"reason": "bad json", "rows": 1}]


@pytest.mark.parametrize(
    ("table", "flavour", "expected"),
    [
        ("orders", "auto", "write a mapping file for its tables and give it in the Mapping file"),
        ("orders", "native", "use the Flavour auto, or a mapping file in the Mapping file field"),
        ("orders", "mapped", "give a mapping file in the Mapping file field"),
        ("checkpoints", "auto", "name the one that is step_index `step_index`, or give a"),
    ],
)
def test_import_errors_read_in_the_pages_words(
    tmp_path: Path, table: str, flavour: str, expected: str
) -> None:
    """The errors a real import raises for a source of other tables, with their hints put
    in the Import page's controls: no command-line option is left."""
    source = tmp_path / "other.sqlite"
    con = sqlite3.connect(source)
    # the checkpoints: two aliases of the step (docs/native-shape.md), which may be either
    columns = (
        "run_id TEXT, step INTEGER, step_no INTEGER, state TEXT"
        if table == "checkpoints"
        else "id INTEGER, body TEXT"
    )
    con.execute(f"CREATE TABLE {table} ({columns})")
    con.commit()
    con.close()
    with Store.open(tmp_path / "s.duckdb") as store, pytest.raises(StepscopeError) as failed:
        import_source(store, str(source), ImportOptions(flavour=flavour))
    shown = app_hint(str(failed.value))
    assert expected in shown, shown
    assert "--" not in shown and "stepscope import" not in shown, shown


def _refs() -> list[StepRef]:
    return [
        StepRef(0, 0, "c0", None, "step 0"),
        StepRef(1, 1, "c1", "c0", "step 1"),
        StepRef(2, 1, "c1b", "c0", "step 1 · 2"),
    ]


def test_timeline_url_label_and_ignore_paths() -> None:
    refs = _refs()
    assert timeline.url_checkpoint(refs, 0) is None
    assert timeline.url_checkpoint(refs, 2) == "c1b"
    assert timeline.nav_label(refs[1], {1: []}) == "step 1 ⚠"
    assert timeline.nav_label(refs[0], {1: []}) == "step 0"
    assert timeline.ignore_paths(" root['a'] ,, root['b'],") == ("root['a']", "root['b']")
    assert timeline.ignore_paths("") == ()


def test_fork_segments_of_refs_without_a_store() -> None:
    segments, branch_points = fork_tree._segments(_refs())
    assert branch_points == ["c0"]
    assert [(s.segment_id, s.parent_segment) for s in segments] == [(0, None), (1, 0), (2, 0)]
