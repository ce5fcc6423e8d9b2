"""The Postgres reader against a real server: connection settings, secrets, read-only, errors.

The native round trip itself is in the shared loader suite (tests/loaders), which runs on the
``postgres`` and ``postgres-mapped`` writers registered by tests/fixtures/pg.py.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from debugger.errors import SourceError
from debugger.store import Store
from loaders.postgres import PostgresReader
from tests.fixtures.native import effect_rows, native_rows, stepscope, tool_call_rows
from tests.fixtures.pg import PgServer, write_native_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def native_url(pg_server: PgServer) -> str:
    """A database holding the native rows (checkpoints, effects, tool_calls)."""
    url = pg_server.create_database("native")
    return write_native_postgres(url, native_rows(), effect_rows(), tool_call_rows())


def _parts(url: str) -> Any:
    return urlsplit(url)


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return str(lines[0])


def test_reads_in_a_read_only_transaction(native_url: str) -> None:
    with PostgresReader(native_url) as reader:
        assert reader.query("SHOW transaction_read_only") == [("on",)]
        with pytest.raises(SourceError, match="read-only transaction"):
            reader.query("CREATE TABLE nope (x int)")


def test_streams_in_bounded_batches(pg_server: PgServer) -> None:
    url = pg_server.create_database("big")
    rows = native_rows(runs=50, steps=20)  # 1,000 rows
    write_native_postgres(url, rows, [], [])
    with PostgresReader(url) as reader:
        batches = list(reader.scan("checkpoints", batch_rows=100))
    # a power of two at most (batches fill the store's row groups exactly)
    assert [b.num_rows for b in batches] == [64] * 15 + [40]
    keys = [k for b in batches for k in b.column("_key").to_pylist()]
    assert keys == list(range(1000))
    assert batches[0].schema.field("working_state").type == "string"  # jsonb as JSON text


def test_a_large_table_streams_in_physical_order_small_batches_first(
    pg_server: PgServer,
) -> None:
    """Rows come in the table's physical (ctid) order without the server sorting them, and
    the first batches are small so the store starts while the server still reads."""
    url = pg_server.create_database("ramp")
    half = native_rows(runs=50, steps=50)
    rows = half + [dict(r, run_id=f"{r['run_id']}-b") for r in half]  # 5,000 rows
    write_native_postgres(url, rows, [], [])
    with psycopg.connect(url, autocommit=True) as con:
        # new row versions: those rows move to the end of the heap
        con.execute("UPDATE checkpoints SET tokens_spent = tokens_spent + 1 WHERE step_index = 0")
        physical = con.execute(
            "SELECT run_id, step_index FROM checkpoints ORDER BY ctid"
        ).fetchall()
    assert physical != [(r["run_id"], r["step_index"]) for r in rows]
    with PostgresReader(url) as reader:
        batches = list(reader.scan("checkpoints"))
    assert [b.num_rows for b in batches] == [2048, 2048, 904]
    got = [
        (r, s)
        for b in batches
        for r, s in zip(b["run_id"].to_pylist(), b["step_index"].to_pylist(), strict=True)
    ]
    assert got == physical
    assert [k for b in batches for k in b["_key"].to_pylist()] == list(range(5000))


def test_password_never_stored_or_printed(native_url: str, tmp_path: Path) -> None:
    password = _parts(native_url).password
    assert password
    store = tmp_path / "s.duckdb"
    result = stepscope("import", native_url, "--store", str(store), "--json")
    assert result.exit_code == 0, result.stderr
    assert password not in result.stdout + result.stderr
    runs = stepscope("runs", "--store", str(store), "--json")
    assert password not in runs.stdout
    with Store.open(store, read_only=True) as s:
        locations = list(s.sources()["location"])
    assert locations == [native_url.replace(f":{password}@", "@")]
    assert password.encode() not in store.read_bytes()


def test_libpq_environment_and_password_file(
    native_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    u = _parts(native_url)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{u.hostname}:{u.port}:*:{u.username}:{u.password}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.setenv("PGHOST", str(u.hostname))
    monkeypatch.setenv("PGPORT", str(u.port))
    monkeypatch.setenv("PGUSER", str(u.username))
    monkeypatch.setenv("PGDATABASE", u.path.lstrip("/"))
    store = tmp_path / "s.duckdb"
    result = stepscope("import", "postgresql://", "--store", str(store), "--json")
    assert result.exit_code == 0, result.stderr
    with Store.open(store, read_only=True) as s:
        assert sorted(s.runs()["run_id"]) == ["run-0", "run-1", "run-2"]
    # without the password file, the same settings fail to authenticate
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "missing"))
    line = _one_line_error(stepscope("import", "postgresql://", "--store", str(store)))
    assert "authentication failed" in line


def test_wrong_password(native_url: str, tmp_path: Path) -> None:
    u = _parts(native_url)
    bad = native_url.replace(f":{u.password}@", ":not-the-password@")
    line = _one_line_error(stepscope("import", bad, "--store", str(tmp_path / "s.duckdb")))
    assert line.startswith("error: authentication failed for postgres@127.0.0.1:")
    assert "not-the-password" not in line


def test_missing_database(native_url: str, tmp_path: Path) -> None:
    bad = native_url.rsplit("/", 1)[0] + "/no_such_db"
    line = _one_line_error(stepscope("import", bad, "--store", str(tmp_path / "s.duckdb")))
    assert "/no_such_db does not exist" in line
    assert str(_parts(native_url).password) not in line


def test_unreachable_server(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"postgresql://someone:pw-123@127.0.0.1:{port}/db"
    line = _one_line_error(stepscope("import", url, "--store", str(tmp_path / "s.duckdb")))
    assert f"cannot reach the Postgres server at someone@127.0.0.1:{port}/db" in line
    assert "pw-123" not in line


def test_missing_table(pg_server: PgServer, tmp_path: Path) -> None:
    url = pg_server.create_database("empty")
    line = _one_line_error(stepscope("import", url, "--store", str(tmp_path / "s.duckdb")))
    assert "no checkpoint tables" in line
    with PostgresReader(url) as reader, pytest.raises(SourceError, match="no table 'nope'"):
        reader.schema("nope")


def test_missing_privileges(pg_server: PgServer, native_url: str, tmp_path: Path) -> None:
    db = _parts(native_url).path.lstrip("/")
    with psycopg.connect(pg_server.admin_url, autocommit=True) as con:
        con.execute("DROP ROLE IF EXISTS reader_without_grants")
        con.execute("CREATE ROLE reader_without_grants LOGIN PASSWORD 'pw-456'")
        con.execute(f'GRANT CONNECT ON DATABASE "{db}" TO reader_without_grants')
    u = _parts(native_url)
    url = f"postgresql://reader_without_grants:pw-456@{u.hostname}:{u.port}/{db}"
    line = _one_line_error(stepscope("import", url, "--store", str(tmp_path / "s.duckdb")))
    assert "lacks the privilege to read" in line
    assert "GRANT SELECT" in line
    assert "pw-456" not in line


SAMPLE_SQL = Path(__file__).resolve().parents[2] / "sample_checkpoints" / "data" / "postgres.sql"


@pytest.mark.skipif(not SAMPLE_SQL.exists(), reason="sample_checkpoints/data/postgres.sql not yet")
def test_sample_postgres_script_imports(pg_server: PgServer, tmp_path: Path) -> None:
    url = pg_server.create_database("sample")
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(SAMPLE_SQL.read_text(encoding="utf-8").encode())
    store = tmp_path / "s.duckdb"
    result = stepscope("import", url, "--store", str(store), "--json")
    assert result.exit_code == 0, result.stderr
    with Store.open(store, read_only=True) as s:
        runs = set(s.runs()["run_id"])
    assert {"clean-completed", "crash-at-step-7", "parked-approval"} <= runs
