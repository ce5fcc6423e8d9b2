"""Run numbers are read at once on the first lookup, and runs imported later still resolve."""

from __future__ import annotations

from pathlib import Path

from debugger.store import Store
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite


def test_run_numbers_are_read_at_once_and_new_runs_still_resolve(tmp_path: Path) -> None:
    rows = native_rows(runs=4, steps=3)
    first = write_native_sqlite(tmp_path / "a.sqlite", [r for r in rows if r["run_id"] != "run-3"])
    second = write_native_sqlite(tmp_path / "b.sqlite", rows)
    with Store.open(tmp_path / "s.duckdb") as store:
        import_source(store, str(first))
        store.checkpoint("run-0", 1)
        assert set(store._run_nums) == {"run-0", "run-1", "run-2"}
        import_source(store, str(second))
        assert store.checkpoint("run-3", 2).step_index == 2
