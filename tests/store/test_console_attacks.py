"""The SQL console under attack: hostile queries, memory, temporary files, and `stepscope sql`.

Every query below was tried against the console before it was called safe: each must fail
with one line (a :class:`QueryError`), leave no file anywhere it could reach, and leave the
store as it was. The memory test runs the console in a child process and reads its peak
resident memory, since DuckDB's allocations are outside Python's view.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from debugger.settings import SETTINGS, SQL_MEMORY
from debugger.store.console import QueryError, run_query
from tests.fixtures.native import stepscope

REPO = Path(__file__).resolve().parents[2]

HOSTILE = [
    "COPY (SELECT 1) TO 'out.csv'",
    "COPY runs TO 'runs.parquet' (FORMAT parquet)",
    "SELECT * FROM read_csv('secret.csv')",
    "SELECT * FROM 'secret.csv'",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM read_json_auto('secret.csv')",
    "SELECT * FROM parquet_scan('x.parquet')",
    "SELECT * FROM sniff_csv('secret.csv')",
    "SELECT * FROM glob('*')",
    "SELECT * FROM read_csv('https://example.com/x.csv')",
    "ATTACH 'other.duckdb' AS other",
    "ATTACH 'other.sqlite' AS other (TYPE sqlite)",
    "INSTALL httpfs",
    "LOAD httpfs",
    "INSTALL x FROM 'http://127.0.0.1:9/'",
    "FORCE INSTALL sqlite",
    "SET enable_external_access = true",
    "RESET enable_external_access",
    "SET memory_limit = '100GB'",
    "PRAGMA memory_limit = '100GB'",
    "SET temp_directory = '.'",
    "SET max_temp_directory_size = '10GB'",
    "SET lock_configuration = false",
    "SET threads = 64",
    "SET profiling_output = 'profile.json'",
    "PRAGMA enable_profiling = 'json'",
    "SET log_query_path = 'queries.log'",
    "SET secret_directory = '.'",
    "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "CREATE TABLE t AS SELECT 1",
    "CREATE VIEW v AS SELECT 1",
    "CREATE MACRO m() AS 1",
    "INSERT INTO runs SELECT * FROM runs",
    "UPDATE checkpoints SET step_index = 0",
    "DELETE FROM effects",
    "DROP TABLE checkpoint_rows",
    "ALTER TABLE runs ADD COLUMN x INT",
    "EXPORT DATABASE 'exported'",
    "IMPORT DATABASE 'exported'",
    "DETACH store",
    "USE memory",
    "SELECT getenv('HOME')",
    "",
]


@pytest.fixture
def attacked(sample_native_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the sample store in a working directory that invites writes: ``.tmp/``
    exists (DuckDB's default spill directory), a secret file sits beside it."""
    store = tmp_path / "store.duckdb"
    store.write_bytes(sample_native_store.read_bytes())
    (tmp_path / ".tmp").mkdir()
    (tmp_path / "secret.csv").write_text("password,hunter2\n")
    monkeypatch.chdir(tmp_path)
    return store


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")}


@pytest.mark.parametrize("query", HOSTILE)
def test_a_hostile_query_fails_in_one_line_and_touches_nothing(attacked: Path, query: str) -> None:
    before = _tree(attacked.parent)
    runs_before = run_query(str(attacked), "SELECT count(*) AS n FROM checkpoints").frame
    with pytest.raises(QueryError) as info:
        run_query(str(attacked), query)
    assert "\n" not in str(info.value) and "Hint:" in str(info.value)
    assert "hunter2" not in str(info.value)
    assert _tree(attacked.parent) == before
    after = run_query(str(attacked), "SELECT count(*) AS n FROM checkpoints").frame
    assert after.equals(runs_before)


def test_the_console_s_settings_are_capped_and_locked(attacked: Path) -> None:
    frame = run_query(
        str(attacked),
        "SELECT current_setting('memory_limit') AS mem, current_setting('temp_directory') AS tmp,"
        " current_setting('enable_external_access') AS ext,"
        " current_setting('max_temp_directory_size') AS spill",
    ).frame
    row = frame.iloc[0]
    assert row["tmp"] == "" and not row["ext"]
    assert row["spill"] == "0 bytes"
    assert "MiB" in row["mem"] and float(row["mem"].split()[0]) < 1024  # 1GB = 953.6 MiB


