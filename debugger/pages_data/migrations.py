"""The Migrations page's data: schema versions in the store, the dry run, what a migration
changes in one checkpoint's state."""

from __future__ import annotations

from typing import Any

from debugger.diff import diff_states
from debugger.json_text import preview
from debugger.migrations import DryRunReport, Registry, stored_versions
from debugger.model import Checkpoint
from debugger.store import Store

__all__ = ["change_rows", "checkpoint_labels", "dry_run_rows", "failure_rows", "version_rows"]


def _label(version: int | None) -> str:
    return "none" if version is None else str(version)


def version_rows(store: Store, registry: Registry | None) -> list[dict[str, Any]]:
    """One row per schema version in the store: its checkpoints, and (with a registry)
    whether it reaches the current version."""
    rows = []
    for version, n in stored_versions(store).items():
        row: dict[str, Any] = {"schema_version": _label(version), "checkpoints": n}
        if registry is not None:
            row["reaches current"] = registry.reachable(version)
        rows.append(row)
    return rows


def dry_run_rows(report: DryRunReport) -> list[dict[str, Any]]:
    """One row per stored version of a dry run: counts and the migration path (or why none)."""
    return [
        {"version": _label(v.version), "checkpoints": v.checkpoints, "clean": v.clean,
         "failed": v.failed, "restart required": v.restart_required,
         "path": " → ".join(map(str, v.path)) if v.path else f"none: {v.reason}"}
        for v in report.versions
    ]  # fmt: skip


def failure_rows(report: DryRunReport) -> list[dict[str, Any]]:
    """The checkpoints whose migration raised in a dry run (as many as the report lists)."""
    return [
        {"version": v.version, "run": f.run_id, "step": f.step_index,
         "checkpoint": f.checkpoint_id, "error": f.error}
        for v in report.versions for f in v.failures
    ]  # fmt: skip


def checkpoint_labels(checkpoints: list[Checkpoint]) -> list[str]:
    """How the checkpoint picker names each checkpoint: step, schema version, id."""
    return [f"step {c.step_index} · v{c.schema_version} · {c.checkpoint_id}" for c in checkpoints]


CHANGE_CHARS = 120
"""Longest stored or migrated value shown in a change row."""


def change_rows(stored: Any, migrated: Any) -> list[dict[str, Any]]:
    """What the migrations changed in a state: one row per difference, values shortened."""
    return [
        {
            "path": r.path,
            "kind": r.kind,
            "stored": preview(r.old, CHANGE_CHARS),
            "migrated": preview(r.new, CHANGE_CHARS),
        }
        for r in diff_states(stored, migrated)
    ]
