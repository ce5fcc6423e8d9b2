"""A mapped source (any shape, through a mapping file) goes in as a native one does: its
checkpoints read by DuckDB in one pass (Parquet) or held and inserted together (SQLite),
and the store holds exactly what the batch-by-batch import stores: checkpoints, keys,
parents chained in time order, runs, quarantine records and counts.

Real SQLite files and Parquet files, real mapping files, real DuckDB stores; the batch way
is the same import with the pass withheld.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from debugger.model import ImportReport
from debugger.store import Store
from debugger.store.session import ImportSession
from loaders import ImportOptions, import_source
from loaders import importer as importer_module
from loaders import mapping as mapping_module
from loaders.mapping import MappedFlavour
from tests.fixtures.native import native_rows
from tests.loaders.test_whole_table import (
    _content,
    _counts,
    chain_rows,
    expected_parents,
    recording,
    stored_parents,
)

MAPPING = """\
version = 1

[checkpoints]
table = "{table}"
run_id = "session"
step_index = "turn"
created_at = "saved_at"
working_state = "memory"
schema_version = { value = 3 }
tokens_spent = { column = "doc", path = "$.usage.tokens" }
pending_effects = { column = "doc", path = "$.in_flight" }
metadata = { column = "doc", path = "$.meta" }
"""
"""A legacy table (``snaps`` in SQLite; a Parquet file or glob is the ``checkpoints``
table): some columns renamed, some fields inside a JSON document, a constant, and no
parent column (runs are chained in time order)."""

SNAP_COLUMNS = ("session", "turn", "saved_at", "memory", "doc")
BATCH = 64
"""Rows a batch when the SQLite source is read in batches (the default would make each
source here one batch)."""


def _snap(row: dict[str, Any]) -> dict[str, Any]:
    doc = {"usage": {"tokens": row["tokens_spent"]},
           "in_flight": json.loads(row["pending_effects"]),
           "meta": json.loads(row["metadata"])}  # fmt: skip
    return {"session": row["run_id"], "turn": row["step_index"], "saved_at": row["created_at"],
            "memory": row["working_state"], "doc": json.dumps(doc)}  # fmt: skip


def _rows() -> list[dict[str, Any]]:
    """Snapshots of a few runs read backwards (their chain is not their order), one read
    twice, and bad ones: a state that is not JSON, a missing run, a negative budget."""
    good = [_snap(r) for r in chain_rows()]
    many = [{**_snap(r), "session": f"m-{r['run_id']}"} for r in native_rows(8, 20)]
    bad = [
        {**many[0], "turn": 90, "memory": '{"a": 1'},
        {**many[0], "turn": 91, "session": None},
        {**many[0], "turn": 92, "doc": json.dumps({"usage": {"tokens": -5}})},
    ]
    return [*good, *many[:70], *bad, *many[70:], many[5]]


def _sqlite(path: Path, rows: list[dict[str, Any]]) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE snaps (session TEXT, turn INTEGER, saved_at TEXT, memory TEXT, "
                "doc TEXT)")  # fmt: skip
    con.executemany(
        "INSERT INTO snaps VALUES (?, ?, ?, ?, ?)",
        [tuple(r[c] for c in SNAP_COLUMNS) for r in rows],
    )
    con.commit()
    con.close()
    return path


def _parquet(folder: Path, rows: list[dict[str, Any]]) -> Path:
    """Two files of one dataset (a glob), row groups of 16 rows."""
    folder.mkdir()
    table = pa.Table.from_pylist([{c: r[c] for c in SNAP_COLUMNS} for r in rows])
    half = len(rows) // 2
    pq.write_table(table.slice(0, half), folder / "part-0.parquet", row_group_size=16)
    pq.write_table(table.slice(half), folder / "part-1.parquet", row_group_size=16)
    return folder / "part-*.parquet"


def _import(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: Path, way: str
) -> tuple[ImportReport, list[bool], Path]:
    """Import ``source`` through :data:`MAPPING` one ``way``: ``whole`` (DuckDB's pass),
    ``held`` (batches held for a pass) or ``batches`` (one by one). Returns the report, what
    each pass attempt did, and the store."""
    mapping = tmp_path / "legacy.toml"
    table = "snaps" if source.suffix == ".sqlite" else "checkpoints"
    mapping.write_text(MAPPING.replace("{table}", table), encoding="utf-8")
    store = tmp_path / f"{way}.duckdb"
    taken: list[bool] = []
    options: dict[str, Any] = {}
    with monkeypatch.context() as m:
        m.setattr(ImportSession, "add_whole", recording(ImportSession.add_whole, taken))
        m.setattr(ImportSession, "add_gathered", recording(ImportSession.add_gathered, taken))
        if way != "whole":
            m.setattr(MappedFlavour, "_whole", staticmethod(lambda *a: None))
        if source.suffix == ".sqlite":
            m.setattr(mapping_module, "BATCH_ROWS", BATCH)  # batches this small may be held
            options["batch_rows"] = BATCH
        if way == "batches":
            m.setattr(importer_module, "_gathered", lambda session, plan, batches, o: batches)
        with Store.open(store, read_only=False) as s:
            report = import_source(s, str(source), ImportOptions(mapping=str(mapping), **options))
    return report, taken, store


@pytest.mark.parametrize("kind", ["sqlite", "parquet"])
def test_a_mapped_source_takes_the_passes_and_stores_what_the_batches_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    rows = _rows()
    source = (
        _sqlite(tmp_path / "legacy.sqlite", rows)
        if kind == "sqlite"
        else _parquet(tmp_path / "legacy", rows)
    )
    ways = ("held", "batches") if kind == "sqlite" else ("whole", "held", "batches")
    chained = {(r["session"], r["turn"]) for r in rows if r["session"] and r["turn"] < 90}
    plain = [{"run_id": r["session"], "step_index": r["turn"], "created_at": r["saved_at"]}
             for r in rows if (r["session"], r["turn"]) in chained]  # fmt: skip
    results = {}
    for way in ways:
        report, taken, store = _import(monkeypatch, tmp_path, source, way)
        assert taken == ([] if way == "batches" else [True]), way
        results[way] = (_counts(report), dict(report.quarantine_reasons), _content(store))
        # the chain is the documented one, however the rows went in
        assert stored_parents(store) == expected_parents(plain), way
    counts, reasons, content = results[ways[0]]
    distinct = len(chained)
    assert counts == (len(rows), distinct, 0, 2, 3) and sum(reasons.values()) == 3
    assert content["quarantine"] and len(content["view"]) == distinct
    for way in ways[1:]:
        assert results[way] == results[ways[0]], way
