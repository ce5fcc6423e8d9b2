"""``stepscope audit`` and ``stepscope migrate``: thin commands over debugger.audit and
debugger.migrations (docs/audit.md, docs/migrations.md)."""

from __future__ import annotations

import click

from debugger.audit import VERDICT_WORDS, audit_run, audit_store, summary_rows
from debugger.cli_support import command, emit_json, open_store
from debugger.errors import MigrationError, StepscopeError
from debugger.migrations import SETTING, DryRunReport, Registry, dry_run, load_registry
from debugger.model import AuditReport


def _migrations_option(f: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--migrations",
        "migrations",
        metavar="MODULE",
        help=f"State-schema migrations module (default: ${SETTING}).",
    )(f)


def print_report(report: AuditReport) -> None:
    """The audit of one run, for people."""
    click.echo(f"{report.run_id}: {VERDICT_WORDS[report.verdict]}")
    for reason in report.reasons:
        click.echo(f"  - {reason}")
    if report.next_step is not None:
        keys = ", ".join(f"{c.idempotency_key} ({c.tool})" for c in report.verify_effects)
        click.echo(
            f"resume: from checkpoint {report.resume_from} (step {report.resume_from_step}), "
            f"next step {report.next_step}" + (f", verify first: {keys}" if keys else "")
        )
    if report.branches:
        click.echo(f"branches not on the head's path: {', '.join(report.branches)}")
    if not report.findings:
        click.echo("no findings")
        return
    click.echo("findings:")
    for f in report.findings:
        step = "-" if f.step_index is None else str(f.step_index)
        click.echo(f"  {f.severity.upper():<7} step {step:>4}  {f.rule_id}: {f.message}")
        click.echo(f"  {'':<7} {'':>9}  hint: {f.hint}")


def _print_table(reports: list[AuditReport]) -> None:
    click.echo(f"{'run':<34} {'verdict':<24} {'err':>3} {'warn':>4}  next  reasons")
    for row in summary_rows(reports):
        nxt = "-" if row["next_step"] is None else str(row["next_step"])
        verdict = VERDICT_WORDS[row["verdict"]]
        click.echo(
            f"{row['run_id']:<34} {verdict:<24} {row['errors']:>3} {row['warnings']:>4}  "
            f"{nxt:>4}  {row['reasons']}"
        )


def audit_cmd(
    store_path: str | None,
    as_json: bool,
    run_id: str | None,
    all_runs: bool,
    migrations: str | None,
) -> None:
    """Audit whether RUN can be resumed safely, and what a resume would do.

    Prints the verdict (completed, resumable, resumable after checks, restart required),
    the findings with the step each points at, and the resume plan: the checkpoint it
    continues from, the next step, and the effects to verify by key first.

    \b
    Examples:
      stepscope audit crash-at-step-7
      stepscope audit schema-v1 --migrations sample_checkpoints.refund_desk.migrations
      stepscope audit --all --json
    """
    if all_runs == (run_id is not None):
        raise StepscopeError("name one RUN, or pass --all", "for example: stepscope audit --all")
    registry = load_registry(migrations)
    with open_store(store_path) as store:
        if run_id is not None:
            report = audit_run(store, run_id, registry)
            emit_json(report.to_dict()) if as_json else print_report(report)
            return
        reports = audit_store(store, registry)
    if as_json:
        emit_json({"runs": [r.to_dict() for r in reports]})
    elif reports:
        _print_table(reports)
    else:
        click.echo("no runs")


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


def migrate_cmd(
    store_path: str | None, as_json: bool, dry_run_flag: bool, migrations: str | None
) -> None:
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


def register(main: click.Group) -> None:
    """Add ``audit`` and ``migrate`` to the ``stepscope`` group."""
    audit = click.argument("run_id", metavar="[RUN]", required=False)(audit_cmd)
    audit = click.option("--all", "all_runs", is_flag=True, help="Audit every run.")(audit)
    command(main, "audit")(_migrations_option(audit))
    migrate = click.option(
        "--dry-run", "dry_run_flag", is_flag=True, help="Migrate in memory and report."
    )(migrate_cmd)
    command(main, "migrate")(_migrations_option(migrate))
