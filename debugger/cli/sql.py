"""``stepscope sql "QUERY"``: the read-only, capped SQL console from the command line.

The same console as the app's SQL page (:mod:`debugger.store.console`): the store attached
read-only, no files, extensions or other databases, a memory cap and a time limit, at most
``--limit`` rows.
"""

from __future__ import annotations

import click

from debugger.cli.support import command, emit_json, frame_records, resolve_store


@command("sql")
@click.argument("query")
@click.option(
    "--limit", type=click.IntRange(min=1), default=1000, show_default=True,
    help="Rows printed at most (the output says when more were cut).",
)  # fmt: skip
@click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), default=20.0, show_default=True,
    help="Seconds before the query is stopped.",
)  # fmt: skip
def cmd(store_path: str | None, as_json: bool, query: str, limit: int, timeout: float) -> None:
    """Run one read-only SQL query on the store (tables: runs, checkpoints, effects, ...).

    Memory is capped by $STEPSCOPE_SQL_MEMORY (default 1GB); nothing is written anywhere.

    \b
    Examples:
      stepscope sql "SELECT status, count(*) AS runs FROM runs GROUP BY status"
      stepscope sql "SELECT run_id, step_index FROM checkpoints" --limit 20 --json
    """
    from debugger.store.console import run_query

    result = run_query(resolve_store(store_path), query, limit=limit, timeout_s=timeout)
    rows = frame_records(result.frame)
    if as_json:
        emit_json(
            {"columns": [str(c) for c in result.frame.columns], "rows": rows,
             "truncated": result.truncated, "limit": limit}
        )  # fmt: skip
        return
    click.echo(result.frame.to_string(index=False) if len(result.frame.columns) else "(no result)")
    note = f"{len(rows):,} row(s)"
    click.echo(note + (f"; cut to --limit {limit}" if result.truncated else ""), err=True)
