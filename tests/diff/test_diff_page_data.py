"""The Diff page's choices, computed in debugger.pages_data.diff without Streamlit."""

from __future__ import annotations

from debugger.diff import CheckpointSpec
from debugger.pages_data.diff import default_position, parse_patterns, split_summary
from debugger.pages_data.timeline import StepRef


def _refs(n: int) -> list[StepRef]:
    return [StepRef(i, i, f"c{i}", f"c{i - 1}" if i else None, f"step {i}") for i in range(n)]


def test_patterns_split_on_commas_and_newlines() -> None:
    assert parse_patterns(" root['a'] ,\nroot['b']\n\n, ") == ("root['a']", "root['b']")
    assert parse_patterns("") == ()


def test_default_position_counts_from_the_last_checkpoint() -> None:
    assert default_position(_refs(4), "r", None, -1) == 2
    assert default_position(_refs(4), "r", None, 0) == 3
    assert default_position(_refs(1), "r", None, -1) == 0


def test_default_position_follows_the_url_for_its_run_only() -> None:
    refs = _refs(4)
    assert default_position(refs, "r", CheckpointSpec("r", checkpoint_id="c1"), 0) == 1
    assert default_position(refs, "r", CheckpointSpec("r", step=2), 0) == 2
    assert default_position(refs, "r", CheckpointSpec("other", step=1), 0) == 3


def test_summary_splits_into_title_and_counts() -> None:
    assert split_summary("a:1 -> b:2: 3 changed") == ("a:1 -> b:2", "3 changed")
    assert split_summary("a:1 -> b:2") == ("a:1 -> b:2", "no differences")
    # DeepDiff's kind names are words on the page
    summary = "a:1 -> b:2: 3 state changes (1 type_changes, 2 iterable_item_added), 0 budget"
    assert split_summary(summary)[1] == "3 state changes (1 type changed, 2 item added), 0 budget"
