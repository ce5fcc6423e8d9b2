"""The replay report: what the replay did and how it compares with the original.

Frozen records, JSON-ready through ``to_dict()`` (the CLI's ``--json`` output and the
``report.json`` saved in the replay's output directory have the same keys).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal[
    "completed", "diverged", "end_of_original", "parked", "agent_error", "budget_exhausted",
    "step_limit", "timeout", "memory_limit", "crashed", "sandbox_violation",
]  # fmt: skip
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]
ISOLATION_WORDS = {
    "kernel": "kernel (namespaces: no network, read-only filesystem, own processes)",
    "hooks": "hooks only (in-process guard, the weaker mode: native code is not contained)",
}
"""How each isolation is named in a report."""


@dataclass(frozen=True)
class AlignedStep:
    """A step the replay executed, next to the original's step of the same index."""

    step_index: int
    """The step (the same index in both runs)."""
    original_checkpoint_id: str | None
    """The original's checkpoint at this step, None when it has none (it crashed first)."""
    replay_checkpoint_id: str | None
    """The replay's checkpoint, None when the step did not finish."""
    state_equal: bool | None
    """Working states equal; None when one side has no checkpoint at this step."""
    calls: int
    """Calls the replay made in this step."""
    calls_from_tape: int
    """Of those, answered from the original's tape."""
    divergences: int
    """Divergences found in this step (calls and state)."""
    original_tokens: int | None
    """Tokens spent at the original's checkpoint."""
    replay_tokens: int | None
    """Tokens spent at the replay's checkpoint (carried from the starting checkpoint)."""
    seconds: float | None = None
    """Wall time of the step in the sandbox (agent, answers, copies, comparison)."""


@dataclass(frozen=True)
class Divergence:
    """One way the replay differs from the original."""

    step_index: int
    """Step where it happened."""
    kind: str
    """unexpected_call (the original did not make it), different_args, or state."""
    message: str
    """One line for people."""
    call: dict[str, Any] | None = None
    """The replay's call (kind, name, request, idempotency_key)."""
    original: dict[str, Any] | None = None
    """The original's call it was matched with, if any."""
    diff: list[dict[str, Any]] = field(default_factory=list)
    """Rows (path, kind, old, new): of the arguments, or of the working state."""


@dataclass(frozen=True)
class WriteRecord:
    """A write of one run put next to the other run's writes."""

    step_index: int
    """Step of the write in the run it belongs to."""
    tool: str
    """The write tool."""
    idempotency_key: str | None
    """Its key."""
    args: Any
    """Its arguments."""
    original_step: int | None = None
    """For a duplicate: the step of the original's write it repeats."""
    original_status: str | None = None
    """The original write's effect status (committed, unknown, ...)."""
    matched_by: str | None = None
    """idempotency_key or tool+args: how the two writes were found to be the same."""


@dataclass(frozen=True)
class Violation:
    """An attempt to leave the sandbox, refused."""

    step_index: int
    """Step during which it happened (the starting step for import-time attempts)."""
    kind: str
    """network, file_write, process or signal."""
    detail: str
    """What was attempted."""


@dataclass(frozen=True)
class ReplayReport:
    """Everything a replay found; see docs/replay.md."""

    replay_run_id: str
    """The replay, stored as a run with ``replay_of`` set."""
    run_id: str
    """The original run."""
    from_step: int
    """The checkpoint the replay started from."""
    agent: str
    """The agent that was replayed (module:attribute)."""
    mocks: str | None
    """The mocks module, if any."""
    mode: str
    """strict or lenient."""
    outcome: str
    """completed, diverged, end_of_original, parked, agent_error, budget_exhausted,
    step_limit, timeout, memory_limit, crashed or sandbox_violation (docs/replay.md says
    what each means); decided by the parent process, never taken from the child."""
    reason: str
    """Why the replay ended, in one line."""
    last_step: int
    """The last step the replay finished."""
    steps: list[AlignedStep]
    """Every step the replay executed, aligned with the original."""
    first_divergence: Divergence | None
    """The earliest divergence, with its diff."""
    divergences: list[Divergence]
    """All divergences (strict mode stops after the first)."""
    duplicate_writes: list[WriteRecord]
    """Writes the replay would have made that the original already made: each a duplicate
    side effect if this code ran in production."""
    missing_writes: list[WriteRecord]
    """Writes the original made after the starting step that the replay did not make."""
    ledger: list[dict[str, Any]]
    """Every write the replay attempted (never executed), with where its answer came from."""
    unmatched_original_calls: list[dict[str, Any]]
    """Calls the original made in the replayed steps that the replay never made."""
    violations: list[Violation]
    """Network and file-write attempts refused by the sandbox."""
    budgets_start: dict[str, int]
    """Budgets consumed at the starting checkpoint (the replay continues from them)."""
    budgets_end: dict[str, int]
    """Budgets consumed at the replay's last checkpoint."""
    limits: dict[str, Any]
    """The replay's own limits: timeout_s, max_steps, memory_mb."""
    output_dir: str
    """Where the replay's files are (report.json, replay.sqlite, agent.log)."""
    seconds: float
    """Wall time of the whole replay."""
    migrated_from: int | None = None
    """Schema version of the starting checkpoint when it was migrated, else None."""
    agent_error: str | None = None
    """Traceback tail when the agent raised."""
    isolation: str = "kernel"
    """What isolated the agent: ``kernel`` (namespaces, read-only filesystem, limits) or
    ``hooks`` (the weaker in-process guard only); see docs/replay.md."""

    @property
    def diverged(self) -> bool:
        """True when any divergence was found."""
        return bool(self.divergences)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with stable keys."""
        d = asdict(self)
        d["diverged"] = self.diverged
        return d

    def summary_lines(self) -> list[str]:
        """The report for people, a few lines."""
        lines = [
            f"replay {self.replay_run_id} of {self.run_id} from step {self.from_step} "
            f"with {self.agent} ({self.mode}): {self.outcome} - {self.reason}",
            f"isolation: {ISOLATION_WORDS.get(self.isolation, self.isolation)}",
            f"steps run: {len(self.steps)} (last finished: {self.last_step}); budgets "
            f"{self.budgets_start} -> {self.budgets_end}",
        ]
        if self.migrated_from is not None:
            lines.append(f"the starting state was migrated from schema v{self.migrated_from}")
        if self.first_divergence:
            lines.append(f"first divergence: {self.first_divergence.message}")
        else:
            lines.append("no divergence")
        for w in self.duplicate_writes:
            lines.append(
                f"DUPLICATE write at step {w.step_index}: {w.tool} key={w.idempotency_key} "
                f"(the original made it at step {w.original_step}, status "
                f"{w.original_status}; matched by {w.matched_by})"
            )
        for w in self.missing_writes:
            lines.append(
                f"not repeated: {w.tool} key={w.idempotency_key} (original step "
                f"{w.step_index}, status {w.original_status})"
            )
        for v in self.violations:
            lines.append(f"sandbox violation at step {v.step_index}: {v.kind}: {v.detail}")
        lines.append(f"output: {self.output_dir}")
        return lines
