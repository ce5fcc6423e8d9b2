"""Postgres specifics of a selective import: text times read as the store reads them, and the
statement timeout that keeps an import from holding a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.fixtures.native import COLUMNS, native_rows, stepscope, stepscope_json
from tests.fixtures.pg import write_table

pytestmark = pytest.mark.postgres


def test_since_on_text_times_with_and_without_offsets(pg_server: Any, tmp_path: Path) -> None:
    url = pg_server.create_database("since_text")
    rows = native_rows(4, 2)
    # the same instants written four ways: Z, an offset, no offset (UTC), and not a time
    for r in rows:
        hh, mm = int(r["created_at"][11:13]), r["created_at"][14:19]
        r["created_at"] = {
            "run-0": f"2026-11-01T{hh:02d}:{mm}Z",
            "run-1": f"2026-11-01 {hh + 2:02d}:{mm}+02:00",
            "run-2": f"2026-11-01T{hh:02d}:{mm}",
            "run-3": "yesterday-ish",
        }[r["run_id"]]
    with psycopg.connect(url, autocommit=True) as con:
        write_table(con, "checkpoints", COLUMNS, rows, {"created_at": "text"})
    store = tmp_path / "s.duckdb"
    # run-i writes at 10:0i:00 and 10:0i:01 UTC
    report = stepscope_json("import", url, "--since", "2026-11-01T10:01:01Z", "--store", str(store))
    runs = {r["run_id"] for r in stepscope_json("runs", "--store", str(store))["runs"]}
    assert runs == {"run-1", "run-2"}
    assert report["total"]["read"] == 4


def _slow_source(pg_server: Any) -> str:
    url = pg_server.create_database("slow")
    with psycopg.connect(url, autocommit=True) as con:
        write_table(con, "base", COLUMNS, native_rows(1, 2))
        # every read of the view waits a second on the server
        con.execute("CREATE VIEW checkpoints AS SELECT b.* FROM base b, pg_sleep(1) s")
    return url


def test_statement_timeout_is_one_clear_line(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _slow_source(pg_server)
    monkeypatch.setenv("STEPSCOPE_PG_STATEMENT_TIMEOUT", "200ms")
    result = stepscope("import", url, "--store", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1
    assert "after the statement timeout (200ms)" in line
    assert "STEPSCOPE_PG_STATEMENT_TIMEOUT" in line and "--run or --since" in line
    # without a limit the same source imports
    monkeypatch.setenv("STEPSCOPE_PG_STATEMENT_TIMEOUT", "0")
    doc = stepscope_json("import", url, "--store", str(tmp_path / "t.duckdb"))
    assert doc["total"]["imported"] == 2


def test_the_timeout_is_set_on_the_session(pg_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from loaders.postgres import PostgresReader

    url = pg_server.create_database("timeout")
    with PostgresReader(url) as reader:
        assert reader.query("SHOW statement_timeout") == [("2min",)]
        assert reader.query("SHOW transaction_read_only") == [("on",)]
    monkeypatch.setenv("STEPSCOPE_PG_STATEMENT_TIMEOUT", "45s")
    with PostgresReader(url) as reader:
        assert reader.query("SHOW statement_timeout") == [("45s",)]
    with PostgresReader(url + "?options=-c%20statement_timeout%3D7s") as reader:
        assert reader.query("SHOW statement_timeout") == [("7s",)]


def test_a_bad_timeout_setting_is_one_line(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = pg_server.create_database("badtimeout")
    monkeypatch.setenv("STEPSCOPE_PG_STATEMENT_TIMEOUT", "banana")
    result = stepscope("import", url, "--store", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 2
    assert result.output.startswith(
        "error: STEPSCOPE_PG_STATEMENT_TIMEOUT='banana' is not a Postgres statement timeout"
    )


def test_since_on_epoch_milliseconds(pg_server: Any, tmp_path: Path) -> None:
    """A bigint of milliseconds since 1970 (as a Node app writes ``Date.now()``) is a time,
    read in the server's own query as the store reads it."""
    from datetime import datetime

    url = pg_server.create_database("since_epoch")
    rows = native_rows(4, 2)
    for r in rows:
        r["created_at"] = int(datetime.fromisoformat(r["created_at"]).timestamp() * 1000)
    with psycopg.connect(url, autocommit=True) as con:
        write_table(con, "checkpoints", COLUMNS, rows, {"created_at": "bigint"})
    store = tmp_path / "s.duckdb"
    report = stepscope_json("import", url, "--since", "2026-11-01T10:01:01Z", "--store", str(store))
    runs = {r["run_id"] for r in stepscope_json("runs", "--store", str(store))["runs"]}
    assert runs == {"run-1", "run-2", "run-3"}
    assert report["total"] == {"read": 6, "imported": 6, "already_present": 0,
                               "quarantined": 0, "updated": 0}  # fmt: skip
