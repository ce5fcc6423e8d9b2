"""The Replay page's data: suggested inputs, the headline, links and tables of a report.

A replay report here is the dict of :meth:`debugger.replay.engine.ReplayReport.to_dict`
(what the page keeps in its session and what ``report.json`` holds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from debugger.model import Run
from debugger.pages_data.markup import md_text
from debugger.replay.report import ISOLATION_WORDS
from debugger.store import Store

SAMPLE_INPUTS = {
    "replay_agent": "sample_checkpoints.refund_desk.agent:fixed_agent",
    "replay_mocks": "sample_checkpoints.refund_desk.replay_mocks",
    "replay_baseline": "sample_checkpoints.refund_desk.agent:agent",
}
"""The sample's fixed agent, mocks and original code, suggested for its refund-desk runs."""

Tone = Literal["success", "warning", "error"]


@dataclass(frozen=True)
class Link:
    """A link from a replay report into another page."""

    url: str
    """The page's URL path (``diff``, ``timeline``)."""
    label: str
    """What the link says."""
    query: dict[str, str]
    """The page's query parameters."""


def suggested_inputs(run: Run) -> dict[str, str]:
    """The agent, mocks and baseline to suggest for a run (the sample's for its runs)."""
    return dict(SAMPLE_INPUTS) if run.agent == "refund_desk" else {}


def originals(runs: list[Run]) -> list[Run]:
    """The runs a replay can start from (replays themselves are not replayed again)."""
    return [r for r in runs if not r.replay_of]


def replay_ids(runs: list[Run]) -> list[str]:
    """The stored replays, whose saved reports the page can show."""
    return [r.run_id for r in runs if r.replay_of]


def target(store: Store, run_id: str) -> str:
    """What a replay of the run needs: ``graph`` for a run LangGraph wrote, else ``agent``."""
    return "graph" if store.run_flavour(run_id) == "langgraph" else "agent"


def env_items(text: str) -> list[str]:
    """The page's environment field as ``--env`` items (``NAME`` or ``NAME=VALUE``, apart
    by spaces or commas); :func:`debugger.replay.isolation.environment` checks each."""
    return [item for item in re.split(r"[\s,]+", text.strip()) if item]


def split_baseline(settings: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The replay's arguments and the baseline agent or graph (None when none, or the same)."""
    args = dict(settings)
    baseline = args.pop("baseline", None)
    return args, None if baseline == args.get("graph", args.get("agent")) else baseline


def headline(report: dict[str, Any]) -> tuple[str, Tone]:
    """The report's outcome and reason as Markdown, and how it should look.

    A replay that completed but diverged is what a fix that behaves differently gives: it
    is said so plainly, not shown as a failure.
    """
    text = f"**{report['outcome']}**: {md_text(report['reason'])}"
    if report["outcome"] == "completed" and not report["diverged"]:
        return text, "success"
    if report["outcome"] == "completed":
        return (
            f"**Completed, and diverged from the original**: the code replayed behaves "
            f"differently from the code that ran, as a fix is expected to. Check below that "
            f"the differences are the ones you meant ({md_text(report['reason'])}).",
            "success",
        )
    if report["outcome"] == "diverged":
        return (
            f"{text}. If you replayed a fix, this is expected: the fixed code does what the "
            "original did not. Check below that this is the difference you meant (lenient "
            "mode goes on past it).",
            "warning",
        )
    if report["outcome"] in ("end_of_original", "completed", "parked"):
        return text, "warning"
    return text, "error"


def isolation_note(report: dict[str, Any]) -> str:
    """The isolation the replay ran under, in words (reports saved before it was recorded
    ran under the in-process hooks)."""
    isolation = report.get("isolation") or "hooks"
    return f"Isolation: {ISOLATION_WORDS.get(isolation, isolation)}"


def counts(report: dict[str, Any]) -> dict[str, int]:
    """The report's numbers shown as metrics."""
    return {
        "Steps run": len(report["steps"]),
        "Divergences": len(report["divergences"]),
        "Duplicate writes": len(report["duplicate_writes"]),
        "Sandbox violations": len(report["violations"]),
    }


def duplicate_messages(report: dict[str, Any], baseline: bool = False) -> list[str]:
    """One Markdown sentence per duplicate write: what production would have received.

    Args:
        report: a replay report.
        baseline: True for the original code's replay (the baseline), False for the user's.
    """
    who, earlier = ("The original code", "the original run") if baseline else (
        "In production this code", "the original")  # fmt: skip
    return [
        f"{who} would have sent a **duplicate {md_text(d['tool'])}** at step {d['step_index']} "
        f"(key {md_text(d['idempotency_key'])}): {earlier} already made it at step "
        f"{d['original_step']} (status {d['original_status']})."
        for d in report["duplicate_writes"]
    ]


def step_links(report: dict[str, Any], step: int) -> list[Link]:
    """Links for one step of a replay: the diff with the original, both timelines.

    Where the original (or the replay) has no checkpoint at ``step``, the diff compares the
    nearest steps both have.
    """
    row = next((s for s in report["steps"] if s["step_index"] == step), None)
    original, replayed = report["run_id"], report["replay_run_id"]
    if row and row["original_checkpoint_id"] and row["replay_checkpoint_id"]:
        diff = Link("diff", f"Diff at step {step}", {"a": f"{original}:{step}",
                                                     "b": f"{replayed}:{step}"})  # fmt: skip
    else:
        before = max(report["from_step"], step - 1)
        after = step if row and row["replay_checkpoint_id"] else before
        diff = Link("diff", f"Diff original step {before} / replay step {after}",
                    {"a": f"{original}:{before}", "b": f"{replayed}:{after}"})  # fmt: skip
    return [
        diff,
        Link("timeline", f"Original at step {step}", {"run": original, "step": str(step)}),
        Link("timeline", "Replay in the timeline",
             {"run": replayed, "step": str(report["last_step"])}),
    ]  # fmt: skip


def report_tables(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The report's tables by title, the empty ones left out."""
    tables = {
        "Writes the original made that the replay did not": report["missing_writes"],
        "Aligned steps": report["steps"],
        "The replay's writes (ledger, never executed)": report["ledger"],
        "All divergences": [
            {k: d[k] for k in ("step_index", "kind", "message")} for d in report["divergences"]
        ],
        "Sandbox violations": report["violations"],
    }
    return {title: rows for title, rows in tables.items() if rows}


def query_string(query: dict[str, str]) -> str:
    """A link's query parameters as a URL query (``?a=1&b=2``)."""
    return "?" + "&".join(f"{k}={v}" for k, v in query.items())
