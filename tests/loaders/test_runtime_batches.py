"""A runtime flavour's checkpoint batches are bounded by rows and by state bytes.

Runtime states are whole conversations; a thousand 1 MB states in one Arrow batch would
hold a gigabyte at once, so ``loaders.runtime_rows`` cuts a batch at ``BATCH_STATE_BYTES``
as well as at ``BATCH_ROWS``. Cutting must change nothing in what is imported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loaders import runtime_rows
from loaders.runtime_rows import RunRows, plans_of, with_state
from tests.fixtures.store_snapshot import do_import, store_tables

PAI = Path(__file__).resolve().parents[1] / "runtimes" / "pydantic_ai" / "data" / "histories"


def _run(n: int, size: int) -> RunRows:
    rows = [
        with_state(
            {"_key": i, "run_id": "r", "checkpoint_id": f"c{i}", "step_index": i},
            b'"' + b"x" * (size - 2) + b'"',
        )
        for i in range(n)
    ]
    return RunRows(rows)


def _batch_sizes(runs: list[RunRows]) -> list[int]:
    sizes = []
    for plan in plans_of(iter(runs), 10_000):
        if plan.table == "checkpoints":
            sizes += [b.num_rows for b in plan.batches]
    return sizes


def test_batches_are_cut_by_state_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_rows, "BATCH_STATE_BYTES", 3_500)
    assert _batch_sizes([_run(7, 1_000), _run(2, 1_000)]) == [3, 3, 3]
    # a state larger than the bound goes alone, never dropped
    assert _batch_sizes([_run(3, 10_000)]) == [1, 1, 1]


def test_batches_are_cut_by_rows() -> None:
    assert _batch_sizes([_run(2_500, 10)]) == [1_024, 1_024, 452]


def test_cutting_by_bytes_imports_the_same(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    do_import(PAI, tmp_path / "whole.duckdb")
    monkeypatch.setattr(runtime_rows, "BATCH_STATE_BYTES", 1)
    report = do_import(PAI, tmp_path / "cut.duckdb")
    assert report.total.quarantined == 0
    assert store_tables(tmp_path / "cut.duckdb") == store_tables(tmp_path / "whole.duckdb")
