"""SQLite keeps a type per value, not per column: each row is read on its own.

A BLOB holding UTF-8 JSON in a TEXT column is that JSON; a value that is not UTF-8 text
sends its own row to quarantine with a reason, and the rest of the table imports. Both the
fast (ADBC, Arrow) path and the standard-library path are covered: a mixed-type column
sends the table down the second.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from tests.fixtures.native import native_rows, stepscope_json, write_native_sqlite

BAD_UTF8 = b'{"note": "caf\xe9"}'  # Latin-1, not UTF-8


def _source(tmp_path: Path, n: int = 1001, stdlib: bool = False) -> Path:
    rows = native_rows(1, 1)[0]
    path = write_native_sqlite(
        tmp_path / "src.sqlite",
        [{**rows, "step_index": i, "working_state": json.dumps({"i": i})} for i in range(n)],
    )
    if stdlib:  # a REAL among INTEGERs: ADBC would upcast it, so the stdlib path reads
        with sqlite3.connect(path) as con:
            con.execute("UPDATE checkpoints SET tokens_spent = 12.5 WHERE step_index = 3")
    return path


def _set(path: Path, sql: str, *params: Any) -> None:
    with sqlite3.connect(path) as con:
        con.execute(sql, params)


def _import(path: Path, store: Path) -> dict[str, Any]:
    report: dict[str, Any] = stepscope_json("import", path, "--store", store)
    t = report["total"]
    assert t["read"] == t["imported"] + t["updated"] + t["already_present"] + t["quarantined"]
    return report


@pytest.mark.parametrize("stdlib", [False, True], ids=["adbc", "stdlib"])
@pytest.mark.parametrize("at", [0, 500], ids=["first-rows", "later"])
def test_a_blob_holding_json_in_a_text_column_is_json(
    tmp_path: Path, stdlib: bool, at: int
) -> None:
    path = _source(tmp_path, stdlib=stdlib)
    _set(path, "UPDATE checkpoints SET working_state = ? WHERE step_index = ?",
         json.dumps({"blob": at}).encode(), at)  # fmt: skip
    report = _import(path, tmp_path / "s.duckdb")
    c = report["tables"]["checkpoints"]
    assert c["imported"] == 1001 - stdlib and c["quarantined"] == int(stdlib)
    with Store.open(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.checkpoint("run-0", step=at).working_state == {"blob": at}


def test_a_text_column_of_blobs_only_is_read_as_text(tmp_path: Path) -> None:
    path = _source(tmp_path, n=50)
    _set(path, "UPDATE checkpoints SET working_state = CAST(working_state AS BLOB), "
               "run_id = CAST(run_id AS BLOB)")  # fmt: skip
    report = _import(path, tmp_path / "s.duckdb")
    assert report["tables"]["checkpoints"]["imported"] == 50
    with Store.open(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.checkpoint("run-0", step=7).working_state == {"i": 7}


@pytest.mark.parametrize("stdlib", [False, True], ids=["adbc", "stdlib"])
@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("working_state", "text", "working_state is text that is not UTF-8"),
        ("run_id", "text", "run_id is text that is not UTF-8"),
        ("metadata", "text", "metadata is text that is not UTF-8"),
        ("working_state", "blob", "working_state holds bytes that are not UTF-8 text"),
    ],
)
@pytest.mark.parametrize("at", [2, 700], ids=["sampled-rows", "later"])
def test_one_undecodable_value_quarantines_its_row_alone(
    tmp_path: Path, stdlib: bool, column: str, value: str, reason: str, at: int
) -> None:
    path = _source(tmp_path, stdlib=stdlib)
    cast = "CAST(? AS TEXT)" if value == "text" else "?"
    _set(path, f"UPDATE checkpoints SET {column} = {cast} WHERE step_index = ?", BAD_UTF8, at)
    store = tmp_path / "s.duckdb"
    report = _import(path, store)
    c = report["tables"]["checkpoints"]
    assert c["read"] == 1001
    assert c["quarantined"] == 1 + stdlib  # (the stdlib case's own 12.5 row too)
    assert [r for r in report["quarantine_reasons"] if r.startswith(reason)]
    with Store.open(store, read_only=True) as s:
        q = s.quarantine()
        row = q[q["reason"].str.startswith(reason)]
        assert len(row) == 1 and "\\xe9" in row["raw"].iloc[0]
        steps = {c.step_index for c in s.checkpoints("run-0")}
    assert at not in steps and len(steps) == 1001 - 1 - stdlib
    again = _import(path, store)  # nothing new, no second quarantine record
    assert again["total"]["imported"] == 0
    with Store.open(store, read_only=True) as s:
        assert len(s.quarantine()) == len(q)


def test_payload_form_blob_and_undecodable_payloads(tmp_path: Path) -> None:
    path = tmp_path / "payload.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, payload TEXT)")
        for i in range(40):
            payload: Any = json.dumps({"working_state": {"i": i}})
            if i == 5:
                payload = payload.encode()
            con.execute("INSERT INTO checkpoints VALUES ('r', ?, ?)", (i, payload))
        con.execute("UPDATE checkpoints SET payload = CAST(? AS TEXT) WHERE step_index = 9",
                    (BAD_UTF8,))  # fmt: skip
    report = _import(path, tmp_path / "s.duckdb")
    c = report["tables"]["checkpoints"]
    assert (c["imported"], c["quarantined"]) == (39, 1)
    (reason,) = report["quarantine_reasons"]
    assert reason.startswith("payload is text that is not UTF-8")


def test_mapped_source_with_an_undecodable_value(tmp_path: Path) -> None:
    path = tmp_path / "legacy.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE turns (conv TEXT, n INTEGER, st TEXT)")
        for i in range(30):
            con.execute("INSERT INTO turns VALUES ('c', ?, ?)", (i, json.dumps({"i": i})))
        con.execute("UPDATE turns SET st = CAST(? AS TEXT) WHERE n = 4", (BAD_UTF8,))
        con.execute("UPDATE turns SET st = ? WHERE n = 6", (b'{"blob": true}',))
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        '[checkpoints]\ntable = "turns"\nrun_id = "conv"\nstep_index = "n"\nworking_state = "st"\n'
    )
    report = stepscope_json("import", path, "--mapping", mapping, "--store", tmp_path / "s.db")
    c = report["tables"]["checkpoints"]
    assert (c["read"], c["imported"], c["quarantined"]) == (30, 29, 1)


@pytest.mark.parametrize("rows", [1, 30])
def test_text_that_is_not_utf8_in_an_integer_column(tmp_path: Path, rows: int) -> None:
    # such text reached DuckDB unchecked (only TEXT columns were) and failed the whole
    # import with an internal error; it is the row's own reason now
    path = tmp_path / "legacy.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE turns (conv TEXT, n INTEGER, st TEXT)")
        for i in range(rows):
            con.execute("INSERT INTO turns VALUES ('c', ?, ?)", (i, json.dumps({"i": i})))
        con.execute("UPDATE turns SET n = CAST(? AS TEXT) WHERE n = 0", (b"\x80",))
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        '[checkpoints]\ntable = "turns"\nrun_id = "conv"\nstep_index = "n"\nworking_state = "st"\n'
    )
    report = _import_mapped(path, mapping, tmp_path / "s.db")
    c = report["tables"]["checkpoints"]
    assert (c["read"], c["imported"], c["quarantined"]) == (rows, rows - 1, 1)
    assert [r for r in report["quarantine_reasons"] if r.startswith("n is text that is not UTF-8")]


def _import_mapped(path: Path, mapping: Path, store: Path) -> dict[str, Any]:
    return stepscope_json("import", path, "--mapping", mapping, "--store", store)  # type: ignore[no-any-return]
