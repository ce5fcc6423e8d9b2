"""``stepscope import --run/--since`` on every native writer: only the selected runs are read,
and they come out exactly as a full import has them.

Parametrised over ``WRITERS`` (SQLite, payload form, Parquet file/glob/hive/dir, mapped
SQLite, Postgres and mapped Postgres), so each reader's own pushdown (SQL ``WHERE``,
Parquet partitions and statistics) is checked. "Only the selected runs are read" is the
report's ``read`` count: it equals the rows those runs have in the source, not the source's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import debugger
from loaders.filter import RunFilter, glob_regex, like_pattern, parse_since, sqlite_glob
from tests.fixtures.native import (
    COLUMNS,
    WRITER_MARKS,
    WRITERS,
    Rows,
    Written,
    effect_rows,
    native_rows,
    stepscope,
    stepscope_json,
    tool_call_rows,
    written,
)

CASES = [pytest.param(name, marks=WRITER_MARKS.get(name, []), id=name) for name in WRITERS]

ODD_IDS = ["a%b", "axb", "a_b", "o'brien", "x[1]", "x1", "back\\slash", "backXslash"]
"""Run ids that a careless LIKE or GLOB would mix up: wildcards and quotes of SQL."""


def _rows(ids: list[str]) -> tuple[Rows, Rows, Rows]:
    """The conformance rows with run ``run-i`` renamed to ``ids[i]``."""
    n = len(ids)
    tables = native_rows(n, 3), effect_rows(n), tool_call_rows(n, 3)
    rename = {f"run-{i}": rid for i, rid in enumerate(ids)}
    return tuple([{**r, "run_id": rename[r["run_id"]]} for r in t] for t in tables)  # type: ignore[return-value]


def _count(w: Written, data: tuple[Rows, Rows, Rows], runs: set[str]) -> int:
    sizes = {
        name: sum(1 for r in rows if r["run_id"] in runs)
        for name, rows in zip(("checkpoints", "effects", "tool_calls"), data, strict=True)
    }
    return sum(sizes[t] for t in w.tables)


def _import(w: Written, store: Path, *args: str) -> dict[str, Any]:
    return stepscope_json("import", w.source, *w.args, *args, "--store", str(store))  # type: ignore[no-any-return]


def _runs(store: Path) -> dict[str, dict[str, Any]]:
    return {r["run_id"]: r for r in stepscope_json("runs", "--store", str(store))["runs"]}


def _content(store: Path, run: str) -> dict[str, Any]:
    """A run's checkpoints, effects and tape, without the store's own row ids."""
    with debugger.open(store) as s:
        return {
            "checkpoints": [asdict(c) for c in s.checkpoints(run)],
            "effects": [asdict(e) for e in s.effects(run)],
            "tool_calls": [asdict(c) for c in s.tool_calls(run)],
        }


@pytest.fixture(scope="module", params=CASES)
def source(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Written, tuple[Rows, Rows, Rows], Path]]:
    """Each writer's source with the odd run ids, and its full import."""
    base = tmp_path_factory.mktemp(request.param)
    data = _rows(ODD_IDS)
    w = written(WRITERS[request.param](base / "src", *data))
    full = base / "full.duckdb"
    _import(w, full)
    yield request.param, w, data, full


SELECTIONS = [
    (["a%b"], {"a%b"}),
    (["a_*"], {"a_b"}),
    (["a?b"], {"a%b", "axb", "a_b"}),
    (["o'*"], {"o'brien"}),
    (["x[*"], {"x[1]"}),
    (["back\\*"], {"back\\slash"}),
    (["x1", "axb", "nope"], {"x1", "axb"}),
]


