"""The diff of two working states: DeepDiff's rows, computed on the branches that differ.

:func:`diff_states` returns exactly the rows ``DeepDiff(old, new, ...)`` gives with the same
options (same paths in DeepDiff's syntax ``root['a'][0]``, same kinds, same order), but first
drops identical subtrees (see :mod:`debugger.diff.prune`), so DeepDiff's work follows the
size of the change rather than the size of the states.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import is_not
from types import GeneratorType
from typing import Any

from deepdiff import DeepDiff
from deepdiff.helper import (
    ListItemRemovedOrAdded,
    Opcode,
    add_root_to_paths,
    notpresent,
    separate_wildcard_and_exact_paths,
)

from debugger.diff.prune import all_basic, identical, prune
from debugger.diff.sequence import opcodes as sequence_opcodes
from debugger.errors import StepscopeError
from debugger.json_text import too_deep

PathPattern = str | re.Pattern[str]
"""An exact DeepDiff path, a glob (``root['messages'][*]['ts']``, ``root[**]['ts']``), or a
regular expression (a compiled pattern, or a string starting with ``re:``)."""
Patterns = Iterable[PathPattern] | PathPattern
"""Several patterns, or one on its own."""


class DiffOptionError(StepscopeError):
    """An ignore or ignore-order pattern cannot be used."""

    title = "Bad diff option"


@dataclass(frozen=True)
class DiffRow:
    """One difference between two states, as DeepDiff reports it."""

    path: str
    """DeepDiff path, e.g. ``root['order']['items'][0]``."""
    kind: str
    """DeepDiff report type: values_changed, type_changes, dictionary_item_added, ..."""
    old: Any
    """Value on the old side (None when the kind is an addition)."""
    new: Any
    """Value on the new side (None when the kind is a removal)."""
    new_path: str | None = None
    """For ``iterable_item_moved`` only: where the item went."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with stable keys (``new_path`` only for moves)."""
        d = {"path": self.path, "kind": self.kind, "old": self.old, "new": self.new}
        if self.new_path is not None:
            d["new_path"] = self.new_path
        return d


class StateDiff(list[DiffRow]):
    """The rows of a state diff: a plain list that also renders itself in notebooks."""

    def _repr_html_(self) -> str:
        from debugger.views import diff_rows_html

        return diff_rows_html(self)


@dataclass(frozen=True)
class DiffOptions:
    """The ignore options, compiled once and passed to DeepDiff unchanged."""

    exclude_paths: tuple[str, ...] = ()
    exclude_regex_paths: tuple[re.Pattern[str], ...] = ()
    order_exact: frozenset[str] = frozenset()
    order_globs: tuple[Any, ...] = ()
    order_regexes: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def build(cls, ignore_paths: Patterns = (), ignore_order: Patterns = ()) -> DiffOptions:
        """Split patterns into DeepDiff's exact/glob paths and regular expressions.

        Raises:
            DiffOptionError: a regular expression does not compile, or a glob does not start
                with ``root``.
        """
        ex_paths, ex_regex = _split(ignore_paths)
        o_paths, o_regex = _split(ignore_order)
        try:
            exact, globs = separate_wildcard_and_exact_paths(set(o_paths))  # type: ignore[no-untyped-call]
        except ValueError as e:
            raise DiffOptionError(str(e), "write globs from the root: root[*]['items']") from e
        if ex_paths:
            try:
                separate_wildcard_and_exact_paths(set(ex_paths))  # type: ignore[no-untyped-call]
            except ValueError as e:
                raise DiffOptionError(str(e), "write globs from the root: root[**]['ts']") from e
        return cls(
            exclude_paths=tuple(ex_paths),
            exclude_regex_paths=tuple(ex_regex),
            order_exact=frozenset(add_root_to_paths(exact) or ()),
            order_globs=tuple(globs or ()),
            order_regexes=tuple(o_regex),
        )

    @property
    def orders(self) -> bool:
        """True when some list is compared without regard to order."""
        return bool(self.order_exact or self.order_globs or self.order_regexes)

    def ignores_order(self, path: str | None) -> bool:
        """True when the list at ``path`` is compared as a multiset."""
        if path is None:
            return False
        return (
            path in self.order_exact
            or any(g.match(path) for g in self.order_globs)
            or any(r.search(path) for r in self.order_regexes)
        )

    def deepdiff_kwargs(self) -> dict[str, Any]:
        """The keyword arguments that give plain DeepDiff the same options.

        DeepDiff leaves out dictionary keys that start with ``__`` unless told otherwise
        (``ignore_private_variables``, meant for Python objects' private attributes): a
        state's ``__meta__``, a LangGraph message's ``__type__``, the functional API's
        saved history (``metadata.internal_channels.__previous__``) would change unseen.
        """
        kwargs: dict[str, Any] = {"verbose_level": 2, "ignore_private_variables": False}
        if self.exclude_paths:
            kwargs["exclude_paths"] = list(self.exclude_paths)
        if self.exclude_regex_paths:
            kwargs["exclude_regex_paths"] = list(self.exclude_regex_paths)
        if self.orders:
            kwargs["ignore_order_func"] = lambda level: self.ignores_order(level.path())
        return kwargs


