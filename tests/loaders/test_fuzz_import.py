"""Fuzzing the decoders: random values and bytes written into real SQLite sources (native,
mapped, and a real SqliteSaver file) never raise out of an import, and every row read is
accounted for: ``read = imported + updated + already present + quarantined``.

Examples are bounded (a few dozen imports in all) so the file runs in well under a minute.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from debugger.model import ImportReport
from debugger.store import Store
from loaders import ImportOptions, import_source

FUZZ = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


class Text(bytes):
    """Bytes to be stored as TEXT (SQLite keeps them as they are, UTF-8 or not)."""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _json_text(v: Any) -> str:
    return json.dumps(v)  # NaN and Infinity as Python writes them


sqlite_values = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    st.binary(max_size=24),
    st.binary(max_size=24).map(Text),  # TEXT that may not be UTF-8
    json_values.map(_json_text),
    json_values.map(lambda v: _json_text(v).encode()),  # JSON in a BLOB
    st.sampled_from([_deep(250), '{"a": NaN}', "[1, 2", "", "null", "[]", "{}"]),
)


def _insert(con: sqlite3.Connection, table: str, rows: list[list[Any]]) -> None:
    for row in rows:
        marks = ", ".join("CAST(? AS TEXT)" if isinstance(v, Text) else "?" for v in row)
        params = [bytes(v) if isinstance(v, Text) else v for v in row]
        con.execute(f"INSERT INTO {table} VALUES ({marks})", params)


def _import(source: Path, store: Path, mapping: Path | None = None) -> ImportReport:
    options = ImportOptions(mapping=str(mapping) if mapping else None, batch_rows=128)
    with Store.open(store) as s:
        report = import_source(s, str(source), options)
    for name, c in report.tables.items():
        assert c.read == c.imported + c.updated + c.already_present + c.quarantined, name
    return report


def _rows(draw: Any, width: int, valid_first: list[st.SearchStrategy[Any]]) -> list[list[Any]]:
    """Rows whose cells are mostly what the column holds, else any value at all."""
    n = draw(st.integers(1, 12))
    return [
        [draw(st.one_of(good, sqlite_values)) for good in valid_first[:width]] for _ in range(n)
    ]


NATIVE_COLUMNS = ("run_id", "step_index", "working_state", "created_at", "tokens_spent",
                  "pending_effects", "metadata")  # fmt: skip
NATIVE_GOOD = [
    st.sampled_from(["r-1", "r-2"]),
    st.integers(-3, 50),
    json_values.map(_json_text),
    st.sampled_from(["2026-11-01T10:00:00Z", "2026-11-01 12:00:00+02:00"]),
    st.integers(0, 10_000),
    st.sampled_from(["[]", '["key-1"]', '[{"tool": "t", "idempotency_key": "k"}]']),
    st.sampled_from(["{}", '{"status": "completed"}', '{"agent": "a"}']),
]


@FUZZ
@given(data=st.data())
def test_native_source_values(data: st.DataObject) -> None:
    rows = _rows(data.draw, len(NATIVE_COLUMNS), NATIVE_GOOD)
    payload = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "src.sqlite"
        with sqlite3.connect(src) as con:
            if payload:  # (run_id, step, payload): the aliases, and the payload's paths
                con.execute("CREATE TABLE checkpoints (run_id TEXT, step INTEGER, payload TEXT)")
                _insert(con, "checkpoints", [[r[0], r[1], _payload(r)] for r in rows])
            else:
                decl = ("TEXT", "INTEGER", "TEXT", "TEXT", "INTEGER", "TEXT", "BLOB")
                cols = ", ".join(f"{c} {t}" for c, t in zip(NATIVE_COLUMNS, decl, strict=True))
                con.execute(f"CREATE TABLE checkpoints ({cols})")
                _insert(con, "checkpoints", rows)
        report = _import(src, Path(d) / "s.duckdb")
        assert report.tables["checkpoints"].read == len(rows)
        again = _import(src, Path(d) / "s.duckdb")
        assert again.tables["checkpoints"].imported == 0


def _payload(row: list[Any]) -> Any:
    """The row's state (and pending effects) as a payload record, when they are JSON text."""
    v, pending = row[2], row[5]
    if isinstance(v, str) and not v.startswith("{"):
        try:
            record = {"working_state": json.loads(v)}
            if isinstance(pending, str):
                record["pending_effects"] = json.loads(pending)
            return json.dumps(record)
        except (ValueError, RecursionError):
            return v
    return v


