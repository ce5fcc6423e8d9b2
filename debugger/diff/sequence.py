"""difflib's alignment of two lists of scalars, computed on the part between their common ends.

DeepDiff aligns a list whose items are all scalars with ``difflib.SequenceMatcher``
(``autojunk=False``), which indexes every item of the new list and searches the whole pair
for its longest common block, then again on each side of it. On a state's long list of
notes or ids with one change a step, that is work on the whole list for a one-item answer.

:func:`opcodes` returns exactly ``SequenceMatcher(None, a, b, autojunk=False).get_opcodes()``
but hands difflib only the middle left when the common prefix and suffix are taken off, when
that provably gives the same blocks. Why it does, with ``P`` and ``S`` the lengths of the
common prefix and (of what remains) the common suffix, and every item of both ends occurring
once in ``a`` and once in ``b`` (the condition checked):

- an end item matches only its own counterpart, so every match difflib can use is on the
  prefix diagonal, on the suffix diagonal, or inside the middle rectangle; a run of matches
  never crosses from the middle into an end (it would have extended the prefix or suffix);
- difflib takes the longest run, ties to the smallest index in ``a``, then in ``b``. If that
  is the prefix or the suffix, what remains is the same shape with that end removed; if it
  is a run in the middle, it is the run difflib picks on the middle alone (same runs, same
  order), and each side of it is again an end plus part of the middle. By induction on the
  rectangle's size, the blocks are the prefix, difflib's blocks of the middle (shifted by
  ``P``) and the suffix; none of them touch, so merging adjacent blocks changes nothing.

Only plain JSON scalars (str, int, float, bool, None) take the short way: for them ``==``
implies equal hashes and, with the identity check dicts and lists make first, is an
equivalence, which the argument needs. Anything else goes to difflib unchanged.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

Opcode = tuple[str, int, int, int, int]
"""``(tag, i1, i2, j1, j2)`` as ``difflib.SequenceMatcher.get_opcodes`` gives it."""
Block = tuple[int, int, int]
"""``(i, j, size)``: ``a[i:i+size] == b[j:j+size]``, as ``get_matching_blocks`` gives it."""

_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def opcodes(a: Sequence[Any], b: Sequence[Any]) -> list[Opcode]:
    """``difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()``, exactly."""
    return opcodes_of(matching_blocks(a, b))


def matching_blocks(a: Sequence[Any], b: Sequence[Any]) -> list[Block]:
    """``SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()`` as tuples."""
    cut = _ends(a, b)
    if cut is None:
        return _difflib_blocks(a, b)
    prefix, suffix = cut
    middle = _difflib_blocks(a[prefix : len(a) - suffix], b[prefix : len(b) - suffix])
    blocks = [(prefix + i, prefix + j, k) for i, j, k in middle[:-1]]
    if prefix:
        blocks.insert(0, (0, 0, prefix))
    if suffix:
        blocks.append((len(a) - suffix, len(b) - suffix, suffix))
    blocks.append((len(a), len(b), 0))
    return blocks


def _difflib_blocks(a: Sequence[Any], b: Sequence[Any]) -> list[Block]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(m.a, m.b, m.size) for m in matcher.get_matching_blocks()]


def _ends(a: Sequence[Any], b: Sequence[Any]) -> tuple[int, int] | None:
    """``(P, S)`` when the short way applies (see the module docstring), else None."""
    if not (_json_scalars(a) and _json_scalars(b)):
        return None
    a, b = list(a), list(b)
    prefix = _common_prefix(a, b)
    suffix = _common_prefix(a[prefix:][::-1], b[prefix:][::-1])
    if not prefix + suffix:
        return None  # no common end: difflib has nothing to skip
    ends = a[:prefix] + a[len(a) - suffix :]
    seen = set(ends)
    once = len(seen) == len(ends)
    if not (once and seen.isdisjoint(a[prefix : len(a) - suffix])):
        return None
    if not seen.isdisjoint(b[prefix : len(b) - suffix]):
        return None
    return prefix, suffix


def _json_scalars(items: Sequence[Any]) -> bool:
    return set(map(type, items)) <= _JSON_SCALARS


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    """Length of the longest common prefix, by list equality (identity, then ``==``).

    Galloping then bisecting over slices keeps the comparisons in C: a few slice
    comparisons instead of a Python loop over thousands of items.
    """
    limit = min(len(a), len(b))
    low, step = 0, 1  # a[:low] == b[:low] holds
    while low < limit:
        high = min(low + step, limit)
        if a[low:high] != b[low:high]:
            break
        low, step = high, step * 2
    else:
        return limit
    high = min(low + step, limit)  # a[low:high] differs somewhere
    while high - low > 1:
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


def opcodes_of(blocks: list[Block]) -> list[Opcode]:
    """difflib's ``get_opcodes`` from its matching blocks (the same rule, stated once here;
    the last block is the ``(len(a), len(b), 0)`` sentinel)."""
    i = j = 0
    out: list[Opcode] = []
    for ai, bj, size in blocks:
        tag = ""
        if i < ai and j < bj:
            tag = "replace"
        elif i < ai:
            tag = "delete"
        elif j < bj:
            tag = "insert"
        if tag:
            out.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            out.append(("equal", ai, i, bj, j))
    return out
