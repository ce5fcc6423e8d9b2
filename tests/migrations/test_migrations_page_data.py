"""The Migrations page's data, read without Streamlit."""

from __future__ import annotations

from pathlib import Path

from debugger.migrations import dry_run, load_registry
from debugger.pages_data.migrations import (
    change_rows,
    checkpoint_labels,
    dry_run_rows,
    failure_rows,
    version_rows,
)
from debugger.store import Store
from tests.fixtures.audit import SAMPLE_MIGRATIONS


def test_version_rows_count_every_checkpoint(audit_sample_store: Path) -> None:
    registry = load_registry(SAMPLE_MIGRATIONS)
    with Store.open(audit_sample_store, read_only=True) as store:
        rows = version_rows(store, registry)
        bare = version_rows(store, None)
        total = sum(len(store.checkpoints(r.run_id)) for r in store.run_records())
    assert sum(r["checkpoints"] for r in rows) == total
    assert {"0", "3"} <= {r["schema_version"] for r in rows}
    assert {r["schema_version"]: r["reaches current"] for r in rows}["0"] is False
    assert all("reaches current" not in r for r in bare)


def test_dry_run_rows_match_the_report(audit_sample_store: Path) -> None:
    registry = load_registry(SAMPLE_MIGRATIONS)
    assert registry is not None
    with Store.open(audit_sample_store, read_only=True) as store:
        report = dry_run(store, registry)
        labels = checkpoint_labels(store.checkpoints("schema-v0-unmigratable"))
    rows = dry_run_rows(report)
    assert [r["checkpoints"] for r in rows] == [v.checkpoints for v in report.versions]
    by_version = {r["version"]: r for r in rows}
    assert by_version["0"]["path"].startswith("none: ")
    assert by_version["3"]["path"] == "3"
    assert len(failure_rows(report)) == sum(len(v.failures) for v in report.versions)
    assert labels[0].startswith("step 0 · v0 · ")


def test_change_rows_shorten_long_values() -> None:
    rows = change_rows({"a": 1, "note": "x"}, {"a": 2, "note": "y" * 300})
    assert {r["path"] for r in rows} == {"root['a']", "root['note']"}
    long = next(r for r in rows if r["path"] == "root['note']")
    assert len(long["migrated"]) == 120 and long["migrated"].endswith("…")