@pytest.mark.parametrize(("patterns", "want"), SELECTIONS)
def test_run_reads_only_the_selected_runs(
    source: tuple[str, Written, tuple[Rows, Rows, Rows], Path],
    tmp_path: Path,
    patterns: list[str],
    want: set[str],
) -> None:
    _, w, data, full = source
    store = tmp_path / "some.duckdb"
    args = [a for p in patterns for a in ("--run", p)]
    report = _import(w, store, *args)
    n = _count(w, data, want)
    assert report["total"] == {"read": n, "imported": n, "already_present": 0,
                               "quarantined": 0, "updated": 0}  # fmt: skip
    assert report["filtered"] == {"runs": patterns, "since": None}
    got = _runs(store)
    assert set(got) == want
    every = _runs(full)
    for run in want:
        assert got[run] == every[run]
        assert _content(store, run) == _content(full, run)
    # the filtered import counts as a source like any other: a full one adds the rest
    again = _import(w, store)["total"]
    assert again["already_present"] == n and again["imported"] == again["read"] - n


def test_since_selects_whole_runs_active_since(
    source: tuple[str, Written, tuple[Rows, Rows, Rows], Path], tmp_path: Path
) -> None:
    name, w, data, full = source
    # ids[i] writes at 10:0i:00..02 UTC; an offset is read as such: 11:05:01+01:00 = 10:05:01
    since = "2026-11-01T11:05:01+01:00"
    if name == "sqlite-payload":  # created_at is inside the payload, not a column
        result = stepscope("import", w.source, "--since", since, "--store", str(tmp_path / "s"))
        assert result.exit_code == 2
        assert "--since needs the checkpoints' time (created_at) as a plain column" in result.output
        assert not (tmp_path / "s").exists()
        return
    store = tmp_path / "since.duckdb"
    report = _import(w, store, "--since", since, "--run", "*")
    want = {ODD_IDS[i] for i in range(5, len(ODD_IDS))}
    assert set(_runs(store)) == want
    assert report["total"]["read"] == _count(w, data, want)
    assert report["filtered"] == {"runs": ["*"], "since": "2026-11-01T10:05:01Z"}
    for run in want:  # whole runs, the checkpoints before TIME included
        assert _content(store, run) == _content(full, run)
    assert len(_content(store, "x1")["checkpoints"]) == 3


def test_the_glob_helpers_agree_with_each_other() -> None:
    import sqlite3

    con = sqlite3.connect(":memory:")
    for pattern in ["a%b", "a_*", "a?b", "o'*", "x[*", "back\\*", "*", "?[*]"]:
        want = {i for i in ODD_IDS if glob_regex(pattern).fullmatch(i)}
        like = {i for i in ODD_IDS if con.execute(
            "SELECT ? LIKE ? ESCAPE '\\'", [i, like_pattern(pattern)]).fetchone()[0]}  # fmt: skip
        glob = {i for i in ODD_IDS if con.execute(
            "SELECT ? GLOB ?", [i, sqlite_glob(pattern)]).fetchone()[0]}  # fmt: skip
        assert like == want == glob, pattern
        assert {i for i in ODD_IDS if RunFilter.of([pattern]).matches(i)} == want


def test_since_reads_dates_and_ages() -> None:
    now = datetime(2026, 11, 8, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert parse_since("90m", now) == datetime(2026, 11, 8, 10, 30, tzinfo=UTC)
    assert parse_since("2026-11-01") == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_since("2026-11-01T10:00:00+02:00") == datetime(2026, 11, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--since", "last tuesday"], "--since 'last tuesday' is not a time"),
        (["--run", ""], "--run '' is not a run id or pattern"),
    ],
)
def test_bad_filters_are_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    w = written(WRITERS["sqlite"](tmp_path / "src", *_rows(["r"])))
    result = stepscope("import", w.source, *args, "--store", str(tmp_path / "s.duckdb"))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {says}")
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()


def test_json_report_names_the_filter(tmp_path: Path) -> None:
    w = written(WRITERS["sqlite"](tmp_path / "src", *_rows(["r1", "r2"])))
    doc = _import(w, tmp_path / "s.duckdb", "--run", "r2")
    assert doc["filtered"] == {"runs": ["r2"], "since": None}
    text = stepscope("import", w.source, "--run", "r*", "--since", "2026-11-01",
                     "--store", str(tmp_path / "t.duckdb")).output  # fmt: skip
    assert "only runs r* with a checkpoint since 2026-11-01T00:00:00Z" in text
    full = _import(w, tmp_path / "u.duckdb")
    assert full["filtered"] is None
    assert json.dumps(full)  # the report stays JSON


