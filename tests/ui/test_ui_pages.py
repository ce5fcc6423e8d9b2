"""AppTest of every page on the sample store: renders, shows the run's facts, navigates,
opens deep links."""

from __future__ import annotations

import re
from pathlib import Path

from tests.ui.conftest import CRASHED, DEPLOY, REEXECUTED, REFUND_KEY
from tests.ui.helpers import (
    cell_text,
    frames_text,
    html_bodies,
    listed_runs,
    open_app,
    texts,
)


def test_runs_page_lists_every_run_with_failures_first(sample_store: Path) -> None:
    at = open_app(sample_store)
    assert not at.exception and not at.error
    rows = listed_runs(at)
    assert len(rows) == 13
    # a status badge is its Material icon's name, then the status
    first = {cell_text(r["Status"]).split(" ", 1)[1] for r in rows[:5]}
    assert first == {"crashed", "failed", "parked", "budget exhausted"}
    timeout = next(r for r in rows if r["run_id"] == "tool-timeout")
    assert "failed" in timeout["Status"] and "ToolTimeout" in timeout["Last error"]
    deploy = next(r for r in rows if r["run_id"] == DEPLOY)
    assert deploy["Audit"] == "completed"  # the audit's verdict is a column
    assert "Needs attention (" in texts(at)
    pills = at.get("button_group")[0]
    assert "crashed **2**" in str(pills.proto) and "parked **1**" in str(pills.proto)


def test_runs_page_filters_by_status_agent_and_text(sample_store: Path) -> None:
    at = open_app(sample_store)
    at.session_state["runs_status"] = ["parked", "failed"]  # two status pills clicked
    at.run()
    assert {r["run_id"] for r in listed_runs(at)} == {"parked-approval", "tool-timeout"}
    assert "Filtered by status parked, failed." in texts(at)
    assert at.query_params["status"] == "parked,failed"  # the filter is in the URL
    at.session_state["runs_status"] = []
    at.run()
    at.text_input(key="runs_text").set_value("ToolTimeout").run()
    assert [r["run_id"] for r in listed_runs(at)] == ["tool-timeout"]
    at.text_input(key="runs_text").set_value("").run()
    at.selectbox(key="runs_agent").set_value("refund_desk").run()
    assert len(listed_runs(at)) == 13
    at.selectbox(key="runs_order").set_value("Tokens spent, most first").run()
    tokens = [int(r["Tokens"].replace(",", "")) for r in listed_runs(at)]
    assert tokens == sorted(tokens, reverse=True)
    assert "Ordered: tokens spent, most first." in texts(at)
    assert at.query_params["order"] == "tokens" and at.query_params["agent"] == "refund_desk"
    at.text_input(key="runs_text").set_value("no such run").run()
    assert listed_runs(at) == [] and "No run matches these filters." in texts(at)


def test_timeline_deep_link_opens_the_step_with_its_diff(sample_store: Path) -> None:
    at = open_app(sample_store, "timeline", run=CRASHED, step="5")
    assert not at.exception and not at.error
    page = texts(at)
    assert "#### Step 5" in page and "compared with step 4" in page
    assert "stopped after step 6 with 1 effect in flight" in page  # the run's facts
    assert at.query_params["run"] == CRASHED and at.query_params["step"] == "5"


def test_timeline_steps_forward_to_the_pending_refund_and_back(sample_store: Path) -> None:
    at = open_app(sample_store, "timeline", run=CRASHED, step="5")
    at.button(key="timeline_next").click().run()
    assert "#### Step 6" in texts(at) and at.query_params["step"] == "6"
    frames = frames_text(at)
    assert "root['next_effect']" in frames  # what changed, first
    assert REFUND_KEY in frames and "pending" in frames  # the refund in flight
    assert "refund-desk-scripted" in frames  # the step's model call
    assert "effect-outcome-unknown" in texts(at)  # the audit's finding after this checkpoint
    assert at.button(key="timeline_next").disabled  # the head: nothing after it
    at.button(key="timeline_prev").click().run()
    at.button(key="timeline_prev").click().run()
    assert "#### Step 4" in texts(at) and at.query_params["step"] == "4"


def test_timeline_key_press_with_a_stale_url_moves_from_the_shown_step(sample_store: Path) -> None:
    """A quick press sends the URL the browser had before the last step's URL reached it:
    the step moves from the step shown (it jumped back to the stale URL's step, which a
    person saw as a lost key press: 1 in ~100 in browser_bench.py)."""
    at = open_app(sample_store, "timeline", run=CRASHED, step="5")
    at.button(key="timeline_prev").click().run()
    assert "#### Step 4" in texts(at) and at.query_params["step"] == "4"
    at.query_params["step"] = "5"  # the browser had not applied step 4's URL yet
    at.button(key="timeline_prev").click().run()
    assert "#### Step 3" in texts(at) and at.query_params["step"] == "3"
    at.query_params["step"] = "4"
    at.select_slider(key=f"timeline_pos::{CRASHED}").set_value(1).run()  # the slider too
    assert "#### Step 1" in texts(at) and at.query_params["step"] == "1"
    at.query_params["step"] = "6"  # a link or the back button: the URL asks, no widget moved
    at.run()
    assert "#### Step 6" in texts(at)


