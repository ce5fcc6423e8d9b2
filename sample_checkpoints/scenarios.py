"""The incident scenarios: each one a named run, played by the runtime with injected faults.

Every scenario uses the real runtime (``debugger.runtime``) on the refund desk; faults are
options of the runtime (a crash point, a stop between steps, a timeout, a naive resume),
never edits of the files afterwards. A :class:`~debugger.runtime.ManualClock` per scenario
makes every timestamp and wall-clock budget the same on every regeneration.
README.md tells each scenario's story.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from debugger.runtime import Faults, Limits, ManualClock, Runtime, SimulatedCrash
from debugger.runtime.clock import iso
from sample_checkpoints.refund_desk import migrations
from sample_checkpoints.refund_desk.agent import RefundDesk, agent, initial_state
from sample_checkpoints.refund_desk.ledger import Ledger
from sample_checkpoints.refund_desk.legacy import LegacyRefundDesk, PrototypeRefundDesk
from sample_checkpoints.refund_desk.model import scripted_model

LIMITS = Limits(tokens=6000, steps=20, wall_clock_ms=120_000)
"""Budget limits of every scenario unless it says otherwise."""

POLICIES = (
    ("2025-11", "2025-11-01", 30, 20000),
    ("2026-03", "2026-03-06", 14, 20000),
)
"""(version, effective_from, window_days, approval_over_cents): the window shrinks on March 6."""


@dataclass(frozen=True)
class Scenario:
    """One named run: its ticket, its order, when it starts, and how it is played."""

    run_id: str
    ticket: dict[str, Any]
    order: dict[str, Any]
    start: datetime
    play: Callable[[Env, Scenario], None]


class Env:
    """The working files of one regeneration: the runs database and the ledger."""

    def __init__(self, work: Path) -> None:
        self.runs_db = work / "runs.sqlite"
        self.ledger_db = work / "ledger.sqlite"

    def seed(self, scenarios: list[Scenario]) -> None:
        """Create the ledger with the refund policies and every scenario's order."""
        ledger = Ledger(self.ledger_db, ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), "OFF")
        ledger.con.executemany("INSERT INTO refund_policies VALUES (?, ?, ?, ?)", POLICIES)
        cols = (
            "order_id",
            "customer_email",
            "item",
            "category",
            "total_cents",
            "delivered_on",
            "status",
        )
        ledger.con.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)",
            [tuple(s.order[c] for c in cols) for s in sorted(scenarios, key=_order_id)],
        )
        ledger.close()

    def runtime(
        self, clock: ManualClock, runtime_agent: Any = agent, **kw: Any
    ) -> tuple[Runtime, Ledger]:
        """A runtime (one 'process') on the shared files; close both when done."""
        # scratch files: a regeneration that dies is simply run again
        ledger = Ledger(self.ledger_db, clock, "OFF")
        versions = kw.pop("tool_versions", None)
        model = scripted_model(clock, kw.pop("model_version", "refund-script-2026.03.1"))
        rt = Runtime(
            self.runs_db,
            runtime_agent,
            tools=ledger.tools(versions),
            model=model,
            limits=kw.pop("limits", LIMITS),
            clock=clock,
            migrations=migrations,
            synchronous="OFF",
            **kw,
        )
        return rt, ledger


def _clock(s: Scenario) -> ManualClock:
    return ManualClock(s.start, tick_ms=3)


def _order_id(s: Scenario) -> str:
    return str(s.order["order_id"])


def _run(
    env: Env, s: Scenario, clock: ManualClock, faults: Faults | None = None, **kw: Any
) -> None:
    runtime_agent = kw.pop("runtime_agent", agent)
    state = kw.pop("state", None) or initial_state(s.ticket)
    rt, ledger = env.runtime(clock, runtime_agent, **kw)
    try:
        rt.start(s.run_id, state, faults=faults)
    except SimulatedCrash:
        pass  # the process died: nothing after the crash point was written
    finally:
        rt.close()
        ledger.close()


def _resume(env: Env, s: Scenario, clock: ManualClock, **kw: Any) -> None:
    opts = {k: kw.pop(k) for k in ("input", "from_step", "faults") if k in kw}
    rt, ledger = env.runtime(clock, **kw)
    try:
        rt.resume(s.run_id, **opts)
    finally:
        rt.close()
        ledger.close()


# -- the plays ----------------------------------------------------------------------------


def clean(env: Env, s: Scenario) -> None:
    """Ten steps, refund and email, completed."""
    _run(env, s, _clock(s))


