"""The audit package's plumbing: the rule registry, the head the audit follows, the verdict
words, and the Audit page's data."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from debugger.audit import RULE_IDS, audit_records, lineage, rule, verdict_title, verdict_word
from debugger.audit.lineage import head_of
from debugger.audit.registry import FAMILIES, all_rules
from debugger.model import Budgets, Checkpoint
from debugger.pages_data.audit import effect_rows, verdict_rows
from debugger.store import Store
from tests.fixtures.audit import MIGRATIONS


def _ckpt(cid: str, parent: str | None, step: int, at: datetime | None) -> Checkpoint:
    return Checkpoint("r", cid, parent, step, 1, at, {"n": step}, "", 0,
                      Budgets(step, step, step), [], "m", {"t": "1"}, {})  # fmt: skip


def test_rules_run_family_by_family_and_ids_are_unique() -> None:
    families = [r.check.__module__.rpartition(".")[2] for r in all_rules()]
    assert families == sorted(families, key=FAMILIES.index)
    assert len(RULE_IDS) == len(set(RULE_IDS))
    assert RULE_IDS[-1] == "fork"


def test_a_rule_id_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="budget-reset"):
        rule("budget-reset")


def test_store_head_and_audit_head_agree_on_every_run(
    audit_runs: Path, audit_sample_store: Path
) -> None:
    forks = 0
    for path in (audit_runs, audit_sample_store):
        with Store.open(path, read_only=True) as store:
            for run in store.run_records():
                ckpts = store.checkpoints(run.run_id)
                if any(not isinstance(c.step_index, int) for c in ckpts):
                    continue
                fingerprint = store.audit_fingerprint(run.run_id)
                assert fingerprint is not None
                assert head_of(ckpts).checkpoint_id == fingerprint[2], run.run_id
                forks += bool(lineage(ckpts)[1])
    assert forks >= 1  # the fixtures hold forked runs, so the agreement covers forks


def test_a_fork_written_later_is_the_head_even_at_a_lower_step() -> None:
    t = [datetime(2026, 3, 1, 9, m) for m in range(5)]
    ckpts = [_ckpt("a", None, 0, t[0]), _ckpt("b", "a", 1, t[1]), _ckpt("c", "b", 2, t[2]),
             _ckpt("d", "a", 1, t[3])]  # fmt: skip
    path, branches = lineage(ckpts)
    assert [c.checkpoint_id for c in path] == ["a", "d"]
    assert [b.checkpoint_id for b in branches] == ["c"]
    report = audit_records("r", ckpts, [], [], head_id="c")  # the store's head wins
    assert report.lineage == ["a", "b", "c"] and report.branches == ["d"]
    assert [f.rule_id for f in report.findings if f.rule_id == "fork"] == ["fork"]


def test_verdict_words() -> None:
    assert verdict_word("resumable_after_checks") == "resumable after checks"
    assert verdict_title("restart_required") == "Restart required"


def test_verdict_rows_name_the_verdict_in_words(audit_runs: Path) -> None:
    with Store.open(audit_runs, read_only=True) as store:
        rows = verdict_rows(store, MIGRATIONS)
        assert len(rows) == len(store.run_records())
    words = {"Completed", "Resumable", "Resumable after checks", "Restart required"}
    assert {r["verdict"] for r in rows} <= words
    assert len({r["verdict"] for r in rows}) > 1


def test_effect_rows_list_what_a_resume_must_verify(audit_runs: Path) -> None:
    from debugger.audit import audit_store

    with Store.open(audit_runs, read_only=True) as store:
        reports = [r for r in audit_store(store, MIGRATIONS) if r.verify_effects]
    assert reports
    rows = effect_rows(reports[0])
    assert [r["key"] for r in rows] == [c.idempotency_key for c in reports[0].verify_effects]
    assert set(rows[0]) == {"key", "tool", "step", "status", "args"}
