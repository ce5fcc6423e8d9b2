"""The verdict words: how the CLI, the Audit page and a notebook name each verdict."""

from __future__ import annotations

from debugger.model import AuditReport, VerdictKind

__all__ = ["VERDICT_WORDS", "verdict_title", "verdict_word"]

VERDICT_WORDS: dict[VerdictKind, str] = {
    "completed": "completed",
    "resumable": "resumable",
    "resumable_after_checks": "resumable after checks",
    "restart_required": "restart required",
}
"""Each verdict as a phrase, as the CLI prints it."""


def verdict_word(verdict: VerdictKind | AuditReport) -> str:
    """The phrase for a verdict (or a report's verdict): ``"resumable after checks"``."""
    kind = verdict.verdict if isinstance(verdict, AuditReport) else verdict
    return VERDICT_WORDS[kind]


def verdict_title(verdict: VerdictKind | AuditReport) -> str:
    """The phrase capitalised, as a heading shows it: ``"Resumable after checks"``."""
    return verdict_word(verdict).capitalize()
