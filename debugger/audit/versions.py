"""Audit rules about versions: model and tool versions changing, schema versions migrating.

A resume runs today's code on yesterday's checkpoint: a model or tool that changed mid-run
may decide differently, and a schema version the migrations cannot reach (or whose migration
raises) cannot be read at all.
"""

from __future__ import annotations

from debugger.audit.registry import AuditInput, rule
from debugger.audit.registry import finding as _finding
from debugger.errors import MigrationError
from debugger.migrations import Registry, RestartRequired, migrate_state
from debugger.model import Finding


@rule("model-version-changed", "tool-version-changed")
def version_changes(inp: AuditInput) -> list[Finding]:
    """Model or tool versions changing mid-run (a deploy between two steps)."""
    out = []
    for parent, child in zip(inp.lineage, inp.lineage[1:], strict=False):
        if (
            parent.model_version
            and child.model_version
            and parent.model_version != child.model_version
        ):
            out.append(
                _finding(
                    "model-version-changed", "warning", child.step_index,
                    f"model version changed from {parent.model_version} to {child.model_version} "
                    f"at step {child.step_index}",
                    "compare decisions before and after the change; pin the model for a run",
                )
            )  # fmt: skip
        if parent.tool_versions is child.tool_versions:  # one stored text, parsed once
            continue
        changed = sorted(
            t for t in set(parent.tool_versions) & set(child.tool_versions)
            if parent.tool_versions[t] != child.tool_versions[t]
        )  # fmt: skip
        for tool in changed:
            out.append(
                _finding(
                    "tool-version-changed", "warning", child.step_index,
                    f"tool {tool} changed from {parent.tool_versions[tool]} to "
                    f"{child.tool_versions[tool]} at step {child.step_index}",
                    "check that recorded calls of the old version still mean the same",
                )
            )  # fmt: skip
    return out


@rule("schema-unreachable", "migration-failed", "schema-unchecked")
def schema_rule(inp: AuditInput) -> list[Finding]:
    """Schema versions the migrations cannot reach; a head whose migration raises."""
    if inp.registry is None:
        return _schema_unchecked(inp)
    out = []
    seen: set[int | None] = set()
    for c in inp.lineage:
        if c.schema_version in seen or c.schema_version is None:
            continue
        seen.add(c.schema_version)
        try:
            inp.registry.path(c.schema_version)
        except RestartRequired as e:
            head = c.schema_version == inp.head.schema_version
            out.append(
                _finding("schema-unreachable", "error" if head else "warning", c.step_index,
                         e.message, e.hint)
            )  # fmt: skip
    if not out:
        out += _head_migrates(inp, inp.registry)
    return out


def _head_migrates(inp: AuditInput, registry: Registry) -> list[Finding]:
    head = inp.head
    if head.schema_version is None:
        return []
    try:
        migrate_state(head.working_state, head.schema_version, registry)
    except RestartRequired:
        return []
    except MigrationError as e:
        return [_finding("migration-failed", "error", head.step_index, e.message, e.hint)]
    return []


def _schema_unchecked(inp: AuditInput) -> list[Finding]:
    v, newest = inp.head.schema_version, inp.newest_stored_version
    if v is None or newest is None or v >= newest:
        return []
    return [
        _finding(
            "schema-unchecked", "warning", inp.head.step_index,
            f"the head is at schema version {v} while the store holds version {newest}, and no "
            "migrations module is named, so whether the current code can read it is unknown",
            "pass --migrations MODULE (or set STEPSCOPE_MIGRATIONS) to check the path",
        )
    ]  # fmt: skip
