"""Frozen, typed records of the domain.

These are what the store returns to the CLI, the app and notebooks. Field names follow the
domain (``run_id``, ``step_index``, ``checkpoint_id``, ``parent_id``, ``idempotency_key``).
JSON-valued fields hold already-parsed Python values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

RunStatus = Literal["completed", "failed", "crashed", "parked", "budget_exhausted", "in_progress"]
RUN_STATUSES: tuple[RunStatus, ...] = (
    "completed",
    "failed",
    "crashed",
    "parked",
    "budget_exhausted",
    "in_progress",
)
ATTENTION_STATUSES: tuple[RunStatus, ...] = ("failed", "crashed", "parked", "budget_exhausted")
"""Statuses that need a person's attention (the Runs page puts them first)."""
EffectStatus = Literal["pending", "committed", "failed", "unknown"]
EFFECT_STATUSES: tuple[EffectStatus, ...] = ("pending", "committed", "failed", "unknown")
CallKind = Literal["tool", "model"]


@dataclass(frozen=True)
class Budgets:
    """Budgets consumed up to a checkpoint (cumulative over the run, never reset)."""

    tokens_spent: int
    """Model tokens consumed so far."""
    steps_spent: int
    """Loop iterations executed so far."""
    wall_clock_ms: int
    """Wall-clock time spent so far, in milliseconds."""


@dataclass(frozen=True)
class Checkpoint:
    """One saved point of a run: the six-item resumability contract plus identity."""

    run_id: str
    """The run (LangGraph: thread and namespace) this checkpoint belongs to."""
    checkpoint_id: str
    """Unique within the run; given by the source or derived from the row's content."""
    parent_id: str | None
    """The checkpoint this one continues from; several children of one parent are a fork."""
    step_index: int
    """Step position: the loop iteration this checkpoint was taken after."""
    schema_version: int | None
    """Version of the working state's schema, for the user's migrations; None if unknown."""
    created_at: datetime | None
    """When the checkpoint was written (UTC)."""
    working_state: Any
    """The structured working state, parsed from JSON."""
    state_hash: str
    """XXH3-128 of the stored JSON text (hex), to spot identical states cheaply."""
    state_bytes: int
    """Size of the stored JSON text in bytes."""
    budgets: Budgets
    """Budgets consumed up to this checkpoint."""
    pending_effects: list[dict[str, Any]]
    """Side effects started but not known to be committed, each with its idempotency key."""
    model_version: str | None
    """Model version in use at this checkpoint."""
    tool_versions: dict[str, Any]
    """Tool name to version."""
    metadata: dict[str, Any]
    """Everything else the run recorded (agent, limits, status markers, errors, source extras)."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (datetimes as ISO strings)."""
        d = asdict(self)
        d["created_at"] = self.created_at.isoformat() if self.created_at else None
        return d

    def _repr_html_(self) -> str:
        from debugger.views import checkpoint_html

        return checkpoint_html(self)


def step_span(first: int, last: int, dash: str = "\u2013") -> str:
    """Steps from ``first`` to ``last`` as one text: ``0–6``, or ``-1`` for one step
    (``-1–-1`` reads as a typo; an agent runtime's input checkpoint is step -1)."""
    return str(first) if first == last else f"{first}{dash}{last}"


@dataclass(frozen=True)
class Run:
    """A run as derived from its checkpoints and effects."""

    run_id: str
    """The run's identifier."""
    agent: str | None
    """Agent name from checkpoint metadata (``metadata.agent``), if any."""
    status: RunStatus
    """Derived status; see docs/status.md for the rule."""
    status_reason: str
    """Why the status was chosen, in words."""
    first_step: int
    """Lowest step index seen."""
    last_step: int
    """Step index of the head checkpoint."""
    checkpoint_count: int
    """Number of checkpoints stored for the run."""
    first_at: datetime | None
    """Creation time of the earliest checkpoint."""
    last_at: datetime | None
    """Creation time of the head checkpoint."""
    budgets: Budgets
    """Budgets consumed at the head checkpoint."""
    limits: dict[str, Any]
    """Budget limits from the head checkpoint's ``metadata.limits`` (may be empty)."""
    model_versions: list[str]
    """Model versions seen, in order of first appearance."""
    schema_versions: list[int]
    """State-schema versions seen."""
    last_error: str | None
    """The last error recorded in metadata, if any."""
    pending_count: int
    """Pending effects at the head checkpoint."""
    replay_of: str | None = None
    """For a replay: the run it replays."""
    replay_from_step: int | None = None
    """For a replay: the step it started from."""

    def steps_text(self, dash: str = "\u2013") -> str:
        """Its steps and checkpoints in words: ``0–6 (7 checkpoints)``."""
        span = step_span(self.first_step, self.last_step, dash)
        n = self.checkpoint_count
        return f"{span} ({n} checkpoint{'' if n == 1 else 's'})"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (datetimes as ISO strings)."""
        d = asdict(self)
        for key in ("first_at", "last_at"):
            value = getattr(self, key)
            d[key] = value.isoformat() if value else None
        return d

    def _repr_html_(self) -> str:
        from debugger.views import run_html

        return run_html(self)


@dataclass(frozen=True)
class Effect:
    """A side effect (a write to the outside world) and what became of it."""

    run_id: str
    """The run that caused it."""
    effect_id: str
    """Row identity in the store (given by the source or derived from content)."""
    step_index: int
    """Step during which the effect was attempted."""
    idempotency_key: str | None
    """Key that lets the system of record recognise a repeat; None is an audit finding."""
    tool: str
    """The write tool (for example ``issue_refund``)."""
    args: Any
    """Arguments of the write."""
    status: EffectStatus
    """pending, committed, failed, or unknown (a timeout: outcome not known)."""
    result: Any
    """What the system of record answered, if anything."""
    created_at: datetime | None = None
    """When the effect was recorded."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        d = asdict(self)
        d["created_at"] = self.created_at.isoformat() if self.created_at else None
        return d