_CHILD = """
import json, os, resource, sys
from debugger.store.console import QueryError, run_query
try:
    run_query(sys.argv[1], sys.argv[2], timeout_s=120)
    outcome = "ran"
except QueryError as e:
    outcome = str(e)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps([outcome, peak, sorted(os.listdir(".tmp"))]))
"""

MEMORY_HOGS = [
    "SELECT count(*) FROM (SELECT DISTINCT i FROM range(300000000) r(i))",
    "SELECT length(string_agg(repeat('x', 100000), '')) FROM range(100000)",
    "SELECT i FROM range(100000000) r(i) ORDER BY random()",
]


@pytest.mark.parametrize("query", MEMORY_HOGS)
def test_a_memory_hog_stops_at_the_cap_and_spills_nothing(attacked: Path, query: str) -> None:
    env = {**os.environ, SQL_MEMORY.name: "256MB", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(attacked), query],
        capture_output=True, text=True, env=env, cwd=attacked.parent, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    outcome, peak_mb, spilled = json.loads(out.stdout)  # nothing else on stdout: no progress bar
    assert outcome.startswith("Out of Memory Error") and SQL_MEMORY.name in outcome
    assert spilled == []
    # The interpreter with pandas and DuckDB loaded is 200-450 MB before the query (more in
    # the middle of the whole suite); uncapped, each of these queries takes several GB.
    assert peak_mb < 1024, peak_mb


def test_a_bad_memory_setting_is_one_line(attacked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SQL_MEMORY.name, "lots")
    result = stepscope("sql", "SELECT 1", "--store", str(attacked))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and SQL_MEMORY.name in result.stderr


def test_stepscope_sql_prints_rows_and_json_with_a_row_cap(attacked: Path) -> None:
    result = stepscope("sql", "SELECT run_id FROM runs ORDER BY run_id", "--store", attacked)
    assert result.exit_code == 0, result.stderr
    assert "crash-at-step-7" in result.stdout
    doc = json.loads(
        stepscope("sql", "SELECT step_index FROM checkpoints", "--limit", "3", "--json",
                  "--store", attacked).stdout
    )  # fmt: skip
    assert doc["columns"] == ["step_index"] and len(doc["rows"]) == 3 and doc["truncated"]
    limited = stepscope("sql", "SELECT 1 AS one", "--store", attacked, "--limit", "1")
    assert "cut" not in limited.stderr


def test_stepscope_sql_json_holds_every_column_type(attacked: Path) -> None:
    query = (
        "SELECT 1.25::DECIMAL(6,2) AS dec, '\\x01\\xff'::BLOB AS blob, INTERVAL 3 DAY AS iv,"
        " {'a': [1, 2]} AS st, 'nan'::DOUBLE AS nan, DATE '2026-01-31' AS day, 2::HUGEINT AS h"
    )
    result = stepscope("sql", query, "--json", "--store", attacked)
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)["rows"]
    assert row == {"dec": "1.25", "blob": "01ff", "iv": "P3DT0H0M0S", "st": {"a": [1, 2]},
                   "nan": None, "day": "2026-01-31", "h": 2}  # fmt: skip


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["COPY runs TO 'x.csv'"], "file system operations are disabled"),
        (["DELETE FROM runs"], "read-only"),
        (["SELEC 1"], "syntax error"),
        (["SELECT 1", "--limit", "0"], "--limit"),
    ],
)
def test_stepscope_sql_errors_are_one_line(attacked: Path, args: list[str], needle: str) -> None:
    result = stepscope("sql", *args, "--store", attacked)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert needle in result.stderr
    assert not (attacked.parent / "x.csv").exists()


def test_stepscope_sql_stops_a_slow_query_in_one_line(attacked: Path) -> None:
    slow = "SELECT count(*) FROM range(100000000000) a, range(10) b"
    result = stepscope("sql", slow, "--timeout", "0.5", "--store", attacked)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert "ran longer than 0.5 s and was stopped" in result.stderr


def test_stepscope_sql_without_a_store_says_so(tmp_path: Path) -> None:
    result = stepscope("sql", "SELECT 1", "--store", tmp_path / "none.duckdb")
    assert result.exit_code == 2 and "no store" in result.stderr


def test_every_setting_is_documented() -> None:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    environment = text.split("## Environment", 1)[1]
    for setting in SETTINGS:
        assert f"| `{setting.name}` |" in environment, setting.name
