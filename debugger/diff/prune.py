"""Pruning of identical subtrees, so DeepDiff walks only the branches that differ.

DeepDiff skips a subtree only when both sides are the *same object*; states parsed from a
database never share objects, so plain DeepDiff walks every node of both states. This module
builds a pair of reduced trees that DeepDiff reports exactly the same rows for:

- a subtree whose two sides are strictly identical (same types at every node, same
  serialized bytes, and ``==``) is dropped from a dict, or, where dropping would
  change what DeepDiff sees, replaced on the new side by the old side's object, which
  DeepDiff skips by identity;
- dict keys are kept in their original order, so DeepDiff discovers changes in the same order;
- DeepDiff's ``threshold_to_diff_deeper`` rule (a dict whose keys overlap by less than a third
  is reported as one changed value) depends on the number of common keys, so enough identical
  keys stay behind as same-object placeholders to keep the rule's decision unchanged;
- list indices are paths, so identical list items are never removed, only replaced by the old
  side's object; lists compared without order are handed over whole, because every item
  takes part in the pairing. Lists DeepDiff aligns with difflib (every item a scalar) keep
  every item too, with identical ones replaced by the old side's object: difflib matches
  items by equality, so the same values in other objects align exactly as before, while
  DeepDiff's item-by-item pass then skips them by identity.

Strict identity never uses plain ``==`` alone: ``1 == 1.0 == True`` in Python, while DeepDiff
reports them as type changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from deepdiff.helper import basic_types
from deepdiff.model import DictRelationship

THRESHOLD = 0.33
"""DeepDiff's default ``threshold_to_diff_deeper``; the pruner must make the same decision."""

_DUMP_OPTS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_PLAIN_TYPES = _SCALAR_TYPES | {dict, list}
_dumps = orjson.dumps

CHUNK = 32
"""Sibling pairs tested at once by :func:`differing`: one ``==`` and one serialization
per chunk instead of per pair. A state's large dicts and lists (thousands of messages or
orders) are mostly unchanged from one step to the next, and testing their children one by one
cost two ``orjson.dumps`` calls and a Python call per child."""

OrderMatcher = Callable[[str | None], bool]
"""True when the list at this DeepDiff path is compared without regard to order."""


def identical(a: Any, b: Any) -> bool:
    """True when DeepDiff is certain to report nothing between ``a`` and ``b``.

    Scalars: same exact type and equal. Containers: same exact type, equal with ``==`` (cheap
    when they differ early; also tells a tuple from a list and NaN from None, which serialize
    alike) and byte-identical when serialized (which tells 1, 1.0 and True apart at any
    depth). Anything orjson cannot serialize natively is never called identical, which is
    always safe: it only means DeepDiff looks at it.
    """
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is float:  # 0.0 == -0.0, but they print apart where a list shows either side
        return bool(a == b) and math.copysign(1.0, a) == math.copysign(1.0, b)
    if kind in _SCALAR_TYPES:
        return bool(a == b)
    if (kind is not dict and kind is not list) or a != b:
        return False
    try:
        return _dumps(a, option=_DUMP_OPTS) == _dumps(b, option=_DUMP_OPTS)
    except (TypeError, ValueError, RecursionError):
        return False


def _serialized(items: list[Any]) -> bytes | None:
    """The bytes of plain JSON values (the caller checked their types), None if orjson fails."""
    try:
        return _dumps(items, option=_DUMP_OPTS)
    except (TypeError, ValueError, RecursionError):
        return None


def differing(olds: list[Any], news: list[Any], known_unequal: bool = False) -> list[int]:
    """Indices ``i`` where ``identical(olds[i], news[i])`` is false (equal-length lists).

    Pairs are tested a chunk at a time: a chunk whose items are all plain JSON types, equal
    with ``==`` and byte-identical when serialized as one list holds identical pairs only (a
    JSON array's text splits into its items' texts one way, so equal list bytes mean equal
    item bytes). Only a chunk that fails is tested pair by pair, so a large container with a
    few changes costs a few C-level comparisons and serializations, not thousands of calls,
    and the caller loops over the few changed indices, not over every sibling.
    ``known_unequal`` says the two lists as a whole are known not to be identical: a single
    chunk then cannot pass, and serializing it (the whole state, at the root) is skipped.
    """
    out: list[int] = []
    whole = known_unequal and len(olds) <= CHUNK
    for start in range(0, len(olds), CHUNK):
        a, b = olds[start : start + CHUNK], news[start : start + CHUNK]
        if len(a) > 1 and not whole and _chunk_identical(a, b):
            continue
        pairs = enumerate(zip(a, b, strict=True))
        out += [start + i for i, (x, y) in pairs if not identical(x, y)]
    return out


