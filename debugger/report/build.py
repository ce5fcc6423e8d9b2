"""The incident report: one self-contained HTML file about one run, readable offline.

What a reviewer attaches to the incident document: the run's summary and the audit's
verdict, the timeline with the step where it stopped, the diff at the step that matters,
budgets against their limits, pending effects and what to check, the audit's findings, and
the comparison with a replay when one is given. Inline CSS only: no script, no font, no
image, no link to anything outside the file; every value from the run is escaped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any

from debugger import __version__
from debugger.audit import audit_run, verdict_title
from debugger.contract import BUDGET_LIMITS
from debugger.diff import diff_checkpoints
from debugger.errors import NotFound
from debugger.json_text import preview
from debugger.model import AuditReport, Checkpoint, Run
from debugger.report.incident import (
    failure_step,
    human_reason,
    unrecorded_sentence,
    unrecorded_step,
)
from debugger.report.split import split_html, split_lines
from debugger.store import Store

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
  max-width:1200px;padding:0 1rem;color:#1c1917;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:0.2rem} h2{font-size:1.2rem;margin-top:2rem;
  border-bottom:1px solid #e7e5e4;padding-bottom:0.2rem}
table.t{border-collapse:collapse;width:100%;font-size:0.9rem;margin:0.5rem 0}
table.t th,table.t td{border-bottom:1px solid #e7e5e4;padding:3px 6px;text-align:left;
  vertical-align:top;word-break:break-word}
tr.stop td{background:#fee2e2;font-weight:600} tr.unrec td{background:#fef3c7;font-style:italic}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:0.85rem;
  background:#e7e5e4} .bad{background:#fee2e2;color:#991b1b} .ok{background:#dcfce7;color:#166534}
.warn{background:#fef3c7;color:#92400e}
.box{border-left:4px solid #d6d3d1;padding:0.4rem 0.8rem;background:#fafaf9;margin:0.5rem 0}
.box.bad{border-color:#dc2626} .box.warn{border-color:#d97706}
.bar{height:10px;background:#e7e5e4;border-radius:5px;width:200px;display:inline-block}
.bar span{display:block;height:10px;border-radius:5px;background:#2563eb}
.bar span.over{background:#dc2626} small{color:#78716c}
"""

_STATUS_CLASS = {"completed": "ok", "failed": "bad", "crashed": "bad", "parked": "warn",
                 "budget_exhausted": "warn"}  # fmt: skip


def e(value: Any) -> str:
    """Escaped text of any value (None as empty)."""
    return "" if value is None else escape(str(value), quote=True)


def table(header: list[str], rows: list[list[Any]], classes: list[str] | None = None) -> str:
    """A table of escaped text cells, a CSS class per row where given."""
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join(
        f'<tr class="{(classes or [""] * len(rows))[i]}">'
        + "".join(f"<td>{e(c)}</td>" for c in row)
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return f'<table class="t"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def build_report(store: Store, run_id: str, replay_id: str | None = None) -> str:
    """The incident report of ``run_id`` as one HTML document.

    Args:
        store: an open store.
        run_id: the run.
        replay_id: a replay of it to compare with (its saved ``report.json``).

    Raises:
        NotFound: no such run, or the replay is not a replay of this run.
    """
    run = store.run(run_id)
    ckpts = store.checkpoints(run_id)
    effects, calls = store.effects(run_id), store.tool_calls(run_id)
    audit = audit_run(store, run_id)
    unrec = unrecorded_step(run, effects, calls) if run.status == "crashed" else None
    parts = [
        _summary(run, audit, unrec),
        _timeline(run, ckpts, unrec),
        _diff_at(run, ckpts, audit),
        _budgets(run),
        _pending(run, ckpts, audit, effects),
        _findings(audit),
    ]
    if replay_id:
        parts.append(_replay(store, run, replay_id))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Incident report: {e(run_id)}</title><style>{CSS}</style></head><body>"
        + "".join(parts)
        + f"<p><small>Stepscope {e(__version__)} · store {e(store.path)} · written {when}"
        "</small></p></body></html>\n"
    )