@FUZZ
@given(data=st.data())
def test_mapped_source_values(data: st.DataObject) -> None:
    doc = json_values.map(lambda v: _json_text({"memory": v, "usage": {"tokens": 5}}))
    good = [st.sampled_from(["c-1", "c-2"]), st.integers(0, 40), doc]
    rows = _rows(data.draw, 3, good)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "legacy.sqlite"
        with sqlite3.connect(src) as con:
            con.execute("CREATE TABLE snaps (session TEXT, turn INTEGER, doc TEXT)")
            _insert(con, "snaps", rows)
        mapping = Path(d) / "m.toml"
        mapping.write_text(
            '[checkpoints]\ntable = "snaps"\nrun_id = "session"\nstep_index = "turn"\n'
            'working_state = { column = "doc", path = "$.memory" }\n'
            'tokens_spent = { column = "doc", path = "$.usage.tokens" }\n'
        )
        report = _import(src, Path(d) / "s.duckdb", mapping)
        assert report.tables["checkpoints"].read == len(rows)


@pytest.fixture(scope="module")
def saver_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SqliteSaver file the real langgraph wrote: a linear run and a parked approval."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.langgraph.graphs import approval, linear

    path = tmp_path_factory.mktemp("lg") / "lg.sqlite"
    con = sqlite3.connect(path, check_same_thread=False)
    linear(SqliteSaver(con))
    approval(SqliteSaver(con))
    con.close()
    return path


LG_CELLS = st.sampled_from(
    [("checkpoints", c) for c in ("thread_id", "checkpoint_ns", "checkpoint_id",
                                  "parent_checkpoint_id", "type", "checkpoint", "metadata")]
    + [("writes", c) for c in ("task_id", "idx", "channel", "type", "value")]
)  # fmt: skip
msgpack_like = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"\x81\xa1v\x01", b"\xc1", b"\x92\x01", b"\x80", b"\xd4\x05\x00"]),
    st.binary(min_size=1, max_size=30).map(lambda b: b"\x83\xa1v\x04\xa2ts" + b),
)


@FUZZ
@given(data=st.data())
def test_langgraph_source_values(data: st.DataObject, saver_file: Path) -> None:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "lg.sqlite"
        shutil.copy(saver_file, src)
        with sqlite3.connect(src) as con:
            counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                      for t in ("checkpoints", "writes")}  # fmt: skip
            for _ in range(data.draw(st.integers(1, 4))):
                table, column = data.draw(LG_CELLS)
                value = data.draw(st.one_of(sqlite_values, msgpack_like))
                rowid = data.draw(st.integers(1, counts[table]))
                cast = "CAST(? AS TEXT)" if isinstance(value, Text) else "?"
                param = bytes(value) if isinstance(value, Text) else value
                try:
                    con.execute(f"UPDATE {table} SET {column} = {cast} WHERE rowid = ?",
                                [param, rowid])  # fmt: skip
                except sqlite3.IntegrityError:  # the primary key holds: another cell then
                    continue
        report = _import(src, Path(d) / "s.duckdb")
        assert report.tables["checkpoints"].read == counts["checkpoints"]


def test_the_value_strategies_reach_the_odd_cases() -> None:
    """What the fuzzing is meant to write, written once for sure (not left to chance)."""
    examples = [Text(b"caf\xe9"), b'{"a": 1}', math.nan, _deep(250), "[1, 2", 2**63 - 1]
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "src.sqlite"
        with sqlite3.connect(src) as con:
            con.execute("CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, "
                        "working_state TEXT)")  # fmt: skip
            _insert(con, "checkpoints", [["r", i, v] for i, v in enumerate(examples)])
        report = _import(src, Path(d) / "s.duckdb")
        c = report.tables["checkpoints"]
        # valid states: the BLOB of JSON, and the integer (a JSON number) read as its text
        assert (c.read, c.imported, c.quarantined) == (6, 2, 4)
