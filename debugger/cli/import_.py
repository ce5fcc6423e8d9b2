"""``stepscope import SOURCE``: a source's checkpoints into the store (loaders.import_source)."""

from __future__ import annotations

import sys
from typing import Any

import click

from debugger.cli.support import command, emit_json, open_store


def _progress(quiet: bool) -> Any:
    if quiet or not sys.stderr.isatty():
        return None

    def report(table: str, done: int, total: int | None) -> None:
        of = f"/{total:,}" if total else ""
        click.echo(f"\r  {table}: {done:,}{of} rows", err=True, nl=False)
        if total and done >= total:
            click.echo("", err=True)

    return report


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
              help="Rows per batch at most (memory bound; a power of two is used).")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def cmd(
    store_path: str | None,
    as_json: bool,
    source: str,
    flavour: str,
    mapping: str | None,
    batch_rows: int,
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
    """
    from loaders import ImportOptions, import_source
    from loaders.importer import check_source

    options = ImportOptions(
        flavour=flavour,
        mapping=mapping,
        batch_rows=batch_rows,
        progress=None if as_json else _progress(quiet),
    )
    check_source(source, options)  # bad input fails before a store is created or locked
    with open_store(store_path, read_only=False) as store:
        report = import_source(store, source, options)
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(f"{report.kind} ({report.flavour}) {report.location}")
    for table, c in report.tables.items():
        click.echo(
            f"  {table:<12} read {c.read:>9,}  imported {c.imported:>9,}  "
            f"already present {c.already_present:>9,}  quarantined {c.quarantined:>7,}"
            + (f"  updated {c.updated:>9,}" if c.updated else "")
        )
    click.echo(report.summary())
    for reason, n in report.quarantine_reasons.items():
        click.echo(f"  quarantined {n:,}: {reason}")
