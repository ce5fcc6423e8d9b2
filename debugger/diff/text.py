"""The diff of two states given as stored JSON texts, parsing only the branches that differ.

:func:`debugger.diff.states.diff_states` takes parsed states; for a large state with a small
change, parsing both states and serializing chunks again for the pruning costs more than the
diff itself. The store keeps
each state as the JSON text it was imported with, so equal bytes mean equal values, and the
comparison can happen on the texts before anything is parsed:

- each container is split into its members' texts with msgspec (``dict[str, Raw]``,
  ``list[Raw]``: validated and sliced in C, with nothing inside built as Python objects);
- members whose texts are equal are identical and stay unparsed; the others are compared
  the same way one level down, and only what differs at the leaves is parsed;
- the reduced pair is built by the rules of :mod:`debugger.diff.prune` (the same keys in
  the same order keep only the differing ones; DeepDiff's threshold rule keeps enough
  identical keys, as real values shared by both sides; lists of scalars, lists compared
  without order and values of a changed type are handed over whole), so DeepDiff reports
  exactly what it reports on the whole states. An identical item of a list compared by
  position becomes one shared placeholder on both sides, which DeepDiff skips by identity
  (``_PrunedDeepDiff`` never even visits such a pair) and never reports.

Texts that differ while their values are identical (other whitespace, ``1.0`` and
``1.00``) are simply parsed and handed over: DeepDiff reports nothing for them. A text that
msgspec refuses (``NaN``, which DuckDB accepts) is diffed the parsed way.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

import msgspec

from debugger.diff.prune import child_path, reduced_dicts, reported_whole
from debugger.diff.states import (
    DiffOptions,
    Patterns,
    StateDiff,
    _PrunedDeepDiff,
    diff_states,
    rows_of,
)
from debugger.json_text import loads, too_deep

_Raw = msgspec.Raw
_OBJECT = msgspec.json.Decoder(dict[str, _Raw])
_ARRAY = msgspec.json.Decoder(list[_Raw])
_OPEN_OBJECT, _OPEN_ARRAY = ord("{"), ord("[")
_CONTAINERS = frozenset({_OPEN_OBJECT, _OPEN_ARRAY})


class _Same:
    """The placeholder for an identical item of a list compared by position."""

    def __repr__(self) -> str:
        return "<identical>"


SAME = _Same()
"""Shared by both sides wherever an item is identical, so DeepDiff skips it by identity."""


def _no_brackets(raw: _Raw) -> bool:
    """True when an array's text has no ``{`` or ``[`` past its own: its items are scalars.

    A C-level search; a bracket inside a string makes it False, and the items are then
    looked at one by one."""
    text = bytes(raw)
    return text.find(b"{", 1) < 0 and text.find(b"[", 1) < 0


def _opener(raw: _Raw) -> int:
    view = memoryview(raw)  # msgspec strips the whitespace around a member's text
    return view[0] if len(view) else 0


Splits = dict[tuple[Any, ...], Any]
"""A text's containers already split into their members' texts, by their place (the keys
and indices from the root)."""


@dataclass(frozen=True)
class StateText:
    """A state's JSON text, and what diffing it has split of it so far.

    Kept with the text (the Timeline keeps the checkpoints it steps through), it spares the
    next diff splitting the same containers again: stepping forward, the state just left is
    the old side, and it was split as the new side one step earlier.
    """

    text: str | bytes
    splits: Splits = field(default_factory=dict)


def diff_texts(
    old: str | bytes | StateText,
    new: str | bytes | StateText,
    ignore_paths: Patterns = (),
    ignore_order: Patterns = (),
) -> StateDiff:
    """:func:`debugger.diff.diff_states` of two states given as JSON texts.

    The rows are exactly those of ``diff_states(parse(old), parse(new), ...)`` (and so of
    plain DeepDiff on the parsed states), but only the branches whose texts differ are parsed.

    Raises:
        DiffOptionError: a pattern is malformed.
        DecodeError: a state nests too deeply to diff.
    """
    options = DiffOptions.build(ignore_paths, ignore_order)
    old, new = _state_text(old), _state_text(new)
    a, b = _Raw(old.text.strip()), _Raw(new.text.strip())
    if a == b:
        return StateDiff()
    pruner = _Pruner(options.ignores_order if options.orders else None, old.splits, new.splits)
    try:
        p_old, p_new = pruner.pair(a, b, "root", ())
    except (msgspec.DecodeError, ValueError):
        # not JSON msgspec reads (NaN, Infinity): the parsed way, which takes what DuckDB took
        return diff_states(loads(a), loads(b), ignore_paths, ignore_order)
    except RecursionError:  # a store from before the import's depth limit
        raise too_deep() from None
    return StateDiff(rows_of(_PrunedDeepDiff(p_old, p_new, **options.deepdiff_kwargs())))


def _state_text(value: str | bytes | StateText) -> StateText:
    return value if isinstance(value, StateText) else StateText(value)


class _Pruner:
    """One text pruning: the ignore-order matcher, applied at the paths DeepDiff builds, and
    the two texts' splits."""

    def __init__(self, ordered_off: Any, old_splits: Splits, new_splits: Splits) -> None:
        self.ordered_off = ordered_off
        self.splits = (old_splits, new_splits)

    def pair(self, a: _Raw, b: _Raw, path: str | None, at: tuple[Any, ...]) -> tuple[Any, Any]:
        """The reduced ``(old, new)`` of two member texts that differ, found at ``at``."""
        kind_a, kind_b = _opener(a), _opener(b)
        if kind_a == kind_b == _OPEN_OBJECT:
            return self._objects(a, b, path, at)
        if kind_a == kind_b == _OPEN_ARRAY:
            return self._arrays(a, b, path, at)
        return loads(a), loads(b)  # scalars, or a type change: reported with both values

    def _split(self, side: int, at: tuple[Any, ...], raw: _Raw, decoder: Any) -> Any:
        splits = self.splits[side]
        found = splits.get(at)
        if found is None:
            found = splits[at] = decoder.decode(raw)
        return found

    def _sub(self, path: str | None, key: Any) -> str | None:
        return child_path(path, key) if self.ordered_off else None

    def _objects(self, a: _Raw, b: _Raw, path: str | None, at: tuple[Any, ...]) -> tuple[Any, Any]:
        old = self._split(0, at, a, _OBJECT)
        new = self._split(1, at, b, _OBJECT)
        if len(old) == len(new) and list(old) == list(new):
            # every key is common (prune._prune_same_keys): only differing keys stay
            keys, same_old, same_new = list(old), {}, {}
            olds, news = list(old.values()), list(new.values())
            for i in compress(range(len(keys)), map(operator.ne, olds, news)):
                key = keys[i]
                sub = self._sub(path, key)
                same_old[key], same_new[key] = self.pair(olds[i], news[i], sub, (*at, key))
            return same_old, same_new
        common = len(old.keys() & new.keys())
        if reported_whole(common, len(old) + len(new) - common):
            return loads(a), loads(b)  # reported as one change carrying both whole dicts
        keys = [k for k in old if k in new]
        changed = {
            k: self.pair(old[k], new[k], self._sub(path, k), (*at, k))
            for k in keys
            if old[k] != new[k]
        }
        # texts that differ may still hold identical values: then they are simply handed
        # over parsed, which keeps DeepDiff's threshold decision (more common keys only)
        return reduced_dicts(old, new, keys, changed, loads)

    def _arrays(
        self, a: _Raw, b: _Raw, path: str | None, at: tuple[Any, ...]
    ) -> tuple[list[Any], list[Any]]:
        if self.ordered_off is not None and self.ordered_off(path):
            return loads(a), loads(b)  # compared as multisets: every item takes part
        if _no_brackets(a) and _no_brackets(b):
            return loads(a), loads(b)  # scalars only (see below), told without splitting
        old = self._split(0, at, a, _ARRAY)
        new = self._split(1, at, b, _ARRAY)
        if _CONTAINERS.isdisjoint(map(_opener, old)) and _CONTAINERS.isdisjoint(map(_opener, new)):
            # scalars only: DeepDiff aligns them with difflib, by equality, so all stay
            return loads(a), loads(b)
        # DeepDiff pairs items by position: identical ones become one shared placeholder
        n = min(len(old), len(new))
        p_old: list[Any] = [SAME] * n + [loads(r) for r in old[n:]]
        p_new: list[Any] = [SAME] * n + [loads(r) for r in new[n:]]
        for i in compress(range(n), map(operator.ne, old[:n], new[:n])):
            p_old[i], p_new[i] = self.pair(old[i], new[i], self._sub(path, i), (*at, i))
        return p_old, p_new