def _summary(run: Run, audit: AuditReport, unrec: int | None) -> str:
    b = run.budgets
    status = f'<span class="badge {_STATUS_CLASS.get(run.status, "")}">{e(run.status)}</span>'
    verdict_class = {"completed": "ok", "resumable": "ok", "restart_required": "bad"}.get(
        audit.verdict, "warn"
    )
    facts = [
        ("Agent", run.agent or "—"),
        ("Why this status", human_reason(run)),
        ("Steps", run.steps_text()),
        ("Tokens", f"{b.tokens_spent:,}"),
        ("Wall clock", f"{b.wall_clock_ms / 1000:,.1f} s"),
        ("Model versions", ", ".join(run.model_versions) or "—"),
        ("Last checkpoint", run.last_at.isoformat(sep=" ") if run.last_at else "—"),
    ]
    if run.replay_of:
        facts.append(("Replay of", f"{run.replay_of} from step {run.replay_from_step}"))
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts)
    out = [f"<h1>Incident report: {e(run.run_id)} {status}</h1>",
           f'<table class="t">{rows}</table>']  # fmt: skip
    if run.last_error:
        out.append(f'<div class="box bad"><b>Last error:</b> {e(run.last_error)}</div>')
    if unrec is not None:
        out.append(f'<div class="box bad">{e(unrecorded_sentence(unrec))}</div>')
    reasons = "".join(f"<li>{e(r)}</li>" for r in audit.reasons)
    plan = ""
    if audit.next_step is not None:
        plan = (
            f"<p>A resume would continue from checkpoint {e(audit.resume_from)} (step "
            f"{e(audit.resume_from_step)}) and execute step {e(audit.next_step)}.</p>"
        )
    out.append(
        f'<h2>Verdict</h2><div class="box {verdict_class}"><b>{e(verdict_title(audit))}</b>'
        f"<ul>{reasons}</ul>{plan}</div>"
    )
    return "".join(out)


def _timeline(run: Run, ckpts: list[Checkpoint], unrec: int | None) -> str:
    stop = failure_step(run)
    rows, classes = [], []
    for c in ckpts:
        b = c.budgets
        stopped = c.step_index == stop and c is ckpts[-1]
        rows.append([c.step_index, c.checkpoint_id, c.created_at or "", b.tokens_spent,
                     b.steps_spent, b.wall_clock_ms, len(c.pending_effects or []),
                     "stopped here" if stopped else ""])  # fmt: skip
        classes.append("stop" if stopped else "")
    if unrec is not None:
        rows.append([unrec, "(never checkpointed)", "", "", "", "", "", "attempted"])
        classes.append("unrec")
    header = ["Step", "Checkpoint", "Written", "Tokens", "Steps", "Wall clock ms", "Pending",
              ""]  # fmt: skip
    return "<h2>Timeline</h2>" + table(header, rows, classes)


def _step_that_matters(run: Run, ckpts: list[Checkpoint], audit: AuditReport) -> int:
    """The checkpoint to diff: the first step an error finding names, else the last."""
    steps = [c.step_index for c in ckpts]
    errors = [f.step_index for f in audit.findings
              if f.severity == "error" and f.step_index is not None]  # fmt: skip
    for step in sorted(errors):
        if step in steps and steps.index(step) > 0:
            return steps.index(step)
    return len(ckpts) - 1


def _diff_at(run: Run, ckpts: list[Checkpoint], audit: AuditReport) -> str:
    if len(ckpts) < 2:
        return "<h2>What changed</h2><p>The run has one checkpoint: nothing to compare.</p>"
    i = _step_that_matters(run, ckpts, audit)
    by_id = {c.checkpoint_id: c for c in ckpts}
    cur = ckpts[i]
    prev = by_id.get(cur.parent_id or "") or ckpts[i - 1]
    cd = diff_checkpoints(prev, cur)
    rows = [[r.path, r.kind, preview(r.old, 400), preview(r.new, 400)] for r in cd.state]
    split = split_lines(prev.working_state, cur.working_state)
    left = f"step {prev.step_index} ({prev.checkpoint_id})"
    right = f"step {cur.step_index} ({cur.checkpoint_id})"
    return (
        f"<h2>What changed at step {e(cur.step_index)}</h2>"
        f"<p>Compared with step {e(prev.step_index)}: {e(len(cd.state))} state changes.</p>"
        + table(["Path", "Kind", "Before", "After"], rows)
        + split_html(split, left, right)
    )


