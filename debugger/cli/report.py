"""``stepscope report RUN [--replay ID] -o FILE.html``: the incident report, one offline file.

A thin layer over :func:`debugger.report.build_report`.
"""

from __future__ import annotations

from pathlib import Path

import click

from debugger.cli.support import command, emit_json, open_store
from debugger.errors import StepscopeError


@command("report")
@click.argument("run_id", metavar="RUN")
@click.option("--replay", "replay_id", metavar="ID",
              help="A replay of RUN to compare with (its saved report).")  # fmt: skip
@click.option("-o", "--output", "output", required=True, metavar="FILE.html",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the report (overwritten).")  # fmt: skip
def cmd(
    store_path: str | None, as_json: bool, run_id: str, replay_id: str | None, output: Path
) -> None:
    """Write the incident report of RUN: one self-contained HTML file, readable offline.

    It holds the run's summary and audit verdict, the timeline with the step where it
    stopped, the diff at the step that matters, budgets against their limits, pending
    effects and what to check, the audit findings, and the replay comparison with --replay.
    It loads nothing from the network: attach it to the incident document.

    \b
    Examples:
      stepscope report crash-at-step-7 -o incident.html
      stepscope report crash-at-step-7 --replay crash-at-step-7~replay-1 -o incident.html
    """
    from debugger.report import build_report

    if not output.parent.exists():
        raise StepscopeError(f"no directory {output.parent}", "create it, or pass another -o")
    with open_store(store_path) as store:
        text = build_report(store, run_id, replay_id)
    output.write_text(text, encoding="utf-8")
    if as_json:
        emit_json({"run_id": run_id, "replay_id": replay_id, "output": str(output),
                   "bytes": len(text.encode())})  # fmt: skip
    else:
        click.echo(f"incident report of {run_id}: {output} ({len(text.encode()):,} bytes)")
