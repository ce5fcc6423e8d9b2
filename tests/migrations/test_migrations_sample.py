"""The sample's v1 and v2 checkpoints migrate to exactly what the v3 runtime writes; the v0
run needs a restart; the sample store's dry run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from debugger.migrations import RestartRequired, dry_run, load_registry, migrated
from debugger.store import Store
from sample_checkpoints.scenarios import rerun_as_current
from tests.fixtures.audit import SAMPLE_MIGRATIONS


def _written_states(runs_db: Path, run_id: str) -> list[tuple[int, object]]:
    con = sqlite3.connect(runs_db)
    rows = con.execute(
        "SELECT step_index, working_state FROM checkpoints WHERE run_id = ? "
        "ORDER BY checkpoint_seq",
        [run_id],
    ).fetchall()
    con.close()
    return [(step, json.loads(state)) for step, state in rows]


@pytest.mark.parametrize(("run_id", "version"), [("schema-v1", 1), ("schema-v2", 2)])
def test_old_checkpoints_migrate_to_what_the_v3_runtime_writes(
    audit_sample_store: Path, tmp_path: Path, run_id: str, version: int
) -> None:
    registry = load_registry(SAMPLE_MIGRATIONS)
    assert registry is not None
    with Store.open(audit_sample_store, read_only=True) as store:
        ckpts = store.checkpoints(run_id)
    assert {c.schema_version for c in ckpts} == {version}
    results = [migrated(c, registry) for c in ckpts]
    assert {(r.status, tuple(r.path)) for r in results} == {("migrated", (*range(version, 4),))}
    expected = _written_states(rerun_as_current(run_id, tmp_path), run_id)
    assert [(c.step_index, r.migrated) for c, r in zip(ckpts, results, strict=True)] == expected
    assert all(r.stored != r.migrated for r in results)  # the stored shape really is old


def test_version_0_run_is_restart_required(audit_sample_store: Path) -> None:
    registry = load_registry(SAMPLE_MIGRATIONS)
    assert registry is not None
    with Store.open(audit_sample_store, read_only=True) as store:
        head = store.checkpoint("schema-v0-unmigratable")
    with pytest.raises(RestartRequired, match="no migration from schema version 0"):
        migrated(head, registry)


def test_sample_store_dry_run(audit_sample_store: Path) -> None:
    registry = load_registry(SAMPLE_MIGRATIONS)
    assert registry is not None
    with Store.open(audit_sample_store, read_only=True) as store:
        report = dry_run(store, registry)
        [(total,)] = store.sql("SELECT count(*) FROM checkpoints")
    by = {v.version: v for v in report.versions}
    assert set(by) == {0, 1, 2, 3}
    assert (by[0].restart_required, by[0].clean) == (by[0].checkpoints, 0) and by[0].checkpoints
    for v in (1, 2, 3):
        assert (by[v].clean, by[v].failed, by[v].restart_required) == (by[v].checkpoints, 0, 0)
    assert report.total == total
