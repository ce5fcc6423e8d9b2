"""The short way to difflib's alignment (debugger.diff.sequence) gives difflib's exact answer.

DeepDiff aligns lists of scalars with difflib; ``diff_states`` hands it the opcodes of
:func:`debugger.diff.sequence.opcodes`, which skips the common ends when that provably changes
nothing. These tests compare the opcodes with difflib's own on lists built to break the
argument: repeated items, items moved from one end to the other, reversed and shuffled lists,
and values Python calls equal across types (``1 == 1.0 == True``).
"""

from __future__ import annotations

import difflib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debugger.diff import diff_states, plain_deepdiff_rows
from debugger.diff import sequence as diff_sequence

ITEMS = st.one_of(
    st.sampled_from([0, 1, 1.0, True, False, 0.0, -0.0, None, "a", "b", "", "1"]),
    st.integers(0, 6),
    st.text(alphabet="abc", max_size=2),
)
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def difflib_opcodes(a: list[Any], b: list[Any]) -> list[tuple[str, int, int, int, int]]:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


@st.composite
def edited_lists(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """A list and an edited copy: the edits a step makes, and the ones that move items."""
    old = draw(st.lists(ITEMS, max_size=14))
    if draw(st.booleans()):
        old = list(dict.fromkeys(old))  # distinct items (by Python equality), the short way's case
    new = list(old)
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["set", "insert", "delete", "swap", "reverse", "rotate"]))
        if action == "set" and new:
            new[draw(st.integers(0, len(new) - 1))] = draw(ITEMS)
        elif action == "insert":
            new.insert(draw(st.integers(0, len(new))), draw(ITEMS))
        elif action == "delete" and new:
            del new[draw(st.integers(0, len(new) - 1))]
        elif action == "swap" and len(new) > 1:
            i, j = draw(st.integers(0, len(new) - 1)), draw(st.integers(0, len(new) - 1))
            new[i], new[j] = new[j], new[i]
        elif action == "reverse":
            new.reverse()
        elif action == "rotate" and new:
            k = draw(st.integers(1, len(new)))
            new = new[k:] + new[:k]  # an end moves to the other end
    return old, new


@SETTINGS
@given(edited_lists())
def test_opcodes_equal_difflib(pair: tuple[list[Any], list[Any]]) -> None:
    old, new = pair
    assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)


@SETTINGS
@given(edited_lists())
def test_scalar_lists_diff_like_plain_deepdiff(pair: tuple[list[Any], list[Any]]) -> None:
    old, new = pair
    for a, b in ((old, new), ({"notes": old, "n": 1}, {"notes": new, "n": 2})):
        assert repr(diff_states(a, b)) == repr(plain_deepdiff_rows(a, b))


def test_short_way_taken_for_distinct_items_and_equal_to_difflib() -> None:
    old = [f"note {i}" for i in range(3000)]
    new = list(old)
    new[1234] = "revised"
    new.insert(2000, "added")
    assert diff_sequence._ends(old, new) == (1234, 1000)
    assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)
    assert repr(diff_states({"notes": old}, {"notes": new})) == repr(
        plain_deepdiff_rows({"notes": old}, {"notes": new})
    )


def test_repeated_end_items_go_to_difflib() -> None:
    # "x" is in the common prefix and again in the middle: difflib may align it elsewhere,
    # so the short way must not be taken.
    old = ["x", "a", "b", "x", "c"]
    new = ["x", "q", "x", "a", "b", "c"]
    assert diff_sequence._ends(old, new) is None
    assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)
    # An end item repeated within the ends themselves, and across types (1 == 1.0 == True).
    for old, new in ((["a", "a", "m", "z"], ["a", "a", "n", "z"]), ([1, "m", True], [1.0, "n", 1])):
        assert diff_sequence._ends(old, new) is None
        assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)


def test_end_moved_to_the_other_end() -> None:
    old = [f"n{i}" for i in range(50)]
    new = old[1:] + old[:1]  # the first item moved to the end: no common prefix or suffix
    assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)
    assert repr(diff_states(old, new)) == repr(plain_deepdiff_rows(old, new))


def test_non_json_items_go_to_difflib_unchanged() -> None:
    from decimal import Decimal

    old = [Decimal(1), "a", "b"]
    new = [Decimal(1), "a", "c"]
    assert diff_sequence._ends(old, new) is None
    assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)


def test_negative_zero_in_a_shifted_list_prints_as_it_was() -> None:
    # 0.0 == -0.0: the pruner must not put the old side's 0.0 where the new side had -0.0,
    # since difflib's alignment can report that item at another position (found by a
    # random search: plain DeepDiff shows new=-0.0 at root[5]).
    old = [1.5, "b", 0.0, "b", -0.0, "b"]
    new = [-0.0, 0.0, -0.0]
    expected = plain_deepdiff_rows(old, new)
    assert "-0.0" in repr(expected)
    assert repr(diff_states(old, new)) == repr(expected)


def test_same_nan_object_matches_itself_as_difflib_does() -> None:
    nan = float("nan")
    old = [nan, "a", "b", nan]
    new = [nan, "a", "c", nan]
    assert diff_sequence.opcodes(old, new) == difflib_opcodes(old, new)
    assert repr(diff_states(old, new)) == repr(plain_deepdiff_rows(old, new))
