"""The Replay page in AppTest: set up from the URL, run, see the comparison and its links."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from debugger.store import Store
from tests.ui.helpers import html_text, open_app, texts


@pytest.fixture
def store(sample_replay_store: Path, tmp_path: Path) -> Path:
    path = tmp_path / "page.duckdb"
    shutil.copy(sample_replay_store, path)
    return path


def _open(store: Path, url: str = "replay", **query: str) -> AppTest:
    at = open_app(store, url, timeout=90, **query)
    assert not at.exception, at.exception
    return at


def _text(at: AppTest) -> str:
    """The page's text, as a person reads it: see tests.ui.helpers.texts."""
    return texts(at)


def test_replay_page_runs_the_fixed_agent_and_links_into_diff_and_timeline(store: Path) -> None:
    at = _open(store, run="crash-at-step-7", step="6")
    assert at.selectbox(key="replay_run").value == "crash-at-step-7"
    assert at.number_input(key="replay_step").value == 6
    assert at.text_input(key="replay_agent").value.endswith(":fixed_agent")
    at.button[0].click().run()
    assert not at.exception, at.exception
    text = _text(at)
    assert "First divergence: step 7 (missing_call)" in text
    assert at.radio(key="replay_isolation").value == "kernel"
    assert "Isolation: kernel (namespaces: no network" in text
    # the original code, replayed the same way first, would have refunded twice
    errors = html.unescape(" ".join(str(e.value) for e in at.error))
    assert "original code would have sent a **duplicate issue_refund**" in errors
    assert "refund-T-1077-ORD-1077" in errors
    assert "the original made the write issue_refund (key refund-T-1077-ORD-1077)" in text
    links = [str(p.proto) for p in at.get("page_link")] + [str(m.value) for m in at.markdown]
    assert any("a=crash-at-step-7%3A6&b=crash-at-step-7~replay-1%3A7" in link
               or "a=crash-at-step-7:6&b=crash-at-step-7~replay-1:7" in link
               for link in links), links  # fmt: skip
    assert any("run=crash-at-step-7&step=7" in link for link in links), links
    with Store.open(store, read_only=True) as s:
        assert s.run("crash-at-step-7~replay-1").replay_of == "crash-at-step-7"  # the fix
        assert s.run("crash-at-step-7~replay-2").replay_of == "crash-at-step-7"  # original code
    # the replay is a run like any other: its report reopens from its address
    assert at.query_params["replay"] == "crash-at-step-7~replay-1"
    again = _open(store, "replay", replay="crash-at-step-7~replay-1")
    assert "First divergence: step 7" in _text(again)
    # ... and the pages the links lead to open on it
    diff = _open(store, "diff", a="crash-at-step-7:6", b="crash-at-step-7~replay-1:7")
    assert "issue_refund" in html_text(diff)  # the side-by-side states
    timeline = _open(store, "timeline", run="crash-at-step-7~replay-1", step="7")
    assert "crash-at-step-7~replay-1" in _text(timeline) + str(
        [s.value for s in timeline.selectbox]
    )


def test_replay_page_shows_the_duplicate_refund_of_the_original_code(store: Path) -> None:
    at = _open(store, run="crash-at-step-7", step="6")
    at.text_input(key="replay_agent").set_value("sample_checkpoints.refund_desk.agent:agent")
    at.text_input(key="replay_baseline").set_value("")
    at.button[0].click().run()
    assert not at.exception, at.exception
    errors = html.unescape(" ".join(str(e.value) for e in at.error))
    assert "In production this code would have sent a **duplicate issue_refund**" in errors
    assert "refund-T-1077-ORD-1077" in errors and "end_of_original" in _text(at)
    with Store.open(store, read_only=True) as s:  # one replay: no baseline was asked for
        assert [r.run_id for r in s.run_records() if r.replay_of] == ["crash-at-step-7~replay-1"]


def test_replay_page_shows_setup_errors_in_one_line(store: Path) -> None:
    at = _open(store, run="clean-completed", step="0")
    at.text_input(key="replay_agent").set_value("no_such_module:agent")
    at.button[0].click().run()
    assert not at.exception, at.exception
    [error] = at.error
    assert html.unescape(str(error.value)).startswith(
        "cannot import the agent no_such_module:agent"
    )
    with Store.open(store, read_only=True) as s:  # nothing was replayed, not even the baseline
        assert not [r for r in s.run_records() if r.replay_of]
