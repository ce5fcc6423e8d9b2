"""Named cases of the diff engine: the ones a reviewer would ask about first."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from debugger.diff import (
    CheckpointSpec,
    DiffOptionError,
    DiffRow,
    diff_checkpoints,
    diff_states,
    parse_spec,
    plain_deepdiff_rows,
    readings,
)
from debugger.diff.refs import BadReference
from debugger.model import Budgets, Checkpoint


def rows(old: Any, new: Any, **kw: Any) -> list[tuple[str, str, Any, Any]]:
    got = diff_states(old, new, **kw)
    assert repr(got) == repr(plain_deepdiff_rows(old, new, **kw))
    return [(r.path, r.kind, r.old, r.new) for r in got]


def test_keys_that_start_with_two_underscores_are_compared_like_any_other() -> None:
    """DeepDiff leaves such keys out by default (private attributes): a LangGraph message's
    ``__type__``, a state's ``__meta__``, the functional API's saved history."""
    old = {"__meta__": {"v": 1}, "messages": [{"__type__": "human", "id": "m1"}]}
    new = {"__meta__": {"v": 2}, "messages": [{"__type__": "ai", "id": "m1"}]}
    assert rows(old, new) == [
        ("root['__meta__']['v']", "values_changed", 1, 2),
        ("root['messages'][0]['__type__']", "values_changed", "human", "ai"),
    ]
    saved = {"internal_channels": {"__previous__": ["q0", "a0"]}}
    grown = {"internal_channels": {"__previous__": ["q0", "a0", "q1", "a1"]}}
    assert [r[:2] for r in rows(saved, grown)] == [
        ("root['internal_channels']['__previous__'][2]", "iterable_item_added"),
        ("root['internal_channels']['__previous__'][3]", "iterable_item_added"),
    ]


def test_one_one_point_zero_and_true_are_three_different_values() -> None:
    old = {"n": 1, "deep": {"x": [1, {"y": 1}]}}
    assert rows(old, {"n": 1.0, "deep": {"x": [1, {"y": True}]}}) == [
        ("root['n']", "type_changes", 1, 1.0),
        ("root['deep']['x'][1]['y']", "type_changes", 1, True),
    ]
    assert rows({"x": True}, {"x": 1}) == [("root['x']", "type_changes", True, 1)]
    # Plain DeepDiff aligns all-scalar lists with difflib, which hashes True and 1 alike, so
    # it reports nothing here; diff_states reproduces that (documented in docs/diff.md).
    assert rows([True, "a"], [1, "a"]) == []


def test_identical_states_have_no_rows() -> None:
    state = {"a": [1, {"b": None}], "c": {}}
    assert diff_states(state, {"a": [1, {"b": None}], "c": {}}) == []


def test_none_empty_containers_and_unicode_keys() -> None:
    got = rows({"ключ": None, "l": [], "d": {}}, {"ключ": {}, "l": [None], "d": {"名": 1}})
    assert ("root['ключ']", "type_changes", None, {}) in got
    assert ("root['l'][0]", "iterable_item_added", None, None) in got
    assert ("root['d']['名']", "dictionary_item_added", None, 1) in got


def test_lists_of_different_lengths_compare_by_position() -> None:
    old = {"msgs": [{"id": 1}, {"id": 2}, {"id": 3}]}
    new = {"msgs": [{"id": 1}, {"id": 3}]}
    assert rows(old, new) == [
        ("root['msgs'][1]['id']", "values_changed", 2, 3),
        ("root['msgs'][2]", "iterable_item_removed", {"id": 3}, None),
    ]


def test_scalar_lists_go_through_difflib_whole() -> None:
    # DeepDiff aligns all-scalar lists with difflib, not by position: an insertion at the
    # front is one added item, not a change of every index.
    assert rows({"l": [1, 2, 3]}, {"l": [0, 1, 2, 3]}) == [
        ("root['l'][0]", "iterable_item_added", None, 0)
    ]


def test_dict_with_little_key_overlap_is_one_change_like_deepdiff() -> None:
    # DeepDiff's threshold_to_diff_deeper: under a third of the keys in common -> the dict is
    # reported as one values_changed. Pruning identical keys must not change that decision.
    old = {"d": {"same": 1, "x1": 1, "x2": 2, "x3": 3}}
    new = {"d": {"same": 1, "y1": 1, "y2": 2, "y3": 3}}
    assert rows(old, new) == [("root['d']", "values_changed", old["d"], new["d"])]
    many_same = {f"k{i}": i for i in range(20)}
    old2, new2 = {**many_same, "a": 1, "b": 2}, {**many_same, "c": 3, "d": 4, "e": 5}
    assert [k for _, k, _, _ in rows(old2, new2)] == ["dictionary_item_added"] * 3 + [
        "dictionary_item_removed"
    ] * 2


def test_dict_reported_whole_carries_its_unpruned_values() -> None:
    old = {"d": {"same": {"x": 1, "y": 2}, "a": 1, "b": 2, "c": 3}}
    new = {"d": {"same": {"x": 1, "y": 3}, "e": 1, "f": 2, "g": 3}}
    assert rows(old, new) == [("root['d']", "values_changed", old["d"], new["d"])]


def test_ignore_paths_exact_glob_and_regex() -> None:
    old = {"ts": 1, "msgs": [{"ts": 1, "text": "a"}], "meta": {"updated_at": "x"}}
    new = {"ts": 2, "msgs": [{"ts": 2, "text": "b"}], "meta": {"updated_at": "y"}}
    assert len(rows(old, new)) == 4
    assert [p for p, *_ in rows(old, new, ignore_paths=["root['ts']"])] == [
        "root['msgs'][0]['ts']", "root['msgs'][0]['text']", "root['meta']['updated_at']"
    ]  # fmt: skip
    assert [p for p, *_ in rows(old, new, ignore_paths=["root[**]['ts']", "re:_at'\\]$"])] == [
        "root['msgs'][0]['text']"
    ]
    assert [p for p, *_ in rows(old, new, ignore_paths=[re.compile(r"\['(ts|msgs|meta)'\]")])] == []


def test_ignore_order_applies_only_to_the_chosen_lists() -> None:
    old = {"tags": ["a", {"b": 1}], "steps": [{"n": 1}, {"n": 2}]}
    new = {"tags": [{"b": 1}, "a"], "steps": [{"n": 2}, {"n": 1}]}
    assert [p for p, *_ in rows(old, new, ignore_order=["root['tags']"])] == [
        "root['steps'][0]['n']", "root['steps'][1]['n']"
    ]  # fmt: skip
    assert rows(old, new, ignore_order=["root[*]"]) == []


def test_bad_patterns_are_one_line_errors() -> None:
    with pytest.raises(DiffOptionError, match="bad regular expression"):
        diff_states({}, {}, ignore_paths=["re:("])
    with pytest.raises(DiffOptionError, match="root"):
        diff_states({}, {}, ignore_order=["[*]['x']"])


def ckpt(step: int, state: Any, pending: list[dict[str, Any]], **kw: Any) -> Checkpoint:
    defaults: dict[str, Any] = dict(
        run_id="r", checkpoint_id=f"c{step}", parent_id=None, step_index=step,
        schema_version=3, created_at=datetime(2026, 11, 1, tzinfo=UTC), working_state=state,
        state_hash="h", state_bytes=10, budgets=Budgets(100 * step, step, 1000 * step),
        pending_effects=pending, model_version="m-1", tool_versions={"t": "1"},
        metadata={"agent": "a"},
    )  # fmt: skip
    return Checkpoint(**{**defaults, **kw})


def refund(key: str | None, status: str, amount: float = 10.0) -> dict[str, Any]:
    return {"tool": "issue_refund", "idempotency_key": key, "status": status,
            "args": {"amount": amount}}  # fmt: skip


def test_checkpoint_diff_covers_budgets_effects_and_metadata() -> None:
    a = ckpt(
        6, {"x": 1}, [refund("k1", "pending"), refund("k2", "pending"), refund(None, "unknown")]
    )
    b = ckpt(7, {"x": 2}, [refund("k1", "unknown"), refund("k3", "pending"),
                           refund("k2", "pending", 11.0)], model_version="m-2",
             metadata={"agent": "a", "status": "crashed"})  # fmt: skip
    d = diff_checkpoints(a, b)
    assert d.state == [DiffRow("root['x']", "values_changed", 1, 2)]
    assert [(c.name, c.old, c.new, c.delta) for c in d.budgets] == [
        ("tokens_spent", 600, 700, 100), ("steps_spent", 6, 7, 1),
        ("wall_clock_ms", 6000, 7000, 1000),
    ]  # fmt: skip
    assert [(e.idempotency_key, e.change, e.old_status, e.new_status) for e in d.effects] == [
        ("k1", "status_changed", "pending", "unknown"),
        ("k2", "changed", "pending", "pending"),
        (None, "removed", "unknown", None),
        ("k3", "added", None, "pending"),
    ]
    assert [(r.path, r.kind, r.old, r.new) for r in d.metadata] == [
        ("root['metadata']['status']", "dictionary_item_added", None, "crashed"),
        ("root['model_version']", "values_changed", "m-1", "m-2"),
    ]
    doc = d.to_dict()
    assert list(doc) == ["a", "b", "state", "budgets", "effects", "metadata", "summary"]
    assert doc["a"] == {"run_id": "r", "step_index": 6, "checkpoint_id": "c6"}
    assert not d.is_empty and "1 state changes" in d.summary()


def test_a_single_pattern_may_be_given_without_a_list() -> None:
    a = ckpt(1, {"ts": 1, "x": 1}, [])
    b = ckpt(2, {"ts": 2, "x": 2}, [])
    assert [r.path for r in diff_checkpoints(a, b, ignore_paths="root['ts']").state] == [
        "root['x']"
    ]
    assert [r.path for r in diff_states({"ts": 1}, {"ts": 2}, ignore_paths=re.compile("ts"))] == []


def test_checkpoint_diff_of_a_checkpoint_with_itself_is_empty() -> None:
    a = ckpt(3, {"x": [1, 2]}, [refund("k", "pending")])
    d = diff_checkpoints(a, a)
    assert d.is_empty and d.summary().endswith("no differences")


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("crash-at-step-7:6", CheckpointSpec("crash-at-step-7", step=6)),
        ("thread-1:sub:graph:3", CheckpointSpec("thread-1:sub:graph", step=3)),
        ("lg-thread:-1", CheckpointSpec("lg-thread", step=-1)),
        ("run@1ef-abc", CheckpointSpec("run", checkpoint_id="1ef-abc")),
        ("ns:run@ck:x", CheckpointSpec("ns:run", checkpoint_id="ck:x")),
        ("r~replay-1@r~replay-1@7", CheckpointSpec("r~replay-1", checkpoint_id="r~replay-1@7")),
    ],
)
def test_references(text: str, spec: CheckpointSpec) -> None:
    assert parse_spec(text) == spec


def test_every_reading_of_an_ambiguous_reference_in_order() -> None:
    assert readings("a@b@c:3") == [
        CheckpointSpec("a@b@c", step=3),
        CheckpointSpec("a", checkpoint_id="b@c:3"),
        CheckpointSpec("a@b", checkpoint_id="c:3"),
    ]


@pytest.mark.parametrize("text", ["run", "run:six", ":3", "run@", "@ck", "run:٣"])
def test_bad_references(text: str) -> None:
    with pytest.raises(BadReference) as e:
        parse_spec(text)
    assert "\n" not in str(e.value) and "Hint:" in str(e.value)


def test_threshold_rule_with_excluded_keys_decides_like_deepdiff() -> None:
    # Without exclusions 1 common key of 9 -> one values_changed at the root; excluding 7 of
    # the keys leaves 1 of 2 in DeepDiff's union, so it descends instead.
    old = {"same": {"x": 1}, "a": 1, "b": 2, "c": 3, "d": 4}
    new = {"same": {"x": 1}, "e": 1, "f": 2, "g": 3, "h": 4}
    assert [k for _, k, _, _ in rows(old, new)] == ["values_changed"]
    excluded = [f"root['{k}']" for k in "abcdefg"]
    assert rows(old, new, ignore_paths=excluded) == [
        ("root['h']", "dictionary_item_added", None, 4)
    ]


def test_type_changes_inside_large_containers_are_found() -> None:
    # Large dicts and lists are tested a chunk of siblings at a time (diff_prune.CHUNK); a
    # chunk equal with == but not in bytes (1 against 1.0 and True, deep inside one item)
    # must still be looked into item by item.
    old = {
        "orders": {f"A-{i:04d}": {"qty": 1, "flags": [{"on": True}, 0]} for i in range(100)},
        "messages": [{"n": i, "usage": {"tokens": 10}} for i in range(100)],
    }
    new = orjson.loads(orjson.dumps(old))
    new["orders"]["A-0040"]["qty"] = 1.0
    new["orders"]["A-0077"]["flags"][0]["on"] = 1
    new["messages"][63]["usage"]["tokens"] = 10.0
    new["messages"].append({"n": 100})
    expected = plain_deepdiff_rows(old, new)
    assert [r.kind for r in expected].count("type_changes") == 3
    assert repr(diff_states(old, new)) == repr(expected)