def _chunk_identical(a: list[Any], b: list[Any]) -> bool:
    """True when every pair of the two chunks is identical (see :func:`identical`)."""
    if not set(map(type, a)) <= _PLAIN_TYPES or not set(map(type, b)) <= _PLAIN_TYPES:
        return False
    if a != b:  # cheap when they differ early; also tells NaN from None, which serialize alike
        return False
    old = _serialized(a)
    return old is not None and old == _serialized(b)


def prune(old: Any, new: Any, ordered_off: OrderMatcher | None) -> tuple[Any, Any]:
    """Return reduced ``(old, new)`` that DeepDiff diffs exactly like the originals.

    The caller has already established that ``old`` and ``new`` are not identical.

    Args:
        old: the old value.
        new: the new value.
        ordered_off: the ignore-order matcher, or None when no list ignores order (then no
            path strings are built at all).
    """
    return _prune(old, new, "root", _Walk(ordered_off))


@dataclass(frozen=True)
class _Walk:
    """What every level of one pruning needs: the ignore-order matcher."""

    ordered_off: OrderMatcher | None


def child_path(path: str | None, key: Any) -> str | None:
    # The exact string DeepDiff's DiffLevel.path() builds, so the ignore-order matcher sees
    # the same paths here as inside DeepDiff.
    if path is None:
        return None
    item = DictRelationship(None, None, key).get_param_repr()
    return path + item if item else None


def _prune(old: Any, new: Any, path: str | None, walk: _Walk) -> tuple[Any, Any]:
    if type(old) is dict and type(new) is dict:
        return _prune_dict(old, new, path, walk)
    if type(old) is list and type(new) is list:
        return _prune_list(old, new, path, walk)
    return old, new


