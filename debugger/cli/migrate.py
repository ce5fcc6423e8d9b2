"""``stepscope migrate``: a thin command over debugger.migrations (docs/migrations.md)."""

from __future__ import annotations

import click

from debugger.cli.support import command, emit_json, migrations_option, open_store
from debugger.errors import MigrationError
from debugger.migrations import SETTING, DryRunReport, Registry, dry_run, load_registry


def _require(registry: Registry | None) -> Registry:
    if registry is None:
        raise MigrationError(
            "no migrations module named",
            f"pass --migrations MODULE or set {SETTING}, e.g. "
            "--migrations sample_checkpoints.refund_desk.migrations",
        )
    return registry


def print_dry_run(report: DryRunReport) -> None:
    """A dry-run report, for people."""
    click.echo(
        f"{report.total:,} checkpoints; migrations {report.module} "
        f"(current version {report.current_version}); stored rows unchanged"
    )
    click.echo(
        f"{'version':>7} {'checkpoints':>11} {'clean':>7} {'failed':>7} {'restart':>7}  path"
    )
    for v in report.versions:
        label = "none" if v.version is None else str(v.version)
        path = " → ".join(map(str, v.path)) if v.path else f"restart required: {v.reason}"
        click.echo(
            f"{label:>7} {v.checkpoints:>11,} {v.clean:>7,} {v.failed:>7,} "
            f"{v.restart_required:>7,}  {path}"
        )
        for fail in v.failures:
            click.echo(
                f"{'':>9}failed on {fail.run_id} step {fail.step_index} "
                f"({fail.checkpoint_id}): {fail.error}"
            )


@command("migrate")
@click.option("--dry-run", "dry_run_flag", is_flag=True, help="Migrate in memory and report.")
@migrations_option
def cmd(store_path: str | None, as_json: bool, dry_run_flag: bool, migrations: str | None) -> None:
    """Check that every stored checkpoint migrates to the current schema version.

    Stored checkpoints are history and are never rewritten: states migrate in memory when
    they are read. So only --dry-run exists: it migrates every checkpoint in memory and
    reports, per stored version, how many migrate cleanly, fail (with the error and the
    checkpoint) or need a restart.

    \b
    Examples:
      stepscope migrate --dry-run --migrations sample_checkpoints.refund_desk.migrations
      STEPSCOPE_MIGRATIONS=myagent.migrations stepscope migrate --dry-run --json
    """
    if not dry_run_flag:
        raise MigrationError(
            "stepscope never rewrites stored checkpoints: they are the run's history, and "
            "states migrate in memory whenever they are read",
            "run `stepscope migrate --dry-run` to check every checkpoint migrates",
        )
    registry = _require(load_registry(migrations))
    with open_store(store_path) as store:
        report = dry_run(store, registry)
    if as_json:
        emit_json(report.to_dict())
    else:
        print_dry_run(report)
