"""``stepscope prune``: delete what the retention rules say, then give the disk back.

Rules come from the options, else from the ``[prune]`` table of the settings file
(``stepscope.toml``, see :func:`debugger.settings.config_file`), so a team commits its rules
once; an option overrides the file's value of the same rule.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from debugger.cli.support import command, emit_json, open_store, resolve_store
from debugger.errors import StepscopeError, StoreError

FILE_KEYS = ("keep_last", "older_than", "completed_older_than")
"""Keys the ``[prune]`` table may hold."""


@command("prune")
@click.option(
    "--keep-last",
    type=click.IntRange(min=1),
    metavar="N",
    help="Keep the newest N checkpoints of every run (the head always stays).",
)
@click.option(
    "--older-than",
    metavar="AGE",
    help="Delete runs whose newest checkpoint is older: 90d, 12h, 2w or a date.",
)
@click.option(
    "--completed-older-than",
    metavar="AGE",
    help="Delete completed runs whose newest checkpoint is older (sooner than "
    "--older-than: in-flight runs may still be resumed).",
)
@click.option(
    "--run", "runs", multiple=True, metavar="ID", help="Delete this run entirely (repeatable)."
)
@click.option("--dry-run", is_flag=True, help="Show what would go; delete nothing.")
@click.option("--no-config", is_flag=True, help="Ignore the settings file's [prune] rules.")
def cmd(
    store_path: str | None, as_json: bool, keep_last: int | None, older_than: str | None,
    completed_older_than: str | None, runs: tuple[str, ...], dry_run: bool, no_config: bool,
) -> None:  # fmt: skip
    """Delete old checkpoints and runs (with their effects, tape, quarantine and replays).

    The store shrinks on disk afterwards. Without options, the rules of the [prune] table
    of stepscope.toml apply.

    \b
    Examples:
      stepscope prune --keep-last 50 --older-than 90d --completed-older-than 30d --dry-run
      stepscope prune --run crash-at-step-7
      stepscope prune            # the [prune] rules of stepscope.toml
    """
    from debugger.store.prune import compact

    rules, origin = _rules(keep_last, older_than, completed_older_than, runs, no_config)
    path = Path(resolve_store(store_path))
    if not path.is_file():  # a writable open would create an empty store
        raise StoreError(f"no store at {path}", "pass the store to prune with --store")
    before = path.stat().st_size
    with open_store(store_path, read_only=dry_run) as store:
        report = store.prune(rules, dry_run=dry_run)
    if not dry_run and (report.checkpoints or report.deleted_runs):
        # deleted rows leave their blocks in the file: rewrite it to give the disk back
        _, after = compact(str(path))
        report = replace(report, bytes_before=before, bytes_after=after)
    if as_json:
        emit_json({**report.to_dict(), "rules_from": origin})
        return
    _print(report, origin)


def _rules(
    keep_last: int | None, older_than: str | None, completed_older_than: str | None,
    runs: tuple[str, ...], no_config: bool,
) -> tuple[Any, str]:  # fmt: skip
    """The rules to apply and where they came from (options, the file, or both)."""
    from debugger.settings import config_table
    from debugger.store.prune import PruneRules, parse_cutoff

    table, path = ({}, None) if no_config else config_table("prune")
    unknown = sorted(set(table) - set(FILE_KEYS))
    if unknown:
        raise StepscopeError(
            f"unknown key {unknown[0]!r} in [prune] of {path}", f"use {', '.join(FILE_KEYS)}"
        )
    given = {"keep_last": keep_last, "older_than": older_than,
             "completed_older_than": completed_older_than}  # fmt: skip
    merged = {k: given[k] if given[k] is not None else table.get(k) for k in FILE_KEYS}
    keep = merged["keep_last"]
    if keep is not None and (not isinstance(keep, int) or isinstance(keep, bool) or keep < 1):
        raise StepscopeError(f"keep_last must be a whole number of at least 1, not {keep!r}",
                             f"fix [prune] in {path}")  # fmt: skip
    rules = PruneRules(
        keep_last=keep,
        older_than=parse_cutoff(str(merged["older_than"])) if merged["older_than"] else None,
        completed_older_than=(
            parse_cutoff(str(merged["completed_older_than"]))
            if merged["completed_older_than"] else None
        ),
        runs=runs,
    )  # fmt: skip
    if rules.empty:
        raise StepscopeError(
            "no retention rule given",
            "pass --keep-last, --older-than, --completed-older-than or --run, or set them "
            "in the [prune] table of stepscope.toml",
        )
    from_file = any(given[k] is None and table.get(k) is not None for k in FILE_KEYS)
    return rules, (str(path) if from_file else "options")


def _print(report: Any, origin: str) -> None:
    verb = "would delete" if report.dry_run else "deleted"
    click.echo(
        f"{verb} {len(report.deleted_runs):,} run(s) entirely and {report.checkpoints:,} "
        f"checkpoint(s), {report.effects:,} effect(s), {report.tool_calls:,} tool call(s), "
        f"{report.quarantined:,} quarantined row(s); {len(report.trimmed_runs):,} run(s) "
        f"trimmed (rules from {origin})"
    )
    for run_id, why in report.deleted_runs.items():
        click.echo(f"  {run_id}: {why}")
    for run_id in report.missing_runs:
        click.echo(f"  {run_id}: not in the store", err=True)
    if report.bytes_before is not None:
        click.echo(f"store file: {report.bytes_before:,} -> {report.bytes_after:,} bytes")