def test_parquet_skips_row_groups_and_partitions_that_cannot_match(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from loaders.filter import Selection
    from loaders.parquet import ParquetFilePart
    from loaders.parquet_filter import RunTest, active_runs, groups

    rows = native_rows(3, 4)  # sorted by run: one row group per run
    times = [datetime.fromisoformat(r["created_at"]) for r in rows]
    table = pa.table({"run_id": [r["run_id"] for r in rows],
                      "created_at": pa.array(times, pa.timestamp("us", tz="UTC"))})  # fmt: skip
    path = tmp_path / "c.parquet"
    pq.write_table(table, path, row_group_size=4)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 3
    part = ParquetFilePart(str(path), {})

    def chosen(runs: list[str], since: str | None = None) -> list[int]:
        sel = Selection(RunFilter.of(runs, since), "run_id", "checkpoints", "run_id", "created_at")
        return groups(meta, part, sel, RunTest(sel.filter, active_runs([part], sel, table.schema)))

    assert chosen(["run-1"]) == [1]
    assert chosen(["run-2*", "run-0"]) == [0, 2]
    assert chosen(["nope*"]) == []
    assert chosen(["*"], "2026-11-01T10:01:02Z") == [1, 2]  # run-0 wrote nothing since
    # a hive partition value decides for the whole file, without opening it
    hive = ParquetFilePart(str(path), {"run_id": "run-9"})
    sel = Selection(RunFilter.of(["run-1"]), "run_id")
    assert groups(meta, hive, sel, RunTest(sel.filter, None)) == []


def _epoch_source(kind: str, path: Path) -> Path:
    """native_rows(4, 2) with created_at as an epoch number, as apps write them: SQLite
    INTEGER milliseconds (Prisma, ``Date.now()``), REAL seconds (``time.time()``), Parquet
    int64 microseconds."""
    import sqlite3

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = native_rows(4, 2)
    for r in rows:
        t = datetime.fromisoformat(r["created_at"]).timestamp()
        r["created_at"] = {"sqlite-ms": int(t * 1000), "sqlite-seconds": t,
                           "parquet-us": int(t * 1_000_000)}[kind]  # fmt: skip
    if kind == "parquet-us":
        table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows])
        pq.write_table(table, path.with_suffix(".parquet"))
        return path.with_suffix(".parquet")
    con = sqlite3.connect(path)
    decl = "INTEGER" if kind == "sqlite-ms" else "REAL"  # a TEXT column would make it text
    cols = [f"{c} {decl}" if c == "created_at" else c for c in COLUMNS]
    con.execute(f"CREATE TABLE checkpoints ({', '.join(cols)})")
    con.executemany(
        f"INSERT INTO checkpoints VALUES ({', '.join('?' for _ in COLUMNS)})",
        [tuple(r[c] for c in COLUMNS) for r in rows],
    )
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("kind", ["sqlite-ms", "sqlite-seconds", "parquet-us"])
def test_epoch_times_are_read_and_selected(kind: str, tmp_path: Path) -> None:
    """A time given as a number is an epoch, its unit read from its magnitude, by the
    import and by ``--since`` (in the source's own query); they were all quarantined."""
    src = _epoch_source(kind, tmp_path / "epoch.sqlite")
    store = tmp_path / "all.duckdb"
    assert stepscope_json("import", src, "--store", str(store))["total"]["imported"] == 8
    with debugger.open(store) as s:
        times = s.sql("SELECT created_at FROM checkpoints WHERE run_id = 'run-1' ORDER BY 1")
    assert times == [(datetime(2026, 11, 1, 10, 1, 0),), (datetime(2026, 11, 1, 10, 1, 1),)]
    some = tmp_path / "since.duckdb"
    stepscope_json("import", src, "--since", "2026-11-01T10:01:01Z", "--store", str(some))
    assert set(_runs(some)) == {"run-1", "run-2", "run-3"}
