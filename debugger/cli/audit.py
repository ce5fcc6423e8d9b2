"""``stepscope audit``: a thin command over debugger.audit (docs/audit.md)."""

from __future__ import annotations

import click

from debugger.audit import VERDICT_WORDS, audit_run, audit_store, summary_rows
from debugger.audit.retention import retention_findings
from debugger.cli.support import command, emit_json, migrations_option, open_store
from debugger.errors import StepscopeError
from debugger.migrations import load_registry
from debugger.model import AuditReport


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


@command("audit")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option("--all", "all_runs", is_flag=True, help="Audit every run.")
@migrations_option
def cmd(
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
        store_findings = retention_findings(store)
    if as_json:
        emit_json(
            {"runs": [r.to_dict() for r in reports],
             "store_findings": [f.to_dict() for f in store_findings]}
        )  # fmt: skip
        return
    if reports:
        _print_table(reports)
    else:
        click.echo("no runs")
    for f in store_findings:  # on stderr: the table stays what scripts parse
        click.echo(f"warning: {f.rule_id}: {f.message}. Hint: {f.hint}.", err=True)
