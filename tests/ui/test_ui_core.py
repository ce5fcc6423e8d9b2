"""The plain functions behind the pages: SQL console lockdown, page data size, fork tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from debugger import pages_data
from debugger.pages_data import fork_tree
from debugger.store import Store
from debugger.store.console import EXAMPLES, QueryError, run_query
from loaders import ImportOptions, import_source
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.ui.conftest import CRASHED, REEXECUTED, REFUND_KEY


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("DROP TABLE runs", "read-only"),
        ("INSERT INTO runs (run_id) VALUES ('x')", "read-only"),
        ("SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"),
        ("ATTACH '/tmp/other.duckdb' AS other", "disabled by configuration"),
        ("COPY runs TO '/tmp/out.csv'", "disabled by configuration"),
        ("SET enable_external_access = true", "locked"),
        ("INSTALL httpfs", "disabled by configuration"),
        ("USE memory", "memory"),
    ],
)
def test_console_cannot_write_read_files_or_attach(
    sample_store: Path, sql: str, expected: str
) -> None:
    with pytest.raises(QueryError) as err:
        run_query(str(sample_store), sql)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_console_row_limit_and_examples(sample_store: Path) -> None:
    result = run_query(str(sample_store), "SELECT * FROM checkpoints", limit=5)
    assert len(result.frame) == 5 and result.truncated
    for name, sql in EXAMPLES.items():
        assert not run_query(str(sample_store), sql).frame.empty or name.startswith("First")


def test_console_stops_a_query_that_runs_too_long(sample_store: Path) -> None:
    with pytest.raises(QueryError, match="longer than"):
        run_query(str(sample_store), "SELECT count(*) FROM range(100000000000)", timeout_s=0.3)


def test_step_view_of_the_crash_head(sample_store: Path) -> None:
    with Store.open(sample_store, read_only=True) as store:
        view = pages_data.step_view(store, CRASHED)
    assert view.step_index == 6 and view.previous == {
        "step_index": 5,
        "checkpoint_id": f"{CRASHED}/c005",
    }
    assert [e["idempotency_key"] for e in view.pending_effects] == [REFUND_KEY]
    assert view.effect_changes[0]["change"] == "added"
    assert {r["path"] for r in view.diff} >= {"root['next_effect']", "root['phase']"}
    assert [b["name"] for b in view.budgets] == ["tokens_spent", "steps_spent", "wall_clock_ms"]
    assert view.budgets[0]["limit"] == 6000


def test_step_views_from_texts_equal_views_from_parsed_checkpoints(sample_store: Path) -> None:
    """The Timeline diffs states from their stored texts (debugger.diff.text); every step of
    every sample run shows exactly what diffing the parsed checkpoints shows."""
    pages_data.recent.clear_recent()
    with Store.open(sample_store, read_only=True) as store:
        for run_id in store.runs()["run_id"]:
            refs = pages_data.step_refs(store, run_id)
            for ref in refs:
                got = pages_data.step_view(store, run_id, checkpoint_id=ref.checkpoint_id)
                prev_ref = pages_data.previous_ref(refs, ref.position)
                ckpt = store.checkpoint(run_id, checkpoint_id=ref.checkpoint_id)
                prev = (
                    store.checkpoint(run_id, checkpoint_id=prev_ref.checkpoint_id)
                    if prev_ref
                    else None
                )
                assert got == pages_data.view_of(store, ckpt, prev), (run_id, ref.label)


def test_fork_tree_of_a_reexecuted_step(sample_store: Path) -> None:
    with Store.open(sample_store, read_only=True) as store:
        tree = fork_tree.fork_tree(store, REEXECUTED)
    assert tree.branch_points == [f"{REEXECUTED}/c008"]
    assert [(s.first_step, s.last_step) for s in tree.segments] == [(0, 8), (9, 9), (9, 10)]
    assert fork_tree.fork_dot(tree).count("->") == 2


def test_page_data_per_step_stays_small_with_large_states(tmp_path: Path) -> None:
    rows = native_rows(runs=1, steps=3)
    for i, row in enumerate(rows):  # ~1 MB states, a few changes a step
        docs: list[dict[str, Any]] = [{"id": k, "text": "x" * 1000} for k in range(1000)]
        docs[i]["text"] = "changed"
        state = {"docs": docs, "step": i}
        row["working_state"] = json.dumps(state)
    store_path = tmp_path / "big.duckdb"
    with Store.open(store_path) as store:
        import_source(
            store, str(write_native_sqlite(tmp_path / "big.sqlite", rows)), ImportOptions()
        )
    with Store.open(store_path, read_only=True) as store:
        view = pages_data.step_view(store, "run-0", 1)
    assert view.state_bytes > 1_000_000
    assert len(view.diff) > 0 and len(view.to_json()) < 50_000


def test_findings_after_the_last_checkpoint_belong_to_it() -> None:
    found: list[dict[str, Any]] = [
        {"step_index": 7, "rule_id": "a"},
        {"step_index": None, "rule_id": "b"},
        {"step_index": 2, "rule_id": "c"},
    ]
    grouped = pages_data.findings_by_step(found, [0, 1, 2, 3, 4, 5, 6])
    assert {k: [f["rule_id"] for f in v] for k, v in grouped.items()} == {
        6: ["a"],
        None: ["b"],
        2: ["c"],
    }


def test_gc_pause_restores_the_collector() -> None:
    import gc

    from debugger.pages_data.recent import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested (threads may nest): the outer one re-enables
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()