def as_patterns(patterns: Patterns) -> list[PathPattern]:
    """A list of patterns; one pattern given alone (a str is iterable too) becomes a list."""
    if isinstance(patterns, (str, re.Pattern)):
        return [patterns]
    return list(patterns)


def _split(patterns: Patterns) -> tuple[list[str], list[re.Pattern[str]]]:
    patterns = as_patterns(patterns)
    paths: list[str] = []
    regexes: list[re.Pattern[str]] = []
    for p in patterns:
        if isinstance(p, re.Pattern):
            regexes.append(p)
        elif p.startswith("re:"):
            try:
                regexes.append(re.compile(p[3:]))
            except re.error as e:
                raise DiffOptionError(
                    f"bad regular expression {p[3:]!r}: {e}", "check the pattern after 're:'"
                ) from e
        elif p.strip():
            paths.append(p.strip())
    return paths, regexes


class _PrunedDeepDiff(DeepDiff):  # type: ignore[misc]
    """DeepDiff that does not even visit list items it would skip by identity, and aligns
    lists of scalars without running difflib over their common ends.

    Positional list comparison pairs item i with item i; for a pair whose two sides are the
    same object, DeepDiff creates a child level and then returns at its ``t1 is t2`` check,
    reporting nothing. Pruning makes every identical item such a pair, so dropping those
    pairs up front changes no result and saves the per-item level objects (most of the time
    on a state with thousands of messages). The pairs are found with C-level ``map`` and
    ``compress``, so the thousands of skipped ones cost no Python loop either.
    """

    def _compare_in_order(
        self,
        level: Any,
        t1_from_index: int | None = None,
        t1_to_index: int | None = None,
        t2_from_index: int | None = None,
        t2_to_index: int | None = None,
    ) -> list[Any]:
        # DeepDiff's own pairing (zip_longest from the given offsets), minus same-index
        # pairs of one object, which DeepDiff would visit and report nothing for.
        if t1_from_index is None or t2_from_index is None:
            t1, t2, off1, off2 = level.t1, level.t2, 0, 0
        else:
            t1 = level.t1[t1_from_index:t1_to_index]
            t2 = level.t2[t2_from_index:t2_to_index]
            off1, off2 = t1_from_index, t2_from_index
        t1, t2 = list(t1), list(t2)
        n = min(len(t1), len(t2))
        keep: Iterable[int] = range(n)
        if off1 == off2:
            keep = compress(range(n), map(is_not, t1, t2))
        pairs = [((k + off1, k + off2), (t1[k], t2[k])) for k in keep]
        gone = ListItemRemovedOrAdded  # zip_longest's fill value for the longer side's tail
        for k in range(n, max(len(t1), len(t2))):
            x, y = (t1[k], gone) if k < len(t1) else (gone, t2[k])
            pairs.append(((k + off1, k + off2), (x, y)))
        return pairs

    def _all_values_basic_hashable(self, iterable: Any) -> bool:
        # DeepDiff's test (every item an instance of basic_types; never a generator), decided
        # on the set of item types in C rather than a Python loop over thousands of items.
        if isinstance(iterable, GeneratorType):
            return False
        return all_basic(iterable)

    def _diff_ordered_iterable_by_difflib(
        self,
        level: Any,
        local_tree: Any,
        parents_ids: frozenset[int] = frozenset(),
        _original_type: Any = None,
        child_relationship_class: Any = None,
    ) -> list[Opcode]:
        # DeepDiff's method (deepdiff 8-9) with difflib's opcodes from debugger.diff.sequence,
        # which are exactly difflib's; the rest is DeepDiff's body unchanged.
        t1, t2 = level.t1, level.t2
        out = []
        for tag, i1, i2, j1, j2 in sequence_opcodes(t1, t2):
            if tag == "equal":
                out.append(Opcode(tag, i1, i2, j1, j2))
                continue
            out.append(Opcode(tag, i1, i2, j1, j2, old_values=t1[i1:i2], new_values=t2[j1:j2]))
            if tag == "replace":
                self._diff_by_forming_pairs_and_comparing_one_by_one(  # type: ignore[no-untyped-call]
                    level,
                    local_tree=local_tree,
                    parents_ids=parents_ids,
                    _original_type=_original_type,
                    child_relationship_class=child_relationship_class,
                    t1_from_index=i1,
                    t1_to_index=i2,
                    t2_from_index=j1,
                    t2_to_index=j2,
                )
            elif tag == "delete":
                for index, x in enumerate(t1[i1:i2]):
                    change = level.branch_deeper(
                        x,
                        notpresent,
                        child_relationship_class=child_relationship_class,
                        child_relationship_param=index + i1,
                        child_relationship_param2=index + i1,
                    )
                    self._report_result(  # type: ignore[no-untyped-call]
                        "iterable_item_removed", change, local_tree=local_tree
                    )
            elif tag == "insert":
                for index, y in enumerate(t2[j1:j2]):
                    change = level.branch_deeper(
                        notpresent,
                        y,
                        child_relationship_class=child_relationship_class,
                        child_relationship_param=index + j1,
                        child_relationship_param2=index + j1,
                    )
                    self._report_result(  # type: ignore[no-untyped-call]
                        "iterable_item_added", change, local_tree=local_tree
                    )
        return out