def crash_at_7(env: Env, s: Scenario) -> None:
    """The worker dies right after issue_refund returned, before checkpoint 7."""
    _run(env, s, _clock(s), Faults(crash_after_effect=("issue_refund", 7)))


def crash_then_resume(env: Env, s: Scenario) -> None:
    """Same crash; a new worker resumes 20 minutes later and checks the refund's key."""
    clock = _clock(s)
    _run(env, s, clock, Faults(crash_after_effect=("issue_refund", 7)))
    clock.advance(20 * 60_000)
    _resume(env, s, clock)


NAIVE_LIMITS = Limits(tokens=1400, steps=12, wall_clock_ms=120_000)


def naive_resume(env: Env, s: Scenario) -> None:
    """Stopped after step 5 by a restart; resumed by a runtime that resets the budgets."""
    clock = _clock(s)
    _run(env, s, clock, Faults(stop_after_step=5), limits=NAIVE_LIMITS)
    clock.advance(12 * 60_000)
    _resume(env, s, clock, faults=Faults(reset_budgets=True), limits=NAIVE_LIMITS)


def reexecuted_email(env: Env, s: Scenario) -> None:
    """Killed after step 9; resumed from checkpoint 8 by a script that ignores the effects."""
    clock = _clock(s)
    _run(env, s, clock, Faults(stop_after_step=9))
    clock.advance(30 * 60_000)
    _resume(env, s, clock, from_step=8, faults=Faults(ignore_recorded_effects=True))


def parked(env: Env, s: Scenario) -> None:
    """A large refund waits for a person's approval."""
    _run(env, s, _clock(s))


def approval_late(env: Env, s: Scenario) -> None:
    """Approved eight days later; the policy changed meanwhile, re-authorization denies it."""
    clock = _clock(s)
    _run(env, s, clock)
    clock.set(s.start + timedelta(days=8, hours=1, minutes=12))
    approval = {"approved": True, "by": "maria.keller", "at": iso(clock.now())}
    _resume(env, s, clock, input=approval)


TIGHT_LIMITS = Limits(tokens=1200, steps=20, wall_clock_ms=120_000)


def out_of_tokens(env: Env, s: Scenario) -> None:
    """A tight token budget runs out after the refund and before the email."""
    _run(env, s, _clock(s), limits=TIGHT_LIMITS)


def deploy(env: Env, s: Scenario) -> None:
    """Stopped by a deploy after step 4; resumed on the new model and refund tool versions."""
    clock = _clock(s)
    _run(env, s, clock, Faults(stop_after_step=4))
    clock.advance(7 * 60_000)
    _resume(
        env,
        s,
        clock,
        model_version="refund-script-2026.03.2",
        tool_versions={"issue_refund": "3.1.0", "find_refund": "3.1.0"},
    )


def timeout(env: Env, s: Scenario) -> None:
    """issue_refund times out: the ledger got it, the agent never heard back."""
    _run(env, s, _clock(s), Faults(timeout=("issue_refund", 7)))


OLD_TOOLS = {
    "lookup_order": "1.2.0",
    "check_refund_policy": "1.9.1",
    "find_refund": "2.4.0",
    "issue_refund": "2.4.0",
    "send_email": "1.0.3",
}


def schema_v1(env: Env, s: Scenario) -> None:
    """Written by the January release (state schema v1)."""
    legacy = LegacyRefundDesk(1)
    _run(
        env,
        s,
        _clock(s),
        runtime_agent=legacy,
        state=legacy.initial_state(initial_state(s.ticket)),
        model_version="refund-script-2026.01.3",
        tool_versions=OLD_TOOLS,
    )


def schema_v2(env: Env, s: Scenario) -> None:
    """Written by the February release (state schema v2)."""
    legacy = LegacyRefundDesk(2)
    _run(
        env,
        s,
        _clock(s),
        runtime_agent=legacy,
        state=legacy.initial_state(initial_state(s.ticket)),
        model_version="refund-script-2026.02.1",
    )


def schema_v0(env: Env, s: Scenario) -> None:
    """The prototype (v0, prose state), stopped after two steps and never finished."""
    proto = PrototypeRefundDesk()
    _run(
        env,
        s,
        _clock(s),
        Faults(stop_after_step=2),
        runtime_agent=proto,
        state=proto.initial_state(s.ticket),
        model_version="refund-proto-2025.11",
        tool_versions=OLD_TOOLS,
    )


# -- the cast -----------------------------------------------------------------------------


