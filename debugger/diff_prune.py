"""Pruning of identical subtrees, so DeepDiff walks only the branches that differ.

DeepDiff skips a subtree only when both sides are the *same object*; states parsed from a
database never share objects, so plain DeepDiff walks every node of both states. This module
builds a pair of reduced trees that DeepDiff reports exactly the same rows for:

- a subtree whose two sides are strictly identical (same types at every node, same
  serialized bytes, and ``==``) is dropped from a dict, or, where dropping would change what
  DeepDiff sees, replaced on the new side by the old side's object, which DeepDiff skips by
  identity;
- dict keys are kept in their original order, so DeepDiff discovers changes in the same order;
- DeepDiff's ``threshold_to_diff_deeper`` rule (a dict whose keys overlap by less than a third
  is reported as one changed value) depends on the number of common keys, so enough identical
  keys stay behind as same-object placeholders to keep the rule's decision unchanged;
- list indices are paths, so identical list items are never removed, only replaced by the old
  side's object; lists DeepDiff compares with difflib (every item a scalar) or without order
  are handed over whole, because their result depends on every item.

Strict identity never uses plain ``==`` alone: ``1 == 1.0 == True`` in Python, while DeepDiff
reports them as type changes.
"""

from __future__ import annotations

from collections.abc import Callable
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
_dumps = orjson.dumps

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
    if kind in _SCALAR_TYPES:
        return bool(a == b)
    if (kind is not dict and kind is not list) or a != b:
        return False
    try:
        return _dumps(a, option=_DUMP_OPTS) == _dumps(b, option=_DUMP_OPTS)
    except (TypeError, ValueError, RecursionError):
        return False


def prune(old: Any, new: Any, ordered_off: OrderMatcher | None) -> tuple[Any, Any]:
    """Return reduced ``(old, new)`` that DeepDiff diffs exactly like the originals.

    The caller has already established that ``old`` and ``new`` are not identical.

    Args:
        old: the old value.
        new: the new value.
        ordered_off: the ignore-order matcher, or None when no list ignores order (then no
            path strings are built at all).
    """
    return _prune(old, new, "root", ordered_off)


def _child_path(path: str | None, key: Any) -> str | None:
    # The exact string DeepDiff's DiffLevel.path() builds, so the ignore-order matcher sees
    # the same paths here as inside DeepDiff.
    if path is None:
        return None
    item = DictRelationship(None, None, key).get_param_repr()
    return path + item if item else None


def _prune(
    old: Any, new: Any, path: str | None, ordered_off: OrderMatcher | None
) -> tuple[Any, Any]:
    if type(old) is dict and type(new) is dict:
        return _prune_dict(old, new, path, ordered_off)
    if type(old) is list and type(new) is list:
        return _prune_list(old, new, path, ordered_off)
    return old, new


def _prune_dict(
    old: dict[Any, Any], new: dict[Any, Any], path: str | None, ordered_off: OrderMatcher | None
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    common = sum(1 for key in old if key in new)
    if _reported_whole(common, len(old) + len(new) - common):
        # DeepDiff reports this dict as one values_changed with both whole dicts as values
        # (or, when exclusions shrink its union, descends): hand it over untouched.
        return old, new
    same: list[Any] = []
    changed: dict[Any, tuple[Any, Any]] = {}
    for key, value in old.items():
        if key in new:
            if identical(value, new[key]):
                same.append(key)
            else:
                sub = _child_path(path, key) if ordered_off else None
                changed[key] = _prune(value, new[key], sub, ordered_off)
    only = len(old) + len(new) - 2 * common
    keep = set(same[: _placeholders_needed(len(changed), len(same), only)])
    p_old: dict[Any, Any] = {}
    for key, value in old.items():
        if key in changed:
            p_old[key] = changed[key][0]
        elif key in keep or key not in new:
            p_old[key] = value
    p_new: dict[Any, Any] = {}
    for key, value in new.items():
        if key in changed:
            p_new[key] = changed[key][1]
        elif key in keep:
            p_new[key] = old[key]  # the same object: DeepDiff skips it by identity
        elif key not in old:
            p_new[key] = value
    return p_old, p_new


def _reported_whole(common: int, union: int) -> bool:
    """DeepDiff's ``threshold_to_diff_deeper`` rule, before exclusions shrink the union."""
    return union > 1 and common / union < THRESHOLD


def _placeholders_needed(changed: int, same: int, only: int) -> int:
    """How many identical keys must stay so DeepDiff's threshold rule decides as before.

    Called only for a dict that does not trigger the rule (:func:`_reported_whole` is
    false); the reduced dict must not trigger it either, so the fewest identical keys that
    hold the ratio at or above the threshold stay. Exclusions only shrink DeepDiff's union,
    never its common count, so a ratio that holds without them holds with them.
    """
    m = 0
    while m < same and _reported_whole(changed + m, changed + only + m):
        m += 1
    return m


def _prune_list(
    old: list[Any], new: list[Any], path: str | None, ordered_off: OrderMatcher | None
) -> tuple[list[Any], list[Any]]:
    if ordered_off is not None and ordered_off(path):
        return old, new  # compared as multisets: every item takes part in the pairing
    if all(isinstance(x, basic_types) for x in old) and all(
        isinstance(x, basic_types) for x in new
    ):
        return old, new  # DeepDiff runs difflib over the whole sequences
    # Otherwise DeepDiff pairs items by position (zip_longest): index i against index i.
    p_new = list(new)
    p_old = list(old)
    for i in range(min(len(old), len(new))):
        if identical(old[i], new[i]):
            p_new[i] = old[i]
        else:
            sub = _child_path(path, i) if ordered_off else None
            p_old[i], p_new[i] = _prune(old[i], new[i], sub, ordered_off)
    return p_old, p_new
