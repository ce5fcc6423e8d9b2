"""``stepscope runs``: the store's runs with status, steps, budgets and reasons."""

from __future__ import annotations

import click

from debugger.cli.support import command, emit_json, open_store
from debugger.errors import StepscopeError
from debugger.model import RUN_STATUSES, step_span


@command("runs")
@click.option("--status", help=f"Only these statuses (comma-separated): {', '.join(RUN_STATUSES)}.")
@click.option("--agent", help="Only runs of this agent.")
@click.option("--text", help="Substring of run id, agent, error or status reason.")
def cmd(
    store_path: str | None, as_json: bool, status: str | None, agent: str | None, text: str | None
) -> None:
    """List runs with status, steps, budgets and model versions.

    \b
    Examples:
      stepscope runs
      stepscope runs --status crashed,failed --json
    """
    if status:
        bad = [s for s in status.split(",") if s.strip() and s.strip() not in RUN_STATUSES]
        if bad:
            raise StepscopeError(f"unknown status {bad[0]!r}", f"use {', '.join(RUN_STATUSES)}")
    with open_store(store_path) as store:
        runs = store.run_records(status, agent=agent, text=text)
    if as_json:
        emit_json({"runs": [r.to_dict() for r in runs]})
        return
    if not runs:
        click.echo("no runs")
        return
    click.echo(f"{'run':<34} {'status':<17} {'steps':>9} {'tokens':>9}  reason")
    for r in runs:
        steps = step_span(r.first_step, r.last_step, "-")
        click.echo(
            f"{r.run_id:<34} {r.status:<17} {steps:>9} {r.budgets.tokens_spent:>9,}  "
            f"{r.status_reason}"
        )