def _budgets(run: Run) -> str:
    rows = []
    for column, key in BUDGET_LIMITS.items():
        spent = getattr(run.budgets, column)
        limit = (run.limits or {}).get(key)
        if isinstance(limit, int | float) and limit > 0:
            share = spent / limit
            cls = ' class="over"' if share >= 1 else ""
            bar = (f'<span class="bar"><span{cls} style="width:{min(share, 1) * 100:.0f}%">'
                   f"</span></span> {share:.0%}")  # fmt: skip
            rows.append(f"<tr><td>{e(column)}</td><td>{spent:,}</td><td>{limit:,}</td>"
                        f"<td>{bar}</td></tr>")  # fmt: skip
        else:
            rows.append(f"<tr><td>{e(column)}</td><td>{spent:,}</td><td>none recorded</td>"
                        "<td></td></tr>")  # fmt: skip
    return (
        '<h2>Budgets</h2><table class="t"><thead><tr><th>Budget</th><th>Consumed</th>'
        f"<th>Limit</th><th>Share</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _pending(run: Run, ckpts: list[Checkpoint], audit: AuditReport, effects: list[Any]) -> str:
    head = ckpts[-1] if ckpts else None
    logged = {x.idempotency_key: x.status for x in effects if x.idempotency_key}
    rows = []
    for item in (head.pending_effects if head else None) or []:
        entry = item if isinstance(item, dict) else {"value": item}
        key = entry.get("idempotency_key") or entry.get("key")
        rows.append([entry.get("tool") or entry.get("name"), key, entry.get("status", "pending"),
                     logged.get(str(key), ""), preview(entry.get("args"), 400)])  # fmt: skip
    out = ["<h2>Pending effects</h2>"]
    if not rows:
        out.append("<p>None in flight at the last checkpoint.</p>")
    else:
        out.append(table(["Tool", "Idempotency key", "Status", "Effects log", "Args"], rows))
    checks = [[c.idempotency_key, c.tool, c.step_index, c.status] for c in audit.verify_effects]
    if checks:
        out.append(
            '<div class="box warn"><b>What to check before resuming:</b> look up each key '
            "in the system of record; never repeat an effect blindly.</div>"
        )
        out.append(table(["Idempotency key", "Tool", "Step", "Status"], checks))
    return "".join(out)


def _findings(audit: AuditReport) -> str:
    if not audit.findings:
        return "<h2>Audit findings</h2><p>None: the run keeps the resume contract.</p>"
    rows = [[f.severity, "—" if f.step_index is None else f.step_index, f.rule_id, f.message,
             f.hint] for f in audit.findings]  # fmt: skip
    classes = ["stop" if f.severity == "error" else "" for f in audit.findings]
    return f"<h2>Audit findings ({len(rows)})</h2>" + table(
        ["Severity", "Step", "Rule", "Finding", "Hint"], rows, classes
    )


def _replay(store: Store, run: Run, replay_id: str) -> str:
    from debugger.replay.output import saved_report  # the replay code only when asked

    replay = store.run(replay_id)
    if replay.replay_of != run.run_id:
        raise NotFound(
            f"{replay_id!r} is not a replay of {run.run_id!r}",
            f"list its replays with `stepscope runs` (replay_of = {run.run_id})",
        )
    report = saved_report(store, replay_id)
    if report is None:
        return (f"<h2>Replay {e(replay_id)}</h2><p>Its report.json is gone; the replay is "
                "stored as a run (open it in the Timeline).</p>")  # fmt: skip
    outcome = ("diverged, as a fix is expected to" if report["outcome"] == "completed"
               and report["diverged"] else report["outcome"])  # fmt: skip
    facts = [("Agent", report["agent"]), ("From step", report["from_step"]),
             ("Outcome", outcome), ("Reason", report["reason"]),
             ("Divergences", len(report["divergences"])),
             ("Duplicate writes", len(report["duplicate_writes"]))]  # fmt: skip
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts)
    out = [f"<h2>Replay {e(replay_id)}</h2>", f'<table class="t">{rows}</table>']
    for d in report["duplicate_writes"]:
        out.append(f'<div class="box bad">Duplicate {e(d["tool"])} at step {e(d["step_index"])} '
                   f'(key {e(d["idempotency_key"])}): the original already made it at step '
                   f'{e(d["original_step"])}.</div>')  # fmt: skip
    if report["divergences"]:
        out.append(table(["Step", "Kind", "Message"],
                         [[d["step_index"], d["kind"], d["message"]]
                          for d in report["divergences"]]))  # fmt: skip
    if report["ledger"]:
        keys = list(report["ledger"][0])
        out.append("<p>The replay's writes (ledger, never executed):</p>")
        out.append(table(keys, [[preview(x.get(k), 200) for k in keys] for x in report["ledger"]]))
    return "".join(out)