def _prune_dict(
    old: dict[Any, Any], new: dict[Any, Any], path: str | None, walk: _Walk
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    if len(old) == len(new) and list(old) == list(new):
        # The same keys in the same order (list equality is dict key equality: identity,
        # then ==): every key is common, so the threshold rule cannot apply.
        return _prune_same_keys(old, new, path, walk)
    common = len(old.keys() & new.keys())
    if reported_whole(common, len(old) + len(new) - common):
        # DeepDiff reports this dict as one values_changed with both whole dicts as values
        # (or, when exclusions shrink its union, descends): hand it over untouched.
        return old, new
    keys = [key for key in old if key in new]
    changed: dict[Any, tuple[Any, Any]] = {}
    for i in differing([old[k] for k in keys], [new[k] for k in keys]):
        sub = child_path(path, keys[i]) if walk.ordered_off else None
        changed[keys[i]] = _prune(old[keys[i]], new[keys[i]], sub, walk)
    return reduced_dicts(old, new, keys, changed)


def reduced_dicts(
    old: dict[Any, Any],
    new: dict[Any, Any],
    common_keys: list[Any],
    changed: dict[Any, tuple[Any, Any]],
    value: Callable[[Any], Any] = lambda v: v,
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """The reduced pair of two dicts whose key sets differ (but not so much that DeepDiff
    reports them whole): the changed keys' reduced values, the keys on one side only, and
    enough identical keys for DeepDiff's threshold rule to decide as before, each of those
    one object shared by both sides.

    ``changed`` maps every common key that may differ to its reduced pair; the other common
    keys are identical. ``value`` turns a side's value into what DeepDiff is given (the
    text pruning of :mod:`debugger.diff.text` parses member texts with it).
    """
    only = len(old) + len(new) - 2 * len(common_keys)
    same = len(common_keys) - len(changed)
    needed = _placeholders_needed(len(changed), same, only)
    keep = {k: value(old[k]) for k in [k for k in common_keys if k not in changed][:needed]}
    p_old: dict[Any, Any] = {}
    for key, v in old.items():
        if key in changed:
            p_old[key] = changed[key][0]
        elif key in keep:
            p_old[key] = keep[key]
        elif key not in new:
            p_old[key] = value(v)
    p_new: dict[Any, Any] = {}
    for key, v in new.items():
        if key in changed:
            p_new[key] = changed[key][1]
        elif key in keep:
            p_new[key] = keep[key]  # the same object: DeepDiff skips it by identity
        elif key not in old:
            p_new[key] = value(v)
    return p_old, p_new


def _prune_same_keys(
    old: dict[Any, Any], new: dict[Any, Any], path: str | None, walk: _Walk
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """:func:`_prune_dict` for the common case of the same keys in the same order.

    No key is on one side only, so the threshold rule needs no placeholders and both reduced
    dicts hold the differing keys alone, in the original order; each side keeps its own key
    objects (``1`` and ``1.0`` are the same key but print apart in DeepDiff's paths). Only
    the differing keys are visited in Python, not the thousands of identical siblings.
    """
    old_keys, new_keys = list(old), list(new)
    olds, news = list(old.values()), list(new.values())
    p_old: dict[Any, Any] = {}
    p_new: dict[Any, Any] = {}
    # The caller found this pair not identical, so with the same keys the values differ.
    for i in differing(olds, news, known_unequal=True):
        sub = child_path(path, old_keys[i]) if walk.ordered_off else None
        p_old[old_keys[i]], p_new[new_keys[i]] = _prune(olds[i], news[i], sub, walk)
    return p_old, p_new


def reported_whole(common: int, union: int) -> bool:
    """DeepDiff's ``threshold_to_diff_deeper`` rule, before exclusions shrink the union."""
    return union > 1 and common / union < THRESHOLD


def _placeholders_needed(changed: int, same: int, only: int) -> int:
    """How many identical keys must stay so DeepDiff's threshold rule decides as before.

    Called only for a dict that does not trigger the rule (:func:`reported_whole` is
    false); the reduced dict must not trigger it either, so the fewest identical keys that
    hold the ratio at or above the threshold stay. Exclusions only shrink DeepDiff's union,
    never its common count, so a ratio that holds without them holds with them.
    """
    m = 0
    while m < same and reported_whole(changed + m, changed + only + m):
        m += 1
    return m


def all_basic(items: Iterable[Any]) -> bool:
    """DeepDiff's test for difflib, ``all(isinstance(x, basic_types) ...)``, decided on the
    set of item types first (C-level) and item by item only when that is not conclusive
    (an object may claim a basic ``__class__``); that loop stops at the first other item.

    ``items`` must be re-iterable (a list or other sequence, never a generator)."""
    if all(issubclass(kind, basic_types) for kind in set(map(type, items))):
        return True
    return all(isinstance(x, basic_types) for x in items)


def _prune_list(
    old: list[Any], new: list[Any], path: str | None, walk: _Walk
) -> tuple[list[Any], list[Any]]:
    if walk.ordered_off is not None and walk.ordered_off(path):
        return old, new  # compared as multisets: every item takes part in the pairing
    n = min(len(old), len(new))
    changed = differing(old[:n], new[:n], len(old) == len(new))
    # Identical items become the old side's objects (slices: no Python loop over them).
    p_new = old[:n] + new[n:]
    if all_basic(old) and all_basic(new):
        # DeepDiff aligns the whole sequences with difflib, which matches items by equality:
        # every item stays, and scalars have nothing inside to prune.
        for i in changed:
            p_new[i] = new[i]
        return old, p_new
    # Otherwise DeepDiff pairs items by position (zip_longest): index i against index i.
    p_old = list(old)
    for i in changed:
        sub = child_path(path, i) if walk.ordered_off else None
        p_old[i], p_new[i] = _prune(old[i], new[i], sub, walk)
    return p_old, p_new
