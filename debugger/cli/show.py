"""``stepscope show RUN``: a run's summary and timeline, or one of its checkpoints."""

from __future__ import annotations

from typing import Any

import click

from debugger import json_text
from debugger.cli.support import command, emit_json, frame_records, open_store
from debugger.contract import BUDGETS


@command("show")
@click.argument("run_id", metavar="RUN")
@click.option("--step", type=int, help="Show the checkpoint at this step (newest if repeated).")
@click.option("--checkpoint", "checkpoint_id", help="Show the checkpoint with this id.")
def cmd(
    store_path: str | None,
    as_json: bool,
    run_id: str,
    step: int | None,
    checkpoint_id: str | None,
) -> None:
    """Show a run (summary and timeline) or one of its checkpoints.

    \b
    Examples:
      stepscope show crash-at-step-7
      stepscope show crash-at-step-7 --step 6 --json
    """
    with open_store(store_path) as store:
        if step is None and checkpoint_id is None:
            run = store.run(run_id)
            timeline = store.timeline(run_id)
            if as_json:
                emit_json({"run": run.to_dict(), "timeline": frame_records(timeline)})
                return
            _print_run(run.to_dict(), timeline)
            return
        ckpt = store.checkpoint(run_id, step=step, checkpoint_id=checkpoint_id)
    if as_json:
        emit_json({"checkpoint": ckpt.to_dict()})
        return
    d = ckpt.to_dict()
    state = d.pop("working_state")
    for key, value in d.items():
        click.echo(f"{key:<16} {value}")
    click.echo("working_state:")
    click.echo(json_text.dumps(state, indent=True, default=str))


def _print_run(run: dict[str, Any], timeline: Any) -> None:
    for key in ("run_id", "agent", "status", "status_reason", "first_step", "last_step",
                "checkpoint_count", "first_at", "last_at", "budgets", "limits",
                "model_versions", "last_error", "pending_count", "replay_of"):  # fmt: skip
        if run.get(key) not in (None, [], {}):
            click.echo(f"{key:<17} {run[key]}")
    cols = ["step_index", "created_at", *BUDGETS, "state_bytes", "pending_effects", "effects",
            "calls", "model_version"]  # fmt: skip
    click.echo(timeline[cols].to_string(index=False))