def test_timeline_key_press_with_the_slider_not_yet_moved_steps_from_the_shown_step(
    sample_store: Path,
) -> None:
    """A press made before the browser's slider took the last step's position sends the
    slider's old value with it: the step moves from the step shown, not from that value
    (it stayed put, a lost key press in a real browser)."""
    at = open_app(sample_store, "timeline", run=CRASHED, step="3")
    at.button(key="timeline_prev").click().run()
    assert "#### Step 2" in texts(at)
    slider = at.select_slider(key=f"timeline_pos::{CRASHED}")
    slider.set_value(3)  # the browser's slider still at step 3 ...
    at.button(key="timeline_prev").click().run()  # ... when Left is pressed again
    assert "#### Step 1" in texts(at) and at.query_params["step"] == "1"


def test_timeline_marks_the_model_version_change(sample_store: Path) -> None:
    at = open_app(sample_store, "timeline", run=DEPLOY, step="5")
    assert not at.exception
    assert "Model version changed here" in texts(at)
    metadata = next(b for b in html_bodies(at) if "<th>Previous</th>" in b)  # changes marked
    changed = re.findall(r"<td>● changed</td><td>([^<]+)</td>", metadata)
    assert "model_version" in changed and "metadata.agent" not in changed


def test_timeline_shows_the_fork_and_opens_either_branch(sample_store: Path) -> None:
    first = f"{REEXECUTED}/c009"
    at = open_app(sample_store, "timeline", run=REEXECUTED, step="9", checkpoint=first)
    assert not at.exception
    assert f"Branches after checkpoint(s): {REEXECUTED}/c008" in texts(at)
    assert f"checkpoint {first}" in texts(at)
    at = open_app(sample_store, "timeline", run=REEXECUTED, step="9")
    assert f"checkpoint {REEXECUTED}/c010" in texts(at)  # newest at the step
    assert at.query_params["checkpoint"] == f"{REEXECUTED}/c010"
    at.select_slider(key=f"timeline_pos::{REEXECUTED}").set_value(2).run()  # the slider
    assert "#### Step 2" in texts(at) and at.query_params["step"] == "2"
    assert "checkpoint" not in at.query_params


def test_timeline_full_state_only_on_request(sample_store: Path) -> None:
    at = open_app(sample_store, "timeline", run=CRASHED)
    assert "#### Step 6" in texts(at)  # no step in the URL: the head
    assert len(at.json) == 0
    at.toggle(key="timeline_full_state").set_value(True).run()
    assert REFUND_KEY in str(at.json[0].value)


def test_timeline_run_picker_and_unknown_run(sample_store: Path) -> None:
    at = open_app(sample_store, "timeline", run="no-such-run")
    assert not at.exception and "No run 'no-such-run'" in texts(at)
    assert "#### Step" not in texts(at)  # no other run in its place
    at.selectbox(key="timeline_run").set_value(DEPLOY).run()
    assert f"### {DEPLOY}" in texts(at)
    assert at.query_params["run"] == DEPLOY and at.query_params["step"] == "10"


def test_diff_page_compares_two_steps_side_by_side_and_as_table(sample_store: Path) -> None:
    at = open_app(sample_store, "diff", a=f"{CRASHED}:5", b=f"{CRASHED}:6")
    assert not at.exception and not at.error
    assert "3 state changes" in texts(at)
    assert "root['phase']" in frames_text(at)
    assert REFUND_KEY in frames_text(at)  # the pending effect added
    split = next(b for b in html_bodies(at) if "ss-split" in b)  # side by side, aligned
    assert '<tr class="replace">' in split and "refund planned" in split
    at.text_area(key="diff_ignore").set_value("root['phase'], root['log']").run()
    assert "1 state changes" in texts(at)


def test_diff_page_compares_across_runs(sample_store: Path) -> None:
    at = open_app(sample_store, "diff", a=f"{CRASHED}:6", b="crash-resumed:10")
    assert not at.exception and not at.error
    assert f"{CRASHED}:6 -> crash-resumed:10" in texts(at)


def test_diff_page_bad_reference_is_one_error(sample_store: Path) -> None:
    at = open_app(sample_store, "diff", a="run-0:x")
    assert not at.exception
    assert len(at.error) == 1 and "The link's a=run-0:x is not a checkpoint" in texts(at)
    assert not [b for b in html_bodies(at) if "ss-split" in b]  # no diff of something else


def test_sql_page_runs_an_example_and_refuses_writes(sample_store: Path) -> None:
    at = open_app(sample_store, "sql")
    at.selectbox(key="sql_example").set_value("Runs by status").run()
    at.button(key="sql_run").click().run()
    assert not at.error
    result = at.dataframe[0].value
    assert dict(zip(result["status"], result["runs"], strict=True))["completed"] == 8
    at.text_area(key="sql_text").set_value("DELETE FROM runs").run()
    at.button(key="sql_run").click().run()
    assert len(at.error) == 1 and "read-only" in at.error[0].value


def test_pages_show_one_error_when_the_store_is_missing(tmp_path: Path) -> None:
    for url in (None, "timeline", "diff"):
        at = open_app(tmp_path / "none.duckdb", url)
        assert not at.exception
        assert len(at.error) == 1 and "Hint:" in at.error[0].value


def test_audit_table_says_next_step_in_whole_steps_or_a_dash(sample_store: Path) -> None:
    at = open_app(sample_store, "audit")
    assert not at.exception and not at.error
    frame = next(df.value for df in at.dataframe if "next_step" in df.value)
    by_run = dict(zip(frame["run_id"], frame["next_step"], strict=True))
    assert by_run[DEPLOY] == "-"  # completed: a resume has nothing to execute
    assert by_run[CRASHED].isdigit()  # "8", not "8.0"
