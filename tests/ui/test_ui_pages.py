"""AppTest of every page on a real store: renders, shows the run's facts, navigates, deep links."""

from __future__ import annotations

from pathlib import Path

from tests.ui.conftest import CRASHED, REFUND_KEY
from tests.ui.helpers import frames_text, open_app, texts


def test_runs_page_lists_every_run_with_the_crashed_one_marked(ui_store: Path) -> None:
    at = open_app(ui_store)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert set(table["run_id"]) == {CRASHED, "run-0", "run-1", "run-2"}
    crashed = table[table["run_id"] == CRASHED].iloc[0]
    assert crashed["status"] == "crashed"
    assert crashed["last_error"] == "process killed after issue_refund"
    assert "scripted-2" in crashed["model_versions"]
    assert table.iloc[0]["status"] != "completed"  # runs needing attention come first
    page = texts(at)
    assert "Needs attention" in page and "crashed 3" in page


def test_runs_page_filters_by_status_and_text(ui_store: Path) -> None:
    at = open_app(ui_store)
    at.multiselect(key="runs_status").set_value(["completed"]).run()
    assert list(at.dataframe[0].value["run_id"]) == ["run-0"]
    at.multiselect(key="runs_status").set_value([]).run()
    at.text_input(key="runs_text").set_value("killed").run()
    assert list(at.dataframe[0].value["run_id"]) == [CRASHED]


def test_timeline_deep_link_opens_the_step_with_its_diff(ui_store: Path) -> None:
    at = open_app(ui_store, "timeline", run=CRASHED, step="6")
    assert not at.exception and not at.error
    page = texts(at)
    assert "### Step 6" in page and "compared with step 5" in page
    assert "process killed after issue_refund" in page  # the run's facts
    assert "root['notes'][5]" in frames_text(at)  # the diff of step 6
    assert at.query_params["run"] == CRASHED and at.query_params["step"] == "6"


def test_timeline_steps_forward_to_the_pending_refund_and_back(ui_store: Path) -> None:
    at = open_app(ui_store, "timeline", run=CRASHED, step="6")
    at.button(key="timeline_next").click().run()
    assert "### Step 7" in texts(at)
    assert at.query_params["step"] == "7"
    frames = frames_text(at)
    assert REFUND_KEY in frames and "unknown" in frames
    assert "refund_sent" in frames  # the step's diff: order status changed
    assert "issue_refund" in frames  # the step's tool call
    assert at.button(key="timeline_next").disabled  # the head: nothing after it
    at.button(key="timeline_prev").click().run()
    at.button(key="timeline_prev").click().run()
    assert "### Step 5" in texts(at)
    assert at.query_params["step"] == "5"


def test_timeline_marks_the_model_version_change_and_the_fork(ui_store: Path) -> None:
    at = open_app(ui_store, "timeline", run=CRASHED, step="4", checkpoint="c4")
    assert not at.exception
    page = texts(at)
    assert "Model version changed here" in page
    assert "Branches after checkpoint(s): c3" in page
    metadata = at.dataframe[-1].value
    changed = metadata[metadata.iloc[:, 0] != ""]
    assert list(changed["key"]) == ["model_version"]


def test_timeline_full_state_only_on_request(ui_store: Path) -> None:
    at = open_app(ui_store, "timeline", run=CRASHED, step="7")
    assert len(at.json) == 0
    at.toggle(key="timeline_full_state").set_value(True).run()
    assert at.json[0].value and "refund_sent" in at.json[0].value


def test_timeline_unknown_run_warns_and_shows_another(ui_store: Path) -> None:
    at = open_app(ui_store, "timeline", run="no-such-run")
    assert not at.exception
    assert "No run 'no-such-run'" in texts(at)


def test_timeline_run_picker_resets_the_step(ui_store: Path) -> None:
    at = open_app(ui_store, "timeline", run=CRASHED, step="3")
    at.selectbox(key="timeline_run").set_value("run-1").run()
    assert "## run-1" in texts(at)
    assert at.query_params["run"] == "run-1" and at.query_params["step"] == "4"


def test_diff_page_compares_two_steps_side_by_side_and_as_table(ui_store: Path) -> None:
    at = open_app(ui_store, "diff", a=f"{CRASHED}:6", b=f"{CRASHED}:7")
    assert not at.exception and not at.error
    assert "2 state changes" in texts(at)
    assert "root['order']['status']" in frames_text(at)
    assert at.json[1].value and "refund_sent" in at.json[1].value  # side by side: B
    at.text_area(key="diff_ignore").set_value("root['order']['status']").run()
    assert "1 state changes" in texts(at)


def test_diff_page_compares_across_runs(ui_store: Path) -> None:
    at = open_app(ui_store, "diff", a="run-0:4", b=f"{CRASHED}:7")
    assert not at.exception and not at.error
    assert f"run-0:4 -> {CRASHED}:7" in texts(at)


def test_diff_page_bad_reference_is_one_error(ui_store: Path) -> None:
    at = open_app(ui_store, "diff", a="run-0:x")
    assert not at.exception
    assert len(at.error) == 1 and "Hint:" in at.error[0].value


def test_sql_page_runs_the_example_and_refuses_writes(ui_store: Path) -> None:
    at = open_app(ui_store, "sql")
    at.button(key="sql_run").click().run()
    assert not at.error
    result = at.dataframe[0].value
    assert list(result["run_id"]) == [CRASHED] and list(result["first_step"]) == [7]
    at.text_area(key="sql_text").set_value("DELETE FROM runs").run()
    at.button(key="sql_run").click().run()
    assert len(at.error) == 1 and "read-only" in at.error[0].value


def test_pages_show_one_error_when_the_store_is_missing(tmp_path: Path) -> None:
    for url in (None, "timeline", "diff"):
        at = open_app(tmp_path / "none.duckdb", url)
        assert not at.exception
        assert len(at.error) == 1 and "Hint:" in at.error[0].value