@dataclass(frozen=True)
class ToolCall:
    """One entry of the tape: a tool or model call with its request and response."""

    run_id: str
    """The run that made the call."""
    step_index: int
    """Step during which it was made."""
    seq: int
    """Order of the call within the run."""
    kind: CallKind
    """``tool`` or ``model``."""
    name: str
    """Tool name, or model name for model calls."""
    request: Any
    """Arguments or model request."""
    response: Any
    """What came back (None if it failed)."""
    error: str | None
    """Error text if the call failed or timed out."""
    idempotency_key: str | None
    """Key for writes."""
    is_write: bool
    """True for calls with side effects."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class QuarantinedRow:
    """A source row that could not be imported, kept with its reason."""

    table: str
    """Source table (``checkpoints``, ``effects``, ``tool_calls``, ...)."""
    source_key: str
    """How to find the row in the source (row number or key columns)."""
    reason: str
    """Why it was rejected."""
    raw: str
    """The raw row as JSON text, truncated to a few KB."""


@dataclass(frozen=True)
class TableCounts:
    """Import counts of one table;
    ``read == imported + updated + already_present + quarantined``."""

    read: int = 0
    """Rows read from the source."""
    imported: int = 0
    """Rows newly inserted."""
    already_present: int = 0
    """Rows that were in the store already, unchanged (re-import or duplicates)."""
    quarantined: int = 0
    """Rows rejected, each with a reason in ``quarantine``."""
    updated: int = 0
    """Rows in the store already whose content changed in the source: rewritten."""


@dataclass(frozen=True)
class ImportReport:
    """What one import did, per table, with the quarantine reasons."""

    source_id: int
    """Row id in the store's ``sources`` table."""
    kind: str
    """sqlite, postgres or parquet."""
    flavour: str
    """native, langgraph or mapped."""
    location: str
    """Where the source is, with credentials stripped."""
    tables: dict[str, TableCounts] = field(default_factory=dict)
    """Counts per canonical table."""
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    """Reason to number of rows quarantined for it."""
    runs_touched: int = 0
    """Runs whose derived row was recomputed."""
    seconds: float = 0.0
    """Wall time of the import."""
    filtered: dict[str, Any] | None = None
    """The runs the import was limited to (``{"runs": [...], "since": ISO time}``, from
    ``--run``/``--since``), or None when it read every run."""

    @property
    def total(self) -> TableCounts:
        """Counts summed over tables."""
        t = self.tables.values()
        return TableCounts(
            read=sum(c.read for c in t),
            imported=sum(c.imported for c in t),
            already_present=sum(c.already_present for c in t),
            quarantined=sum(c.quarantined for c in t),
            updated=sum(c.updated for c in t),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict with the totals."""
        d = asdict(self)
        d["total"] = asdict(self.total)
        return d

    def summary(self) -> str:
        """One line for people: read = imported (+ updated) + already present + quarantined."""
        t = self.total
        updated = f"{t.updated:,} updated + " if t.updated else ""
        return (
            f"read {t.read:,} rows = {t.imported:,} imported + {updated}"
            f"{t.already_present:,} already "
            f"present + {t.quarantined:,} quarantined ({self.runs_touched} runs updated, "
            f"{self.seconds:.2f}s)"
        )


Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
VerdictKind = Literal["completed", "resumable", "resumable_after_checks", "restart_required"]


@dataclass(frozen=True)
class Finding:
    """One thing the resumability audit found in a run; see docs/audit.md for every rule."""

    rule_id: str
    """The rule that fired (for example ``effect-outcome-unknown``)."""
    severity: Severity
    """``error`` (unsafe or wrong), ``warning`` (needs a look), ``info`` (context)."""
    step_index: int | None
    """The step it points at (None for the run as a whole)."""
    message: str
    """What was found, with the values involved."""
    hint: str
    """What to do about it."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class EffectCheck:
    """A pending effect a resume must resolve through its key before going on."""

    idempotency_key: str | None
    """Key to look up in the system of record (None: cannot be checked, see findings)."""
    tool: str
    """The write tool."""
    args: Any
    """Its arguments."""
    step_index: int
    """Step during which it was attempted."""
    status: str
    """pending or unknown."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class AuditReport:
    """The audit of one run: verdict, findings, and what a resume would do."""

    run_id: str
    """The audited run."""
    verdict: VerdictKind
    """completed, resumable, resumable_after_checks or restart_required."""
    reasons: list[str]
    """Why this verdict (restart required: why; after checks: what to check)."""
    findings: list[Finding]
    """Every finding, in step order."""
    resume_from: str | None
    """Checkpoint id a resume would continue from (None when completed or restart required)."""
    resume_from_step: int | None
    """Its step."""
    next_step: int | None
    """The step a resume would execute next."""
    verify_effects: list[EffectCheck]
    """Pending effects the resume must resolve by key before the next step."""
    lineage: list[str]
    """Checkpoint ids from the root to the head (the audited path)."""
    branches: list[str]
    """Heads of other branches (forks) of the run, not on the audited path."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)
