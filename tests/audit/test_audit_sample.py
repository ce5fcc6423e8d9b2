"""Each sample scenario yields exactly the findings and verdict its story says.

The audit of every sample run is compared with a committed snapshot (JSON of the report and
the `stepscope audit` text). After a deliberate change, rewrite them with
``pytest tests/audit --update-snapshots`` (or ``STEPSCOPE_UPDATE_SNAPSHOTS=1``) and review
the diff: each snapshot was read against the story in sample_checkpoints/README.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.audit import audit_run
from debugger.cli import main
from debugger.store import Store
from sample_checkpoints.scenarios import RUN_IDS
from tests.fixtures.audit import SAMPLE_MIGRATIONS

SNAPSHOTS = Path(__file__).parent / "snapshots"

# What each story says, in short: the verdict and the (rule, step) pairs that must be found.
STORIES: dict[str, tuple[str, list[tuple[str, int]]]] = {
    "clean-completed": ("completed", []),
    "crash-at-step-7": ("resumable_after_checks", [("effect-outcome-unknown", 7)]),
    "crash-resumed": ("completed", [("resume-checked-effects", 7)]),
    "resume-reset-budgets": ("completed", [("budget-reset", 6), ("budget-exceeded", 10)]),
    "resume-reexecuted-email": ("completed", [("step-repeated", 9), ("key-executed-twice", 9),
                                              ("fork", 9)]),
    "parked-approval": ("resumable_after_checks", [("parked-awaiting-approval", 5)]),
    "approval-after-policy-change": ("completed", [("resumed-after-approval", 6)]),
    "budget-exhausted": ("resumable_after_checks", [("budget-exceeded", 8)]),
    "deploy-mid-run": ("completed", [("model-version-changed", 5), ("tool-version-changed", 5),
                                     ("tool-version-changed", 5)]),
    "tool-timeout": ("resumable_after_checks", [("effect-outcome-unknown", 7)]),
    "schema-v1": ("completed", []),
    "schema-v2": ("completed", []),
    "schema-v0-unmigratable": ("restart_required", [("prose-state", 0),
                                                    ("schema-unreachable", 0)]),
}  # fmt: skip


@pytest.fixture(scope="module")
def store(audit_sample_store: Path) -> Iterator[Store]:
    with Store.open(audit_sample_store, read_only=True) as s:
        yield s


def _check(path: Path, text: str, update: bool) -> None:
    if update:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path.name}; run pytest with --update-snapshots"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from the audit"


def test_every_sample_run_has_a_story() -> None:
    assert set(STORIES) == set(RUN_IDS)


@pytest.mark.parametrize("run_id", sorted(STORIES))
def test_sample_run_gives_its_storys_verdict_and_findings(store: Store, run_id: str) -> None:
    verdict, pairs = STORIES[run_id]
    report = audit_run(store, run_id, SAMPLE_MIGRATIONS)
    assert report.verdict == verdict
    assert sorted((f.rule_id, f.step_index) for f in report.findings) == sorted(pairs)


@pytest.mark.parametrize("run_id", sorted(STORIES))
def test_sample_audit_matches_its_snapshot(
    audit_sample_store: Path, run_id: str, update_snapshots: bool
) -> None:
    for fmt, args in (("json", ["--json"]), ("txt", [])):
        result = CliRunner().invoke(
            main, ["audit", run_id, "--migrations", SAMPLE_MIGRATIONS,
                   "--store", str(audit_sample_store), *args],
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        if fmt == "json":
            json.loads(result.stdout)
        _check(SNAPSHOTS / f"{run_id}.{fmt}", result.stdout, update_snapshots)


def test_resume_plans_of_the_open_runs(store: Store) -> None:
    crash = audit_run(store, "crash-at-step-7", SAMPLE_MIGRATIONS)
    assert (crash.resume_from_step, crash.next_step) == (6, 7)
    assert [(c.idempotency_key, c.tool) for c in crash.verify_effects] == [
        ("refund-T-1077-ORD-1077", "issue_refund")
    ]
    timeout = audit_run(store, "tool-timeout", SAMPLE_MIGRATIONS)
    assert timeout.next_step == 7  # the failed step is retried, after its key is checked
    assert [c.status for c in timeout.verify_effects] == ["unknown"]
    budget = audit_run(store, "budget-exhausted", SAMPLE_MIGRATIONS)
    assert [(c.tool, c.status) for c in budget.verify_effects] == [("send_email", "planned")]
    assert any("raise the tokens limit" in r for r in budget.reasons)


def test_without_migrations_old_schema_runs_are_flagged_not_misread(store: Store) -> None:
    for run_id in ("schema-v1", "schema-v2"):
        report = audit_run(store, run_id)
        assert [f.rule_id for f in report.findings] == ["schema-unchecked"]


def test_the_audit_is_the_same_whichever_sample_file_was_imported(
    store: Store, tmp_path: Path
) -> None:
    from debugger.audit import audit_store
    from loaders import ImportOptions, import_source
    from sample_checkpoints import DATA_DIR

    with Store.open(tmp_path / "parquet.duckdb") as other:
        import_source(other, str(DATA_DIR / "parquet"), ImportOptions())
        from_parquet = {r.run_id: r.to_dict() for r in audit_store(other, SAMPLE_MIGRATIONS)}
    from_native = {r.run_id: r.to_dict() for r in audit_store(store, SAMPLE_MIGRATIONS)}
    assert from_parquet == from_native
