"""The Diff page's data: two checkpoints (any runs, originals and replays) compared."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from debugger.diff import CheckpointSpec, diff_refs
from debugger.pages_data.recent import gc_paused
from debugger.pages_data.timeline import StepRef, diff_rows, find_ref
from debugger.report.split import split_lines
from debugger.store import Store


def parse_patterns(text: str) -> tuple[str, ...]:
    """The ignore patterns typed in a text box: separated by commas or newlines, blanks dropped.

    Args:
        text: what the user typed.

    Returns:
        The patterns, stripped, in the order typed.
    """
    return tuple(p.strip() for p in text.replace("\n", ",").split(",") if p.strip())


def default_position(
    refs: list[StepRef], run_id: str, spec: CheckpointSpec | None, offset: int
) -> int:
    """Which checkpoint a side's picker starts on.

    Args:
        refs: the run's checkpoints, in step order (not empty).
        run_id: the run picked on this side.
        spec: the side given in the URL, if any.
        offset: from the last checkpoint when the URL names none of this run's (-1: the one
            before the last).

    Returns:
        An index into ``refs``.
    """
    if spec is not None and spec.run_id == run_id:
        return find_ref(refs, spec.step, spec.checkpoint_id)
    return max(len(refs) - 1 + offset, 0)


KIND_WORDS = {
    "values_changed": "changed",
    "type_changes": "type changed",
    "dictionary_item_added": "key added",
    "dictionary_item_removed": "key removed",
    "iterable_item_added": "item added",
    "iterable_item_removed": "item removed",
    "set_item_added": "set item added",
    "set_item_removed": "set item removed",
    "attribute_added": "attribute added",
    "attribute_removed": "attribute removed",
}
"""DeepDiff's kinds in a diff summary's counts, as a reviewer reads them on the page (the
CLI and the JSON keep DeepDiff's names, which scripts match)."""


def split_summary(summary: str) -> tuple[str, str]:
    """The page's heading and caption from a diff's one-line summary.

    Args:
        summary: :meth:`debugger.diff.CheckpointDiff.summary`, ``"TITLE: COUNTS"``.

    Returns:
        ``(title, counts)``; counts is ``"no differences"`` when the summary has none.
    """
    title, _, counts = summary.partition(": ")
    for kind, words in KIND_WORDS.items():
        counts = counts.replace(f" {kind}", f" {words}")
    return title, counts or "no differences"


def diff_view(
    store: Store,
    a: CheckpointSpec,
    b: CheckpointSpec,
    ignore_paths: tuple[str, ...] = (),
    ignore_order: tuple[str, ...] = (),
    limit: int = 1000,
) -> dict[str, Any]:
    """The Diff page's data for two checkpoints (any runs, originals and replays).

    Returns:
        A JSON-ready dict: ``a``/``b`` (refs), ``summary``, ``total`` state rows, ``rows``
        (previews, at most ``limit``), ``budgets``, ``effects`` and ``metadata`` changes, and
        ``split``: both whole states pretty-printed and aligned line by line for the
        side-by-side view (:func:`debugger.report.split.split_lines`, which the incident
        report's diff uses too).

    Raises:
        NotFound: a run, step or checkpoint does not exist.
        DiffOptionError: an ignore pattern is malformed.
    """
    with gc_paused():
        cd = diff_refs(store, a, b, ignore_paths, ignore_order)
    shown = cd.state[:limit]
    old = store.checkpoint(cd.a.run_id, checkpoint_id=cd.a.checkpoint_id).working_state
    new = store.checkpoint(cd.b.run_id, checkpoint_id=cd.b.checkpoint_id).working_state
    return {
        "a": cd.a.to_dict(),
        "b": cd.b.to_dict(),
        "summary": cd.summary(),
        "total": len(cd.state),
        "rows": diff_rows(shown, limit),
        "budgets": [x.to_dict() for x in cd.budgets],
        "effects": [
            {k: v for k, v in e.to_dict().items() if k not in ("old", "new")} for e in cd.effects
        ],
        "metadata": diff_rows(cd.metadata, limit),
        "split": [asdict(line) for line in split_lines(old, new)],
    }
