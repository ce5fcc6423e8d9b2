"""The run status rule of docs/status.md, one test per rule, in its order of precedence.

Each test describes one run; all of them are written into one source and imported once
(``derived``), so the whole rule is checked in one import.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import debugger
from debugger.model import Run
from debugger.store import Store, derive
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite

OLD = "2026-01-01T10:00:"  # far in the past: such a run without a status is stale
Rows = list[dict[str, Any]]
SCENARIOS: dict[str, tuple[Rows, Rows]] = {}


def step(s: int, metadata: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    row = dict(native_rows(1, 1)[0], run_id="r", step_index=s, created_at=f"{OLD}{s:02d}")
    row["metadata"] = json.dumps(metadata or {})
    return {**row, **changes}


def ago(minutes: int) -> str:
    """A time ``minutes`` before the import (resolved when the module's store is built)."""
    return f"AGO:{minutes}"


def resolve(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    stamp = row.get("created_at")
    if isinstance(stamp, str) and stamp.startswith("AGO:"):
        minutes = int(stamp.removeprefix("AGO:"))
        return dict(row, created_at=(now - timedelta(minutes=minutes)).isoformat())
    return row


def effect(step_index: int, key: str, status: str) -> dict[str, Any]:
    return {"run_id": "r", "step_index": step_index, "idempotency_key": key,
            "tool": "issue_refund", "args": "{}", "status": status, "result": None,
            "created_at": f"{OLD}{step_index:02d}"}  # fmt: skip


def scenario(name: str, rows: Rows, effects: Rows | None = None) -> str:
    """Register a run (its rows get run id ``name``) for the shared import."""
    SCENARIOS[name] = (
        [dict(r, run_id=name) for r in rows],
        [dict(e, run_id=name) for e in effects or []],
    )
    return name


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario of this module imported once."""
    d = tmp_path_factory.mktemp("status")
    now = datetime.now(UTC)  # not at collection: the suite may run long before this
    rows = [resolve(r, now) for rs, _ in SCENARIOS.values() for r in rs]
    effects = [e for _, es in SCENARIOS.values() for e in es]
    src = write_native_sqlite(d / "src.sqlite", rows, effects)
    with Store.open(d / "s.duckdb") as store:
        import_source(store, str(src))
    return d / "s.duckdb"


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    with debugger.open(store_path) as s:
        yield s


@pytest.fixture
def derived(store: Store) -> Any:
    """``derived(name)``: the derived record of a scenario's run."""

    def get(name: str) -> Run:
        return store.run(name)

    return get


HEAD_WINS = scenario(
    "head-wins",
    [step(0), step(1, {"status": "parked", "error": "boom"}, pending_effects='[{"tool": "t"}]')],
)
UNKNOWN = scenario(
    "unknown-status", [step(0, {"status": "completed"}), step(1, {"status": "Weird"})]
)
UPPER = scenario("upper-case", [step(0, {"status": "COMPLETED"})])
ERROR = scenario("error", [step(0), step(1, {"error": "ToolTimeout: ledger"})])
EARLIER_ERROR = scenario(
    "earlier-error", [step(0, {"error": "retry me"}), step(1, {"status": "completed"})]
)
INTERRUPTS = [
    scenario(f"parked-{i}", [step(0), step(1, m)])
    for i, m in enumerate([{"interrupt": {"reason": "approval"}}, {"awaiting_approval": True}])
]
LIMITS = [
    (
        scenario(
            f"limit-{reason}",
            [
                step(0),
                step(1, {"limits": limits}, tokens_spent=100, steps_spent=1, wall_clock_ms=1500),
            ],
        ),
        limits,
        reason,
    )
    for limits, reason in [
        ({"tokens": 100}, "token limit reached"),
        ({"steps": 1}, "step limit reached"),
        ({"wall_clock_ms": 1500}, "wall-clock limit reached"),
    ]
]
BELOW = scenario(
    "below-limits",
    [
        step(0),
        step(
            1,
            {"limits": {"tokens": 101, "steps": 2}},
            tokens_spent=100,
            steps_spent=1,
            created_at=ago(1),
        ),
    ],
)
PENDING = scenario(
    "pending-at-head",
    [
        step(0),
        step(
            1,
            created_at=ago(1),
            pending_effects=json.dumps([{"tool": "issue_refund", "idempotency_key": "k"}]),
        ),
    ],
)
OPEN = scenario("open-effect", [step(0), step(1, created_at=ago(1))], [effect(1, "k", "unknown")])
RESOLVED = scenario(
    "resolved-effect",
    [step(0), step(1, created_at=ago(1))],
    [effect(1, "k", "pending"), effect(1, "k", "committed")],
)
EARLIER_OPEN = scenario(
    "earlier-open-effect", [step(0), step(1, created_at=ago(1))], [effect(0, "k", "unknown")]
)
STALE = scenario("stale", [step(0), step(1, created_at=ago(90))])
RECENT = scenario("recent", [step(0), step(1, created_at=ago(5))])
NO_TIME = scenario("no-time", [step(0, created_at=None)])
GOING_STALE = scenario("going-stale", [step(0, created_at=ago(30))])
# re-run from step 1 after step 3 failed: the fork's step 2 is newer than step 3
FORK = scenario("fork", [step(0), step(1), step(2), step(3, {"error": "boom"}),
                         step(2, {"status": "completed"}, created_at=f"{OLD}59",
                              working_state='{"f": 1}')])  # fmt: skip


def test_rule1_metadata_status_at_the_head_wins(derived: Any) -> None:
    run = derived(HEAD_WINS)
    assert (run.status, run.status_reason) == ("parked", "metadata.status at the head checkpoint")


def test_rule1_only_the_head_counts_and_unknown_statuses_fall_through(derived: Any) -> None:
    assert derived(UNKNOWN).status == "crashed"  # stale, rule 6: "completed" is not the head


def test_rule1_is_case_insensitive(derived: Any) -> None:
    assert derived(UPPER).status == "completed"


def test_rule2_error_means_failed(derived: Any) -> None:
    run = derived(ERROR)
    assert (run.status, run.last_error) == ("failed", "ToolTimeout: ledger")


def test_rule2_an_earlier_error_is_kept_as_last_error_only(derived: Any) -> None:
    run = derived(EARLIER_ERROR)
    assert (run.status, run.last_error) == ("completed", "retry me")


@pytest.mark.parametrize("name", INTERRUPTS)
def test_rule3_interrupt_means_parked(name: str, derived: Any) -> None:
    run = derived(name)
    assert (run.status, run.status_reason) == ("parked", "interrupted, waiting for input")


@pytest.mark.parametrize(("name", "limits", "reason"), LIMITS)
def test_rule4_a_budget_at_its_limit(
    name: str, limits: dict[str, int], reason: str, derived: Any
) -> None:
    run = derived(name)
    assert (run.status, run.status_reason) == ("budget_exhausted", reason)
    assert run.limits == limits


def test_rule4_below_the_limits_is_not_exhausted(derived: Any) -> None:
    assert derived(BELOW).status == "in_progress"


def test_rule5_pending_effects_at_the_head_mean_crashed(derived: Any) -> None:
    run = derived(PENDING)
    assert (run.status, run.pending_count) == ("crashed", 1)
    assert run.status_reason == "stopped with 1 effect(s) in flight"


def test_rule5_an_open_effect_at_or_after_the_head_means_crashed(derived: Any) -> None:
    run = derived(OPEN)
    assert (run.status, run.status_reason) == ("crashed", "stopped with 1 effect(s) in flight")


def test_rule5_an_effect_resolved_through_its_key_is_not_open(derived: Any) -> None:
    assert derived(RESOLVED).status == "in_progress"


def test_rule5_an_open_effect_before_the_head_step_does_not_count(derived: Any) -> None:
    assert derived(EARLIER_OPEN).status == "in_progress"


def test_rule6_a_silent_head_older_than_an_hour_is_crashed(derived: Any) -> None:
    run = derived(STALE)
    assert run.status == "crashed"
    assert run.status_reason == "no terminal status and no checkpoint for over 3600 s"


def test_rule7_a_recent_head_without_status_is_in_progress(derived: Any) -> None:
    run = derived(RECENT)
    assert (run.status, run.status_reason) == ("in_progress", "no terminal status yet")


def test_rule7_a_head_without_a_time_is_never_stale(derived: Any) -> None:
    assert derived(NO_TIME).status == "in_progress"


def test_rule6_is_applied_when_reading_not_only_when_importing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # derived as in_progress (head 30 minutes old); once the head is older than the
    # limit, reads say crashed without a new import. A smaller limit stands in for time.
    assert store.run(GOING_STALE).status == "in_progress"
    monkeypatch.setattr(derive, "STALE_AFTER_SECONDS", 600)
    assert store.run(GOING_STALE).status == "crashed"
    assert GOING_STALE in [r.run_id for r in store.run_records(status="crashed")]
    assert GOING_STALE in list(store.runs(status="crashed")["run_id"])
    assert GOING_STALE not in list(store.runs(status="in_progress")["run_id"])
    assert store.run(RECENT).status == "in_progress"  # 5 minutes: not stale at 10


def test_the_head_is_the_checkpoint_written_last_even_on_a_fork(store: Store) -> None:
    run = store.run(FORK)
    assert (run.status, run.last_step, run.checkpoint_count) == ("completed", 2, 5)
    assert store.checkpoint(FORK).working_state == {"f": 1}
    assert store.checkpoint(FORK, 2).working_state == {"f": 1}  # newest at that step


def test_rules_match_the_docs() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "status.md").read_text()
    for phrase in ("metadata.status", "metadata.error", "metadata.interrupt",
                   "awaiting_approval", "metadata.limits", "pending", "unknown",
                   f"{derive.STALE_AFTER_SECONDS // 60} minutes", "in_progress"):  # fmt: skip
        assert phrase in doc, phrase
