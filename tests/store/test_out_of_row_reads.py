"""A state kept out of its row is looked for where the store keeps such states: a store with
no whole large states is not asked for one (``debugger.store.reads.Layout``), and what a
store learnt goes stale without a wrong answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from debugger.store import Store
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.store.statements import noted

SPLIT = {"messages": [{"id": f"m{i}", "content": f"m{i} " + "word " * 80} for i in range(100)]}
"""~40 KB whose array elements of 256 characters or more are cut out: split."""
WHOLE = {"blob": "x" * 40_000}
"""~40 KB with no array element to cut: kept whole in ``large_states``."""


def _source(path: Path, run_id: str, state: dict[str, Any]) -> Path:
    base = native_rows(runs=1, steps=1)[0]
    row = {**base, "run_id": run_id, "step_index": 0, "working_state": orjson.dumps(state).decode()}
    return write_native_sqlite(path, [row])


def test_a_store_without_whole_large_states_is_not_asked_for_one(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(_source(tmp_path / "a.sqlite", "split", SPLIT)))
    with Store.open(path, read_only=True) as store, noted(store) as statements:
        for _ in range(3):
            assert store.checkpoint("split", 0).working_state == SPLIT
    # one question, whether it has any, then none
    large = [sql for sql in statements if "large_states" in sql]
    assert len(large) == 1 and "EXISTS" in large[0]


def test_what_a_store_learnt_of_its_layout_is_forgotten_by_its_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(_source(tmp_path / "a.sqlite", "split", SPLIT)))
        assert store.checkpoint("split", 0).working_state == SPLIT  # learnt: none whole
        import_source(store, str(_source(tmp_path / "b.sqlite", "whole", WHOLE)))
        assert store.sql("SELECT count(*) FROM large_states") == [(1,)]
        assert store.checkpoint("whole", 0).working_state == WHOLE
        assert store.checkpoint("split", 0).working_state == SPLIT


def test_a_stale_layout_costs_a_statement_not_a_wrong_answer(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(_source(tmp_path / "a.sqlite", "split", SPLIT)))
        import_source(store, str(_source(tmp_path / "b.sqlite", "whole", WHOLE)))
        # as if learnt before the whole state came, by a connection that did not see it
        store._layout.has_large = False
        assert store.checkpoint("whole", 0).working_state == WHOLE
        store._layout.has_large = True
        assert store.checkpoint("split", 0).working_state == SPLIT
