"""The ``stepscope`` command: a thin layer over the same functions notebooks call.

Every command takes ``--store PATH`` and ``--json``; user errors print one line and exit 2.
docs/cli.md documents each command (a test keeps it in step with this file).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from debugger import __version__
from debugger.cli_support import (
    OneLineGroup,
    command,
    emit_json,
    frame_records,
    open_store,
    resolve_store,
)
from debugger.errors import StepscopeError
from debugger.model import RUN_STATUSES

OPTIONAL_COMMANDS = {
    "demo": "debugger.sample_cli",
    "diff": "debugger.diff_cli",
    "audit": "debugger.audit_cli",
    "migrate": "debugger.audit_cli",
    "replay": "debugger.replay.cli",
}
"""Commands that live beside their code; each module's ``register(main)`` adds them."""


class StepscopeGroup(OneLineGroup):
    """The command group, importing a command's module only when that command is used.

    ``stepscope app`` then starts without importing DeepDiff, the replay engine or the audit
    (about half a second of the app's start on this machine).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, loaded or not."""
        return sorted(set(super().list_commands(ctx)) | set(OPTIONAL_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """Load the command's module on first use."""
        if name not in self.commands and name in OPTIONAL_COMMANDS:
            importlib.import_module(OPTIONAL_COMMANDS[name]).register(self)
        return super().get_command(ctx, name)


@click.group(cls=StepscopeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stepscope")
def main() -> None:
    """Stepscope: step through, diff, audit and replay AI-agent checkpoint histories."""


def _progress(quiet: bool) -> Any:
    if quiet or not sys.stderr.isatty():
        return None

    def report(table: str, done: int, total: int | None) -> None:
        of = f"/{total:,}" if total else ""
        click.echo(f"\r  {table}: {done:,}{of} rows", err=True, nl=False)
        if total and done >= total:
            click.echo("", err=True)

    return report


@command(main, "import")
@click.argument("source")
@click.option(
    "--flavor",
    "--flavour",
    "flavour",
    type=click.Choice(["auto", "native", "langgraph", "mapped"]),
    default="auto",
    show_default=True,
    help="Shape of the source's tables.",
)
@click.option("--mapping", type=click.Path(), help="TOML mapping file for other table shapes.")
@click.option("--batch-rows", type=click.IntRange(100), default=16_384, show_default=True,
              help="Rows per batch at most (memory bound; a power of two is used).")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def import_cmd(
    store_path: str | None,
    as_json: bool,
    source: str,
    flavour: str,
    mapping: str | None,
    batch_rows: int,
    quiet: bool,
) -> None:
    """Import SOURCE (SQLite file, Parquet file/dir/glob, or postgresql:// URL) into the store.

    \b
    Examples:
      stepscope import sample_checkpoints/data/native.sqlite
      stepscope import 'exports/checkpoints/' --json
      stepscope import legacy.sqlite --mapping legacy.toml
      stepscope import postgresql://reader@db.internal/agents
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
        )
    click.echo(report.summary())
    for reason, n in report.quarantine_reasons.items():
        click.echo(f"  quarantined {n:,}: {reason}")


@command(main, "runs")
@click.option("--status", help=f"Only these statuses (comma-separated): {', '.join(RUN_STATUSES)}.")
@click.option("--agent", help="Only runs of this agent.")
@click.option("--text", help="Substring of run id, agent, error or status reason.")
def runs_cmd(
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
        steps = f"{r.first_step}-{r.last_step}"
        click.echo(
            f"{r.run_id:<34} {r.status:<17} {steps:>9} {r.budgets.tokens_spent:>9,}  "
            f"{r.status_reason}"
        )


@command(main, "show")
@click.argument("run_id", metavar="RUN")
@click.option("--step", type=int, help="Show the checkpoint at this step (newest if repeated).")
@click.option("--checkpoint", "checkpoint_id", help="Show the checkpoint with this id.")
def show_cmd(
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
    import json

    click.echo(json.dumps(state, indent=2, ensure_ascii=False, default=str))


def _print_run(run: dict[str, Any], timeline: Any) -> None:
    for key in ("run_id", "agent", "status", "status_reason", "first_step", "last_step",
                "checkpoint_count", "first_at", "last_at", "budgets", "limits",
                "model_versions", "last_error", "pending_count", "replay_of"):  # fmt: skip
        if run.get(key) not in (None, [], {}):
            click.echo(f"{key:<17} {run[key]}")
    cols = ["step_index", "created_at", "tokens_spent", "steps_spent", "wall_clock_ms",
            "state_bytes", "pending_effects", "effects", "calls", "model_version"]  # fmt: skip
    click.echo(timeline[cols].to_string(index=False))


def launch_app(
    store: str, port: int | None, browser: bool, env_defaults: dict[str, str] | None = None
) -> None:
    """Run the Streamlit server on the store in this process; returns when it stops.

    In-process rather than ``streamlit run`` in a child interpreter: one interpreter start
    less, and the server can warm the first page while the browser loads
    (:mod:`debugger.ui.serve`).

    Args:
        store: the store file the app serves.
        port: the port, or None for Streamlit's default.
        browser: open a browser tab.
        env_defaults: settings (``STEPSCOPE_*``) the app gets unless the user set them.
    """
    if not Path(store).exists():
        raise StepscopeError(
            f"no store at {store}", "import a source first, or run `stepscope demo`"
        )
    for name, value in (env_defaults or {}).items():
        os.environ.setdefault(name, value)
    resolved = str(Path(store).resolve())
    os.environ["STEPSCOPE_STORE"] = resolved
    from debugger.ui.serve import serve  # Streamlit is imported only by this command

    config_dir = Path(__file__).resolve().parent.parent
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops the server: not an error
        serve(resolved, port, browser=browser, config_dir=config_dir)


@command(main, "app")
@click.option("--port", type=int, help="Port (default 8501).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
def app_cmd(store_path: str | None, as_json: bool, port: int | None, no_browser: bool) -> None:
    """Open the Streamlit app on the store.

    \b
    Example:
      stepscope app --store incident-42.duckdb
    """
    launch_app(resolve_store(store_path), port, browser=not no_browser)


if __name__ == "__main__":  # pragma: no cover
    main()
