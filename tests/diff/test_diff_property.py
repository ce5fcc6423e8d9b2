"""diff_states equals plain DeepDiff on random nested states (hypothesis).

Rows are compared through ``repr``, which tells 1, 1.0 and True apart at every depth, so a
pruning that confused them would fail here even though ``1 == 1.0 == True`` in Python.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debugger.diff import diff_states, plain_deepdiff_rows
from debugger.diff import prune as diff_prune
from debugger.diff.text import StateText, diff_texts

KEYS = st.sampled_from(
    ["a", "b", "c", "ts", "items", "ключ", "名前", "it's", 'say "hi"', "", "__type__", "__x"]
)
KEYS = st.one_of(KEYS, st.text(max_size=4))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 0.0, 1.0, 2, 2.0, 1.5, "1", "", "True"]),
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(KEYS, inner, max_size=6),
    ),
    max_leaves=20,
)
SMALL = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=4,
)
CONTAINERS = st.one_of(st.dictionaries(KEYS, VALUES, max_size=8), st.lists(VALUES, max_size=8))
# Generation, not the diff, is what costs here: ~100 examples take a few seconds.
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fresh(value: Any) -> Any:
    """A deep copy sharing no objects, like two states parsed from a database."""
    return copy.deepcopy(value)


def paths_of(value: Any, path: str = "root") -> list[tuple[str, Any, Any, Any]]:
    """Every (path, parent, key, child) in a value, to choose edit sites from."""
    out: list[tuple[str, Any, Any, Any]] = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        sub = f"{path}[{key!r}]"
        out.append((sub, value, key, child))
        out += paths_of(child, sub)
    return out


@st.composite
def edited_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """A state and a copy with a few edits: the shape of two neighbouring checkpoints."""
    old = draw(CONTAINERS)
    new = fresh(old)
    for _ in range(draw(st.integers(0, 6))):
        sites = paths_of(new)
        if not sites:
            break
        _, parent, key, child = draw(st.sampled_from(sites))
        action = draw(
            st.sampled_from(["replace", "retype", "delete", "insert", "append", "rename"])
        )
        if action == "replace":
            parent[key] = draw(SMALL)
        elif action == "retype" and type(child) in (int, float, bool):
            parent[key] = draw(st.sampled_from([1, 1.0, True, 0, 0.0, False, None]))
        elif action == "delete":
            del parent[key]
        elif action == "insert" and isinstance(parent, dict):
            parent[draw(KEYS)] = draw(SMALL)
        elif action == "insert" and isinstance(parent, list):
            parent.insert(key, draw(SMALL))
        elif action == "append" and isinstance(child, list):
            child.append(draw(SMALL))
        elif action == "rename" and isinstance(parent, dict):
            # Fewer keys in common: brings DeepDiff's "report the whole dict" rule into play.
            for k in list(parent)[: draw(st.integers(1, 4))]:
                parent[f"{k}~"] = parent.pop(k)
    return old, new


def same(a: Any, b: Any) -> None:
    assert repr(a) == repr(b)


@SETTINGS
@given(edited_pairs(), st.booleans())
def test_edited_states_match_plain_deepdiff(pair: tuple[Any, Any], via_json: bool) -> None:
    old, new = pair
    if via_json:  # exactly what the store hands over: orjson-parsed, no shared objects
        old, new = orjson.loads(orjson.dumps(old)), orjson.loads(orjson.dumps(new))
    same(diff_states(old, new), plain_deepdiff_rows(old, new))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONTAINERS, CONTAINERS)
def test_unrelated_states_match_plain_deepdiff(old: Any, new: Any) -> None:
    same(diff_states(old, new), plain_deepdiff_rows(old, new))


@st.composite
def low_overlap_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """Dicts sharing under a third of their keys, one shared key changed inside.

    DeepDiff reports such a dict as one values_changed carrying both whole dicts, so any
    pruning inside it would show in the reported values.
    """
    inner_old, inner_new = draw(edited_pairs())
    others = draw(st.dictionaries(KEYS, VALUES, min_size=1, max_size=6))
    old = {"shared": inner_old, **{f"{k}<": v for k, v in others.items()}}
    new = {"shared": inner_new, **{f"{k}>": fresh(v) for k, v in others.items()}}
    if draw(st.booleans()):
        old, new = {"wrap": old, "same": [1]}, {"wrap": new, "same": [1]}
    return old, new


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(low_overlap_pairs())
def test_low_key_overlap_matches_plain_deepdiff(pair: tuple[Any, Any]) -> None:
    old, new = pair
    same(diff_states(old, new), plain_deepdiff_rows(old, new))


@st.composite
def pairs_with_patterns(draw: st.DrawFn) -> tuple[Any, Any, list[str], list[str]]:
    old, new = draw(edited_pairs())
    sites = [p for p, *_ in paths_of(old)] + [p for p, *_ in paths_of(new)]
    lists = [p for p, _, _, child in paths_of(old) if isinstance(child, list)] + ["root"]
    ignore = draw(st.lists(st.sampled_from(sites), max_size=2)) if sites else []
    if draw(st.booleans()):
        ignore.append("root[**]['ts']")
    if draw(st.booleans()):
        ignore.append(r"re:\['a'\]$")
    order = draw(st.lists(st.sampled_from(lists), max_size=2))
    if draw(st.booleans()):
        order.append("root[*]")
    return old, new, ignore, order


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs_with_patterns())
def test_ignore_options_match_plain_deepdiff(
    case: tuple[Any, Any, list[str], list[str]],
) -> None:
    old, new, ignore, order = case
    same(
        diff_states(old, new, ignore_paths=ignore, ignore_order=order),
        plain_deepdiff_rows(old, new, ignore_paths=ignore, ignore_order=order),
    )


@SETTINGS
@given(edited_pairs(), st.booleans())
def test_chunked_identity_matches_plain_deepdiff(pair: tuple[Any, Any], via_json: bool) -> None:
    """Siblings are tested a chunk at a time (diff_prune.CHUNK, 32 in use); with chunks of
    two, the small generated states have many chunks, some with a change inside."""
    old, new = pair
    if via_json:
        old, new = orjson.loads(orjson.dumps(old)), orjson.loads(orjson.dumps(new))
    saved = diff_prune.CHUNK
    diff_prune.CHUNK = 2
    try:
        same(diff_states(old, new), plain_deepdiff_rows(old, new))
    finally:
        diff_prune.CHUNK = saved


def _texts(old: Any, new: Any, styles: tuple[int, int]) -> tuple[str, str]:
    """The two states as stored texts: compact (orjson) or with whitespace (json, indented)."""

    def text(value: Any, style: int) -> str:
        if style == 0:
            return orjson.dumps(value).decode()
        return json.dumps(value, indent=style - 1 or None, ensure_ascii=style == 2)

    return text(old, styles[0]), text(new, styles[1])


STYLES = st.tuples(st.integers(0, 3), st.integers(0, 3))


@SETTINGS
@given(edited_pairs(), STYLES)
def test_text_diff_matches_plain_deepdiff(pair: tuple[Any, Any], styles: tuple[int, int]) -> None:
    """The diff from stored texts: only differing branches are parsed, rows are DeepDiff's.
    Texts written differently (whitespace, escapes) hold equal values the pruning must not
    take for changes."""
    a, b = _texts(*pair, styles)
    old, new = orjson.loads(a), orjson.loads(b)
    same(diff_texts(a, b), plain_deepdiff_rows(old, new))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(low_overlap_pairs(), st.tuples(CONTAINERS, CONTAINERS)), STYLES)
def test_text_diff_of_unrelated_or_low_overlap_states(
    pair: tuple[Any, Any], styles: tuple[int, int]
) -> None:
    a, b = _texts(*pair, styles)
    same(diff_texts(a, b), plain_deepdiff_rows(orjson.loads(a), orjson.loads(b)))


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs_with_patterns(), STYLES)
def test_text_diff_with_ignore_options(
    case: tuple[Any, Any, list[str], list[str]], styles: tuple[int, int]
) -> None:
    old, new, ignore, order = case
    a, b = _texts(old, new, styles)
    old, new = orjson.loads(a), orjson.loads(b)
    same(
        diff_texts(a, b, ignore_paths=ignore, ignore_order=order),
        plain_deepdiff_rows(old, new, ignore_paths=ignore, ignore_order=order),
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # NaN and Infinity (DuckDB stores them; msgspec refuses them): the parsed way
        ('{"a": NaN, "b": [1, 2]}', '{"a": 1.5, "b": [1, 3]}'),
        ('{"a": Infinity}', '{"a": null}'),
        # integers beyond 64 bits stay exact, in a branch parsed on its own
        ('{"n": 123456789012345678901234, "m": [1]}', '{"n": 123456789012345678901235, "m": [1]}'),
        ('{"deep": {"x": [{"n": 18446744073709551616}]}}', '{"deep": {"x": [{"n": 1}]}}'),
    ],
)
def test_text_diff_of_what_only_the_standard_library_parses(old: str, new: str) -> None:
    same(diff_texts(old, new), plain_deepdiff_rows(json.loads(old), json.loads(new)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edited_pairs(), min_size=1, max_size=3), st.booleans())
def test_stepping_through_texts_with_their_splits(
    pairs: list[tuple[Any, Any]], with_order: bool
) -> None:
    """As the Timeline steps: each text is diffed as the new side, then as the old side,
    with the splits kept with it (StateText); every diff is plain DeepDiff's."""
    order = ["root[*]"] if with_order else []
    states = [orjson.dumps(s).decode() for old, new in pairs for s in (old, new)]
    texts = [StateText(t) for t in states]
    for i in range(1, len(texts)):
        old, new = orjson.loads(states[i - 1]), orjson.loads(states[i])
        got = diff_texts(texts[i - 1], texts[i], ignore_order=order)
        same(got, plain_deepdiff_rows(old, new, ignore_order=order))


def test_a_text_kept_with_its_splits_is_split_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import debugger.diff.text as diff_text

    base = {"n": 0, "orders": {f"A{k}": {"v": k, "tags": ["x"]} for k in range(300)}}
    texts = [StateText(orjson.dumps({**base, "n": n}).decode()) for n in range(3)]
    calls: list[int] = []

    class Counting:
        def __init__(self, real: Any) -> None:
            self.real = real

        def decode(self, raw: Any) -> Any:
            calls.append(len(bytes(raw)))
            return self.real.decode(raw)

    monkeypatch.setattr(diff_text, "_OBJECT", Counting(diff_text._OBJECT))
    assert [r.path for r in diff_texts(texts[0], texts[1])] == ["root['n']"]
    assert len(calls) == 2  # both roots
    assert [r.path for r in diff_texts(texts[1], texts[2])] == ["root['n']"]
    assert len(calls) == 3  # only the new root: the old one was split as the new side before
