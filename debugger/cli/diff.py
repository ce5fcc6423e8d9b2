"""``stepscope diff RUN:STEP RUN:STEP``: the checkpoint diff on the command line.

A thin layer over :func:`debugger.diff.diff_refs`.
"""

from __future__ import annotations

from typing import Any

import click

from debugger.cli.support import command, emit_json, open_store
from debugger.diff import CheckpointDiff, DiffRow, diff_refs, parse_spec
from debugger.json_text import preview

VALUE_WIDTH = 48
"""Widest old/new value in the text table; --json has the full values."""


@command("diff")
@click.argument("old", metavar="RUN:STEP")
@click.argument("new", metavar="RUN:STEP")
@click.option("--ignore", "ignore_paths", multiple=True, metavar="PATH",
              help="Leave out this state path: exact, glob (root[*]['ts']) or re:REGEX. "
              "Repeatable.")  # fmt: skip
@click.option("--ignore-order", "ignore_order", multiple=True, metavar="PATH",
              help="Compare the list at this path as a multiset. Repeatable.")  # fmt: skip
def cmd(
    store_path: str | None,
    as_json: bool,
    old: str,
    new: str,
    ignore_paths: tuple[str, ...],
    ignore_order: tuple[str, ...],
) -> None:
    """Diff two checkpoints: working state, budgets, pending effects, metadata.

    Each side is RUN:STEP (the newest checkpoint at that step; the run id may contain
    colons, the step is after the last one) or RUN@CHECKPOINT_ID (one checkpoint of a
    fork). State paths are DeepDiff's: root['order']['items'][0].

    \b
    Examples:
      stepscope diff crash-at-step-7:5 crash-at-step-7:6
      stepscope diff crash-at-step-7:6 crash-resumed:7 --json
      stepscope diff clean-completed:6 tool-timeout:6 --ignore "root['log']"
    """
    parse_spec(old), parse_spec(new)  # bad syntax fails before the store opens
    with open_store(store_path) as store:
        result = diff_refs(store, old, new, ignore_paths, ignore_order)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(render_text(result))


def render_text(d: CheckpointDiff) -> str:
    """The diff as readable text: a summary line, then one table per part."""
    lines = [d.summary()]
    if d.state:
        lines += ["", "state:", *_rows_table(d.state)]
    if d.budgets:
        lines += ["", "budgets:"]
        lines += [f"  {b.name:<14} {b.old:>12,} -> {b.new:>12,}  ({b.delta:+,})" for b in d.budgets]
    if d.effects:
        lines += ["", "pending effects:"]
        for e in d.effects:
            status = f"{e.old_status or '-'} -> {e.new_status or '-'}"
            lines.append(f"  {e.change:<15} {e.idempotency_key or '(no key)':<28} "
                         f"{e.tool or '':<16} {status}")  # fmt: skip
    if d.metadata:
        lines += ["", "metadata:", *_rows_table(d.metadata)]
    return "\n".join(lines)


def _rows_table(rows: list[DiffRow]) -> list[str]:
    path_w = min(max(len(_path(r)) for r in rows), 60)
    kind_w = max(len(r.kind) for r in rows)
    out = [f"  {'kind':<{kind_w}}  {'path':<{path_w}}  {'old':<{VALUE_WIDTH}}  new"]
    for r in rows:
        old = _value(r.old, r.kind.endswith("_added"))
        new = _value(r.new, r.kind.endswith("_removed"))
        out.append(f"  {r.kind:<{kind_w}}  {_path(r):<{path_w}}  {old:<{VALUE_WIDTH}}  {new}")
    return out


def _path(r: DiffRow) -> str:
    return r.path if r.new_path is None else f"{r.path} -> {r.new_path}"


def _value(value: Any, absent: bool) -> str:
    return "-" if absent else preview(value, VALUE_WIDTH)
