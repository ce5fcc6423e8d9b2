"""``stepscope import --run/--since`` on databases SqliteSaver and PostgresSaver wrote.

The scenario threads (tests/langgraph/graphs.py) are written one after another into one
database per saver. Importing some of them must read only their checkpoints (the report's
``read`` is the count of their rows in the source, below the source's total) and give each
of their runs, subgraph namespaces included, exactly what the full import of the same
database gives.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from debugger.model import ImportReport
from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.langgraph.source import uuid6_floor
from tests.langgraph.conftest import Written
from tests.langgraph.functional import FUNCTIONAL_STATUS
from tests.langgraph.graphs import EXPECTED_STATUS

DURABLE = [t for t in EXPECTED_STATUS if t.startswith("durable-")]


def _source_rows(w: Written, sql: str) -> list[tuple[Any, ...]]:
    if w.saver_name == "sqlite":
        con = sqlite3.connect(w.source)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()
    with psycopg.connect(w.source) as pg:
        return pg.execute(sql).fetchall()  # type: ignore[arg-type]


def _threads_rows(w: Written, threads: set[str]) -> int:
    rows = _source_rows(w, "SELECT thread_id FROM checkpoints")
    return sum(1 for (t,) in rows if t in threads)


def _import(w: Written, store: Path, **options: Any) -> ImportReport:
    with Store.open(store) as st:
        return import_source(st, w.source, ImportOptions(**options))


def _runs(store: Path) -> dict[str, dict[str, Any]]:
    with Store.open(store, read_only=True) as st:
        return {r.run_id: asdict(r) for r in st.run_records()}


def _content(store: Path, run: str) -> dict[str, Any]:
    with Store.open(store, read_only=True) as st:
        return {
            "checkpoints": [asdict(c) for c in st.checkpoints(run)],
            "tool_calls": [asdict(c) for c in st.tool_calls(run)],
            "effects": [asdict(e) for e in st.effects(run)],
        }


def _thread(run: str) -> str:
    return run.split("/", 1)[0]


def _check_equals_full(w: Written, store: Path, threads: set[str], report: ImportReport) -> None:
    full = _runs(w.store_path)
    got = _runs(store)
    assert {_thread(r) for r in got} == threads
    assert set(got) == {r for r in full if _thread(r) in threads}  # subgraph runs come along
    for run in got:
        assert got[run] == full[run]
        assert _content(store, run) == _content(w.store_path, run)
    read = report.tables["checkpoints"].read
    assert read == _threads_rows(w, threads)
    assert read < w.report.tables["checkpoints"].read


def test_run_patterns_read_only_those_threads(written: Written, tmp_path: Path) -> None:
    store = tmp_path / "some.duckdb"
    report = _import(written, store, runs=("approval-*", "subgraph"))
    assert report.filtered == {"runs": ["approval-*", "subgraph"], "since": None}
    _check_equals_full(written, store, {"approval-parked", "approval-resumed", "subgraph"}, report)


def _uuid6_time(checkpoint_id: str) -> datetime:
    """The time a LangGraph checkpoint id was made (its version-6 UUID's 60-bit clock)."""
    hexed = checkpoint_id.replace("-", "")
    ticks = (int(hexed[:12], 16) << 12) | int(hexed[13:16], 16)
    micros = (ticks - 0x01B21DD213814000) // 10
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)


def test_uuid6_floor_orders_like_the_ids(written: Written) -> None:
    ids = [r[0] for r in _source_rows(written, "SELECT checkpoint_id FROM checkpoints")]
    for cid in ids[:50]:
        when = _uuid6_time(cid)
        assert uuid6_floor(when) <= cid < uuid6_floor(when + timedelta(microseconds=1))


def test_since_reads_the_threads_active_since(written: Written, tmp_path: Path) -> None:
    # the scenarios run in order: linear, ..., fork, subgraph, send, rich, durability,
    # handoff, the functional API's
    first = min(
        cid for t, cid in _source_rows(written, "SELECT thread_id, checkpoint_id FROM checkpoints")
        if t == "subgraph"
    )  # fmt: skip
    since = _uuid6_time(first)
    store = tmp_path / "since.duckdb"
    report = _import(written, store, since=since.isoformat())
    assert report.filtered is not None and report.filtered["runs"] == []
    later = {"subgraph", "send", "rich", *DURABLE, "handoff", *FUNCTIONAL_STATUS}
    _check_equals_full(written, store, later, report)
    # with --run too, both must hold
    both = tmp_path / "both.duckdb"
    report = _import(written, both, since=since, runs=("s*", "linear"))
    _check_equals_full(written, both, {"subgraph", "send"}, report)