def _s(
    run_id: str,
    n: int,
    customer: str,
    item: str,
    cents: int,
    delivered: str,
    opened: datetime,
    play: Callable[[Env, Scenario], None],
    message: str,
) -> Scenario:
    email = customer.lower().replace(" ", ".") + "@example.com"
    order_id = f"ORD-{n}"
    ticket = {
        "id": f"T-{n}",
        "customer": customer,
        "customer_email": email,
        "order_id": order_id,
        "message": message,
        "opened_on": opened.date().isoformat(),
    }
    order = {
        "order_id": order_id,
        "customer_email": email,
        "item": item,
        "category": "home",
        "total_cents": cents,
        "delivered_on": delivered,
        "status": "delivered",
    }
    return Scenario(run_id, ticket, order, opened, play)


def _at(day: int, hour: int, minute: int = 0, month: int = 3, year: int = 2026) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# fmt: off
SCENARIOS: list[Scenario] = [
    _s("clean-completed", 1042, "Ada Moreno", "noise-cancelling headphones", 8900,
       "2026-02-20", _at(2, 9), clean, "The headphones crackle. I'd like a refund please."),
    _s("crash-at-step-7", 1077, "Bruno Sato", "coffee grinder", 12999, "2026-02-24",
       _at(2, 11), crash_at_7, "Grinder arrived broken, refund please."),
    _s("crash-resumed", 1081, "Chiara Okafor", "desk lamp", 6450, "2026-02-25", _at(2, 14),
       crash_then_resume, "The lamp flickers. Please refund it."),
    _s("resume-reset-budgets", 1090, "Dmitri Laine", "blender", 15200, "2026-02-26",
       _at(3, 9), naive_resume, "Blender motor died after a week. I want a refund."),
    _s("resume-reexecuted-email", 1102, "Elif Brandt", "tea kettle", 4500, "2026-02-27",
       _at(3, 13), reexecuted_email, "Kettle lid doesn't close, refund please."),
    _s("parked-approval", 1110, "Farah Quist", "espresso machine", 48000, "2026-02-25",
       _at(4, 10), parked, "The espresso machine leaks. Full refund please."),
    _s("approval-after-policy-change", 1115, "Goran Ilic", "stand mixer", 52000,
       "2026-02-12", _at(3, 16), approval_late, "Mixer bowl cracked on first use, refund."),
    _s("budget-exhausted", 1121, "Hana Novak", "air purifier", 9900, "2026-02-28",
       _at(4, 15), out_of_tokens, "The purifier is too loud. Can I get a refund?"),
    _s("deploy-mid-run", 1130, "Ivo Petrov", "rice cooker", 7500, "2026-03-01", _at(5, 9),
       deploy, "Rice cooker burns everything. Refund please."),
    _s("tool-timeout", 1138, "Jun Takeda", "standing fan", 18000, "2026-03-01",
       _at(5, 14), timeout, "Fan blade is bent, I'd like a refund."),
    _s("schema-v1", 901, "Kai Lindqvist", "toaster", 3900, "2026-01-08",
       _at(14, 10, month=1), schema_v1, "Toaster only heats one side. Refund please."),
    _s("schema-v2", 950, "Lena Fischer", "hand mixer", 5600, "2026-02-02",
       _at(10, 11, month=2), schema_v2, "Hand mixer stopped working, refund please."),
    _s("schema-v0-unmigratable", 817, "Mateo Ruiz", "waffle iron", 6900, "2025-11-20",
       _at(1, 15, month=12, year=2025), schema_v0, "Waffle iron sticks, I want a refund."),
]
# fmt: on
"""Every scenario, in the order they are played (their ledger rows follow this order)."""

RUN_IDS = tuple(s.run_id for s in SCENARIOS)


def by_id(run_id: str) -> Scenario:
    """The scenario of a run id."""
    for s in SCENARIOS:
        if s.run_id == run_id:
            return s
    raise KeyError(run_id)


def play_all(env: Env) -> None:
    """Seed the ledger and play every scenario, in order."""
    env.seed(SCENARIOS)
    for s in SCENARIOS:
        s.play(env, s)


def rerun_as_current(run_id: str, work: Path) -> Path:
    """Play a scenario's ticket with the current (v3) agent into ``work``; returns the runs file.

    The migration tests compare a schema-v1 or v2 run, migrated, with this: what the current
    runtime writes for the same ticket at the same times. The scenarios before it are played
    first, so the ledger hands out the same refund and message ids.
    """
    target = by_id(run_id)
    env = Env(work)
    env.seed(SCENARIOS)
    for s in SCENARIOS[: SCENARIOS.index(target)]:
        s.play(env, s)
    _run(env, target, _clock(target), runtime_agent=RefundDesk())
    return env.runs_db
