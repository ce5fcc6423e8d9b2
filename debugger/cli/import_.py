"""``stepscope import SOURCE``: a source's checkpoints into the store (loaders.import_source)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from debugger.cli.support import (
    command,
    emit_json,
    open_store,
    resolve_store,
    skip_teardown,
)
from debugger.errors import StepscopeError


def _progress(quiet: bool) -> Any:
    if quiet or not sys.stderr.isatty():
        return None

    def report(table: str, done: int, total: int | None) -> None:
        of = f"/{total:,}" if total else ""
        click.echo(f"\r  {table}: {done:,}{of} rows", err=True, nl=False)
        if total and done >= total:
            click.echo("", err=True)

    return report


STORE_FILE_SUFFIXES = ("", ".wal")
"""The files DuckDB makes for a store: the database and its write-ahead log."""


@contextmanager
def removed_if_new_and_empty(store_path: str) -> Iterator[None]:
    """Delete the store this import created when it failed (bad input) and stored nothing.

    A store that existed before is never deleted, and neither is a new one holding the
    rows a source gave before it turned out corrupt part-way (they stay, with their runs).
    """
    path = Path(store_path)
    existed = any(Path(f"{path}{s}").exists() for s in STORE_FILE_SUFFIXES)
    try:
        yield
    except StepscopeError as e:
        if not existed and e.exit_code == 2 and not _holds_rows(store_path):
            for suffix in STORE_FILE_SUFFIXES:
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        raise


def _holds_rows(store_path: str) -> bool:
    try:
        with open_store(store_path, read_only=True) as store:
            return store.holds_rows()
    except StepscopeError:  # not a store we can read: not one to delete either
        return True


def _filtered(filtered: dict[str, Any]) -> str:
    """``runs a, b-* since 2026-11-01T00:00:00Z`` for the report's header."""
    parts = []
    if filtered.get("runs"):
        parts.append("runs " + ", ".join(filtered["runs"]))
    if filtered.get("since"):
        parts.append(f"{'' if parts else 'runs '}with a checkpoint since {filtered['since']}")
    return " ".join(parts)


@command("import")
@click.argument("source")
@click.option(
    "--flavor",
    "--flavour",
    "flavour",
    type=click.Choice(
        [
            "auto",
            "native",
            "langgraph",
            "adk",
            "temporal",
            "openai-agents",
            "pydantic-ai",
            "crewai",
            "mapped",
        ]
    ),
    default="auto",
    show_default=True,
    help="Shape of the source's tables.",
)
@click.option("--mapping", type=click.Path(), help="TOML mapping file for other table shapes.")
@click.option("--batch-rows", type=click.IntRange(100), default=16_384, show_default=True,
              help="Rows per batch at most (memory bound; a power of two is used). Below "
                   "the default, a Parquet source DuckDB could read in one pass is read in "
                   "batches too.")  # fmt: skip
@click.option("--run", "runs", multiple=True, metavar="ID",
              help="Only this run (a LangGraph thread); repeatable; globs: * ?")  # fmt: skip
@click.option("--since", metavar="TIME",
              help="Only runs with a checkpoint since TIME (ISO, or age: 7d).")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def cmd(
    store_path: str | None,
    as_json: bool,
    source: str,
    flavour: str,
    mapping: str | None,
    batch_rows: int,
    runs: tuple[str, ...],
    since: str | None,
    quiet: bool,
) -> None:
    """Import SOURCE (SQLite file, Parquet file/dir/glob, JSON file/dir, or postgresql:// URL).

    \b
    Examples:
      stepscope import sample_checkpoints/data/native.sqlite
      stepscope import 'exports/checkpoints/' --json
      stepscope import legacy.sqlite --mapping legacy.toml
      stepscope import postgresql://reader@db.internal/agents
      stepscope import histories/ --flavor temporal
      stepscope import agent_sessions.sqlite --flavor openai-agents
      stepscope import agent.sqlite --run 'order-*' --since 7d
    """
    from loaders import ImportOptions, import_source
    from loaders.importer import check_source

    options = ImportOptions(
        flavour=flavour,
        mapping=mapping,
        batch_rows=batch_rows,
        runs=runs,
        since=since,
        progress=None if as_json else _progress(quiet),
    )
    check_source(source, options)  # bad input fails before a store is created or locked
    path = resolve_store(store_path)
    with removed_if_new_and_empty(path), open_store(path, read_only=False) as store:
        report = import_source(store, source, options)
    skip_teardown()  # the store is closed: nothing is left to tear down
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"{report.kind} ({report.flavour}) {report.location}")
    if report.filtered:
        click.echo(f"  only {_filtered(report.filtered)} (selected in the source's query)")
    for table, c in report.tables.items():
        click.echo(
            f"  {table:<12} read {c.read:>9,}  imported {c.imported:>9,}  "
            f"already present {c.already_present:>9,}  quarantined {c.quarantined:>7,}"
            + (f"  updated {c.updated:>9,}" if c.updated else "")
        )
    click.echo(report.summary())
    for reason, n in report.quarantine_reasons.items():
        click.echo(f"  quarantined {n:,}: {reason}")
