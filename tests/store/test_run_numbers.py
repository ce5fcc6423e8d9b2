"""Runs are numbered in the order an import first meets them, the same on every import."""

from __future__ import annotations

import random
from pathlib import Path

from debugger.store import Store
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite


def _shuffled_runs(runs: int, seed: int, prefix: str) -> tuple[list[dict[str, object]], list[str]]:
    """Rows of ``runs`` runs in a shuffled run order; the run ids in the order they appear."""
    rows = native_rows(runs=runs, steps=2)
    order = list(range(runs))
    random.Random(seed).shuffle(order)
    out = []
    seen = []
    for r in order:
        run_id = f"{prefix}-{r:04d}"
        seen.append(run_id)
        for row in rows:
            if row["run_id"] == f"run-{r}":
                at = f"2026-11-01T{r // 3600:02d}:{r // 60 % 60:02d}:{r % 60:02d}+00:00"
                out.append({**row, "run_id": run_id, "created_at": at})
    return out, seen


def _numbered(store: Store) -> list[str]:
    return [r for (r,) in store.sql("SELECT run_id FROM run_keys ORDER BY run_num")]


def test_new_runs_are_numbered_in_first_seen_order(tmp_path: Path) -> None:
    # 3,000 runs: more than one vector of DuckDB's, which the old DISTINCT + nextval gave
    # numbers in hash-table order
    rows, seen = _shuffled_runs(3_000, seed=5, prefix="a")
    source = write_native_sqlite(tmp_path / "a.sqlite", rows)
    with Store.open(tmp_path / "s.duckdb") as store:
        import_source(store, str(source))
        [(stored,)] = store.sql("SELECT count(*) FROM checkpoint_rows")
        assert stored == 6_000
        assert _numbered(store) == seen
        [(lo, hi)] = store.sql("SELECT min(run_num), max(run_num) FROM run_keys")
        assert (lo, hi) == (1, 3_000)
        more, more_seen = _shuffled_runs(50, seed=6, prefix="b")
        import_source(store, str(write_native_sqlite(tmp_path / "b.sqlite", rows + more)))
        assert _numbered(store) == seen + more_seen
        [(hi,)] = store.sql("SELECT max(run_num) FROM run_keys")
        assert hi == 3_050
        assert store.checkpoint("b-0007", 1).step_index == 1


def test_the_same_import_gives_the_same_numbers(tmp_path: Path) -> None:
    rows, _ = _shuffled_runs(2_500, seed=9, prefix="r")
    source = write_native_sqlite(tmp_path / "a.sqlite", rows)
    numbers = []
    for name in ("s1", "s2"):
        with Store.open(tmp_path / f"{name}.duckdb") as store:
            import_source(store, str(source))
            numbers.append(store.sql("SELECT run_id, run_num FROM run_keys ORDER BY run_id"))
    assert numbers[0] == numbers[1]
