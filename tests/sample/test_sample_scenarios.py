"""Each scenario's story, checked from the imported store (and the ledger it wrote to)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from debugger.store import Store
from tests.fixtures.sample import SAMPLE_RUN_IDS, SampleFiles

STATUSES = {
    "clean-completed": "completed",
    "crash-at-step-7": "crashed",
    "crash-resumed": "completed",
    "resume-reset-budgets": "completed",
    "resume-reexecuted-email": "completed",
    "parked-approval": "parked",
    "approval-after-policy-change": "completed",
    "budget-exhausted": "budget_exhausted",
    "deploy-mid-run": "completed",
    "tool-timeout": "failed",
    "schema-v1": "completed",
    "schema-v2": "completed",
    "schema-v0-unmigratable": "crashed",
}


@pytest.fixture(scope="module")
def store(sample_store: Path) -> Iterator[Store]:
    with Store.open(sample_store, read_only=True) as s:
        yield s


def _ledger(files: SampleFiles, sql: str, *params: object) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{files.ledger}?mode=ro", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def test_every_scenario_is_a_run_with_its_status(store: Store) -> None:
    runs = {r.run_id: r.status for r in store.run_records()}
    assert set(runs) == set(SAMPLE_RUN_IDS) == set(STATUSES)
    assert runs == STATUSES


def test_clean_run_has_ten_steps_one_refund_one_email(store: Store) -> None:
    steps = [c.step_index for c in store.checkpoints("clean-completed")]
    assert steps == list(range(11))
    effects = store.effects("clean-completed")
    assert [(e.tool, e.status) for e in effects] == [
        ("issue_refund", "committed"),
        ("send_email", "committed"),
    ]
    assert store.checkpoint("clean-completed").working_state["phase"] == "done"


def test_crash_leaves_the_refund_pending_while_the_ledger_holds_it_once(
    store: Store, sample_data: SampleFiles
) -> None:
    head = store.checkpoint("crash-at-step-7")
    assert head.step_index == 6
    [pending] = head.pending_effects
    assert pending["tool"] == "issue_refund"
    key = pending["idempotency_key"]
    assert key == "refund-T-1077-ORD-1077"
    [effect] = store.effects("crash-at-step-7")
    assert (effect.step_index, effect.idempotency_key, effect.status) == (7, key, "pending")
    assert store.tool_calls("crash-at-step-7", step=7) == []  # the crash lost the tape of step 7
    assert _ledger(sample_data, "SELECT count(*) FROM refunds WHERE idempotency_key = ?", key) == [
        (1,)
    ]


def test_correct_resume_checks_the_key_and_pays_once(
    store: Store, sample_data: SampleFiles
) -> None:
    run = "crash-resumed"
    after = store.checkpoint(run, step=7)
    resume = after.metadata["resume"]
    key = "refund-T-1081-ORD-1081"
    assert resume["from_step"] == 6
    assert resume["resolved_effects"] == [
        {"idempotency_key": key, "outcome": "committed", "tool": "issue_refund"}
    ]
    assert after.metadata["deduplicated_effects"] == [key]
    refunds = [e for e in store.effects(run) if e.tool == "issue_refund"]
    assert [(e.status, e.idempotency_key) for e in refunds] == [("committed", key)]
    assert _ledger(sample_data, "SELECT count(*) FROM refunds WHERE idempotency_key = ?", key) == [
        (1,)
    ]
    budgets = [c.budgets for c in store.checkpoints(run)]
    assert all(b.tokens_spent <= n.tokens_spent for b, n in itertools.pairwise(budgets))


def test_naive_resume_drops_the_consumed_tokens(store: Store) -> None:
    cps = {c.step_index: c for c in store.checkpoints("resume-reset-budgets")}
    before, after = cps[5].budgets, cps[6].budgets
    assert before.tokens_spent > 0
    assert after.tokens_spent < before.tokens_spent
    assert after.steps_spent == 1
    assert cps[6].metadata["resume"]["from_step"] == 5
    # what the run really spent is over its limit; the checkpoints never show it
    limit = cps[10].metadata["limits"]["tokens"]
    assert (
        cps[10].budgets.tokens_spent
        < limit
        < cps[5].budgets.tokens_spent + cps[10].budgets.tokens_spent
    )


def test_resume_from_older_checkpoint_sends_the_email_twice_with_one_key(
    store: Store, sample_data: SampleFiles
) -> None:
    run = "resume-reexecuted-email"
    emails = [e for e in store.effects(run) if e.tool == "send_email"]
    assert len(emails) == 2
    assert {e.idempotency_key for e in emails} == {"email-T-1102-refund_issued"}
    assert {e.step_index for e in emails} == {9}
    nines = [c for c in store.checkpoints(run) if c.step_index == 9]
    assert len(nines) == 2
    assert nines[0].parent_id == nines[1].parent_id  # a fork from checkpoint 8
    sent = _ledger(
        sample_data, "SELECT count(*) FROM outbox WHERE idempotency_key = ?",
        "email-T-1102-refund_issued",
    )  # fmt: skip
    assert sent == [(2,)]


def test_parked_run_waits_for_approval(store: Store) -> None:
    head = store.checkpoint("parked-approval")
    assert head.step_index == 5
    assert head.metadata["interrupt"]["type"] == "approval"
    assert head.metadata["interrupt"]["since"].startswith("2026-03-04")
    assert head.working_state["approval"]["status"] == "requested"


def test_late_approval_is_denied_on_reauthorization(store: Store, sample_data: SampleFiles) -> None:
    run = "approval-after-policy-change"
    cps = store.checkpoints(run)
    parked = next(c for c in cps if c.metadata.get("status") == "parked")
    resumed = next(c for c in cps if "resume" in c.metadata)
    assert resumed.created_at is not None and parked.created_at is not None
    assert (resumed.created_at - parked.created_at).days >= 7
    assert resumed.metadata["resume"]["input"]["approved"] is True
    reauth = resumed.working_state["approval"]["reauthorization"]
    assert reauth["allowed"] is False
    assert reauth["policy_version"] != parked.working_state["policy"]["version"]
    assert [e.tool for e in store.effects(run)] == ["send_email"]  # the denial, no refund
    assert _ledger(sample_data, "SELECT count(*) FROM refunds WHERE order_id = 'ORD-1115'") == [
        (0,)
    ]


def test_budget_exhausted_after_the_refund_before_the_email(store: Store) -> None:
    run = store.run("budget-exhausted")
    assert run.budgets.tokens_spent >= run.limits["tokens"]
    head = store.checkpoint("budget-exhausted")
    assert head.metadata["exhausted"] == "tokens"
    assert [e.tool for e in store.effects("budget-exhausted")] == ["issue_refund"]
    assert [p["tool"] for p in head.pending_effects] == ["send_email"]


def test_deploy_changes_the_model_version_mid_run(store: Store) -> None:
    run = store.run("deploy-mid-run")
    assert run.model_versions == ["refund-script-2026.03.1", "refund-script-2026.03.2"]
    cps = store.checkpoints("deploy-mid-run")
    assert cps[4].tool_versions["issue_refund"] != cps[-1].tool_versions["issue_refund"]
    assert cps[5].metadata["resume"]["model_version_before"] == "refund-script-2026.03.1"


def test_timeout_leaves_an_unknown_outcome_the_ledger_knows(
    store: Store, sample_data: SampleFiles
) -> None:
    head = store.checkpoint("tool-timeout")
    assert "timed out" in head.metadata["error"]
    [pending] = head.pending_effects
    assert pending["status"] == "unknown"
    [effect] = store.effects("tool-timeout")
    assert effect.status == "unknown"
    assert effect.idempotency_key == pending["idempotency_key"]
    [call] = [c for c in store.tool_calls("tool-timeout", step=7) if c.is_write]
    assert call.response is None and "timed out" in (call.error or "")
    count = "SELECT count(*) FROM refunds WHERE idempotency_key = ?"
    assert _ledger(sample_data, count, effect.idempotency_key) == [(1,)]


def test_schema_versions(store: Store) -> None:
    assert store.run("schema-v1").schema_versions == [1]
    assert store.run("schema-v2").schema_versions == [2]
    assert store.run("schema-v0-unmigratable").schema_versions == [0]
    assert "ticket_id" in store.checkpoint("schema-v1").working_state
    assert "pending_effect" in store.checkpoint("schema-v2").working_state
    assert isinstance(store.checkpoint("schema-v0-unmigratable").working_state, str)
    others = set(SAMPLE_RUN_IDS) - {"schema-v1", "schema-v2", "schema-v0-unmigratable"}
    assert {v for r in others for v in store.run(r).schema_versions} == {3}