def diff_states(
    old: Any,
    new: Any,
    ignore_paths: Patterns = (),
    ignore_order: Patterns = (),
) -> StateDiff:
    """The differences between two working states, exactly as plain DeepDiff reports them.

    Identical subtrees are pruned first, and DeepDiff runs on what is left; the rows equal
    :func:`plain_deepdiff_rows` on the same arguments.

    Args:
        old: the earlier (or original) state.
        new: the later (or replayed) state.
        ignore_paths: paths to leave out, for noisy fields such as timestamps: exact
            (``root['updated_at']``), glob (``root['messages'][*]['ts']``, ``root[**]['ts']``)
            or regular expression (``re:\\['ts'\\]$`` or a compiled pattern).
        ignore_order: lists compared as multisets, in the same pattern syntax
            (``root['tags']``); every other list is compared by position, as DeepDiff does.

    Returns:
        A :class:`StateDiff`: a list of :class:`DiffRow` in DeepDiff's order.

    Raises:
        DiffOptionError: a pattern is malformed.
        DecodeError: a state nests too deeply to diff (a store from before the import's
            depth limit).

    Example:
        >>> diff_states({"a": 1, "b": [1]}, {"a": 1.0, "b": [1, 2]})[0]
        DiffRow(path="root['a']", kind='type_changes', old=1, new=1.0, new_path=None)
    """
    options = DiffOptions.build(ignore_paths, ignore_order)
    try:
        if identical(old, new):
            return StateDiff()
        p_old, p_new = prune(old, new, options.ignores_order if options.orders else None)
        return StateDiff(rows_of(_PrunedDeepDiff(p_old, p_new, **options.deepdiff_kwargs())))
    except RecursionError:
        raise too_deep() from None


def plain_deepdiff_rows(
    old: Any,
    new: Any,
    ignore_paths: Patterns = (),
    ignore_order: Patterns = (),
) -> StateDiff:
    """Plain DeepDiff on the whole pair, as rows: the reference :func:`diff_states` matches.

    Kept public so tests, the benchmark and sceptical users can compare the two.
    """
    options = DiffOptions.build(ignore_paths, ignore_order)
    return StateDiff(rows_of(DeepDiff(old, new, **options.deepdiff_kwargs())))


def rows_of(result: DeepDiff) -> Iterator[DiffRow]:
    """Flatten DeepDiff's text view (``verbose_level=2``) into rows, in its order."""
    for kind, report in result.items():
        if isinstance(report, dict):
            for path, entry in report.items():
                yield _row(str(path), kind, entry)
        else:  # sets of paths (set items, unprocessed): no values to show
            for path in report:
                yield DiffRow(str(path), kind, None, None)


def _row(path: str, kind: str, entry: Any) -> DiffRow:
    if isinstance(entry, dict) and ("old_value" in entry or "new_value" in entry):
        return DiffRow(path, kind, entry.get("old_value"), entry.get("new_value"))
    if isinstance(entry, dict) and "new_path" in entry:
        value = entry.get("value")
        return DiffRow(path, kind, value, value, new_path=str(entry["new_path"]))
    if kind.endswith("_added"):
        return DiffRow(path, kind, None, entry)
    if kind.endswith("_removed"):
        return DiffRow(path, kind, entry, None)
    return DiffRow(path, kind, entry, entry)


def count_by_kind(rows: Sequence[DiffRow]) -> dict[str, int]:
    """Number of rows of each kind, in first-seen order (for summaries)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    return counts
