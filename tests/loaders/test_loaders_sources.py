"""Source-kind details: sources stay untouched, SQLite typing quirks, Parquet layouts, times."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import debugger
from tests.fixtures.native import (
    COLUMNS,
    TOOL_CALL_COLUMNS,
    WRITERS,
    effect_rows,
    native_rows,
    stepscope_json,
    tool_call_rows,
    write_native_parquet,
    write_native_sqlite,
)


def digest(path: Path) -> dict[str, str]:
    """Hash of every file under ``path`` (or of ``path`` itself)."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_sqlite_source_is_not_written_nor_given_side_files(
    journal_mode: str, tmp_path: Path
) -> None:
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    path = write_native_sqlite(src_dir / "n.sqlite", native_rows(), effect_rows(),
                               tool_call_rows())  # fmt: skip
    con = sqlite3.connect(path)
    assert con.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()[0] == journal_mode
    con.close()
    before = digest(src_dir)
    assert stepscope_json("import", path)["total"]["imported"] > 0
    assert stepscope_json("import", path)["total"]["imported"] == 0
    # a WAL-mode file opened with mode=ro alone would leave -wal and -shm beside it
    assert digest(src_dir) == before


def test_sqlite_rows_still_in_the_wal_of_a_live_writer_are_read(tmp_path: Path) -> None:
    path = tmp_path / "live.sqlite"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=wal")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE checkpoints (run_id TEXT, step_index INT, working_state TEXT)")
    writer.commit()
    writer.executemany(
        "INSERT INTO checkpoints VALUES ('live', ?, ?)", [(s, "{}") for s in range(4)]
    )
    writer.commit()
    try:
        assert stepscope_json("import", path)["total"]["imported"] == 4
    finally:
        writer.close()


def test_parquet_sources_are_not_written(tmp_path: Path) -> None:
    w = WRITERS["parquet-dir"](tmp_path / "src", native_rows(), effect_rows(), tool_call_rows())
    before = digest(tmp_path / "src")
    stepscope_json("import", str(w if isinstance(w, str) else w.source))
    assert digest(tmp_path / "src") == before


def test_json_stored_as_sqlite_blobs_is_decoded_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "blobs.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE checkpoints (run_id TEXT, step_index INT, working_state BLOB, "
                "metadata BLOB)")  # fmt: skip
    con.executemany(
        "INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
        [("r", 0, json.dumps({"note": "café ü"}).encode(), b'{"agent": "a"}'),
         ("r", 1, b"\xff\xfe not utf-8", None)],
    )  # fmt: skip
    con.commit()
    con.close()
    report = stepscope_json("import", path)
    assert report["quarantine_reasons"] == {"working_state is not valid JSON": 1}
    doc = stepscope_json("show", "r", "--step", "0")["checkpoint"]
    assert doc["working_state"] == {"note": "café ü"}
    assert doc["metadata"] == {"agent": "a"}


TEXT_LAYOUTS = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "string_view": pa.string_view(),
    "json": pa.json_(),
    "binary": pa.binary(),
    "binary_view": pa.binary_view(),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),  # a pandas category
    "binary_dictionary": pa.dictionary(pa.int8(), pa.binary()),
}


@pytest.mark.parametrize("layout", TEXT_LAYOUTS)
@pytest.mark.parametrize("whole", [True, False], ids=["whole", "batches"])
def test_json_in_any_arrow_text_layout_is_stored_as_the_document(
    layout: str, whole: bool, tmp_path: Path
) -> None:
    # pyarrow writes a string_view, JSON-typed or dictionary column as such and reads it back
    # so; its states were once made JSON *strings* by to_json, and a dictionary column's
    # documents (a pandas category) were all quarantined as not JSON objects
    type_ = TEXT_LAYOUTS[layout]
    texts = [json.dumps({"step": s, "note": "café"}) for s in range(3)]
    values = [t.encode() for t in texts] if "binary" in layout else texts
    meta = ['{"agent": "a"}'] * 3
    table = pa.table({
        "run_id": ["r"] * 3, "step_index": [0, 1, 2],
        "working_state": pa.array(values, type_),
        "metadata": pa.array([m.encode() for m in meta] if "binary" in layout else meta, type_),
    })  # fmt: skip
    pq.write_table(table, tmp_path / "c.parquet")
    assert pq.read_schema(tmp_path / "c.parquet").field("working_state").type == type_
    args = [] if whole else ["--batch-rows", "1024"]  # smaller batches: never read whole
    report = stepscope_json("import", tmp_path / "c.parquet", *args)
    assert report["total"]["imported"] == 3
    for step in range(3):
        doc = stepscope_json("show", "r", "--step", str(step))["checkpoint"]
        assert doc["working_state"] == {"step": step, "note": "café"}
        assert doc["metadata"] == {"agent": "a"}


def test_a_pandas_written_parquet_imports_as_written(tmp_path: Path) -> None:
    """``DataFrame.to_parquet`` as people call it: categories (dictionary-encoded columns),
    a time zone, a nullable integer, the run as the index."""
    import pandas as pd

    df = pd.DataFrame({
        "run_id": ["r"] * 3, "step_index": [0, 1, 2],
        "created_at": pd.date_range("2026-11-01 10:00", periods=3, freq="s", tz="UTC"),
        "working_state": [json.dumps({"step": s}) for s in range(3)],
        "tokens_spent": pd.array([None, 10, 20], dtype="Int64"),
        "metadata": pd.Categorical(['{"agent": "a"}'] * 3),
        "model_version": pd.Categorical(["m1", "m1", "m2"]),
    }).set_index("run_id")  # fmt: skip
    df.to_parquet(tmp_path / "c.parquet")
    assert stepscope_json("import", tmp_path / "c.parquet")["total"]["imported"] == 3
    doc = stepscope_json("show", "r", "--step", "2")["checkpoint"]
    assert doc["working_state"] == {"step": 2}
    assert doc["metadata"] == {"agent": "a"}
    assert (doc["budgets"]["tokens_spent"], doc["model_version"]) == (20, "m2")
    assert doc["created_at"].startswith("2026-11-01T10:00:02")


def test_legacy_int96_times_name_a_checkpoint_the_same_either_way(tmp_path: Path) -> None:
    """Spark's INT96 timestamps with nanoseconds: DuckDB reading the file whole cut them to
    the microsecond, batches read by pyarrow are rounded by the store; the two named the same
    checkpoint differently (its id is its content's), and a re-import in the other way added
    it again."""
    from debugger.store import Store
    from loaders import ImportOptions, import_source

    base = 1_793_527_200_123_456_789  # 2026-11-01 10:00:00.123456789
    table = pa.table({
        "run_id": ["r"] * 3, "step_index": [0, 1, 2],
        "created_at": pa.array([base + s * 10**9 for s in range(3)], pa.timestamp("ns")),
        "working_state": [json.dumps({"step": s}) for s in range(3)],
    })  # fmt: skip
    pq.write_table(table, tmp_path / "c.parquet", use_deprecated_int96_timestamps=True)
    got = []
    for rows in (16_384, 1_024):  # the default (whole where it can), and batches
        with Store.open(tmp_path / f"s{rows}.duckdb") as store:
            import_source(store, str(tmp_path / "c.parquet"), ImportOptions(batch_rows=rows))
            got.append(store.sql("SELECT checkpoint_id, created_at FROM checkpoints ORDER BY 1"))
    assert got[0] == got[1]
    with Store.open(tmp_path / "s1024.duckdb") as store:
        import_source(store, str(tmp_path / "c.parquet"))  # again, the default way
        assert store.sql("SELECT count(*) FROM checkpoints") == [(3,)]


def test_one_real_in_an_integer_column_rejects_only_its_row(tmp_path: Path) -> None:
    # SQLite keeps 12.5 as REAL in an INTEGER column; the other rows must still import
    rows = native_rows(1, 4)
    rows[2]["step_index"] = 12.5
    path = write_native_sqlite(tmp_path / "n.sqlite", rows)
    report = stepscope_json("import", path)
    assert report["quarantine_reasons"] == {"step_index is not an integer: 12.5": 1}
    assert report["total"]["imported"] == 3


def test_hive_partition_column_that_is_also_in_the_files(tmp_path: Path) -> None:
    rows = native_rows()
    table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows])
    for run_id in ("run-0", "run-1", "run-2"):
        part = tmp_path / "export" / f"run_id={run_id}"
        part.mkdir(parents=True)
        pq.write_table(table.filter(pa.compute.equal(table["run_id"], run_id)),
                       part / "0.parquet")  # fmt: skip
    report = stepscope_json("import", tmp_path / "export")
    assert report["total"]["imported"] == len(rows)
    runs = stepscope_json("runs")["runs"]
    assert sorted(r["run_id"] for r in runs) == ["run-0", "run-1", "run-2"]


def test_hive_partition_values_that_look_like_numbers_stay_run_ids(tmp_path: Path) -> None:
    rows = [dict(r, run_id=str(1000 + int(r["run_id"][-1]))) for r in native_rows()]
    table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in rows])
    pa.dataset.write_dataset(table, tmp_path / "export", format="parquet",
                             partitioning=["run_id"], partitioning_flavor="hive")  # fmt: skip
    stepscope_json("import", tmp_path / "export")
    runs = stepscope_json("runs")["runs"]
    assert sorted(r["run_id"] for r in runs) == ["1000", "1001", "1002"]
    assert stepscope_json("show", "1001", "--step", "4")["checkpoint"]["pending_effects"]


def test_parquet_json_columns_written_as_structs_and_lists(tmp_path: Path) -> None:
    rows = []
    for r in native_rows(1, 3):
        row = {c: r[c] for c in COLUMNS}
        for c in ("working_state", "pending_effects", "tool_versions"):
            row[c] = json.loads(r[c])
        rows.append(row)
    rows[0]["pending_effects"] = [{"tool": "t", "idempotency_key": "k", "args": {"n": 1}}]
    rows[1]["pending_effects"] = [{"tool": "t", "idempotency_key": "k", "args": {"n": 1}}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "nested.parquet")
    assert stepscope_json("import", tmp_path / "nested.parquet")["total"]["quarantined"] == 0
    doc = stepscope_json("show", "run-0", "--step", "2")["checkpoint"]
    assert doc["working_state"] == json.loads(native_rows(1, 3)[2]["working_state"])
    assert doc["tool_versions"] == {"lookup_order": "1.0"}
    first = stepscope_json("show", "run-0", "--step", "0")["checkpoint"]
    assert first["pending_effects"] == [{"tool": "t", "idempotency_key": "k", "args": {"n": 1}}]


def test_created_at_naive_offset_and_typed_timestamps_agree(tmp_path: Path) -> None:
    texts = ["2026-11-01T10:00:00", "2026-11-01T12:00:00+02:00", "2026-11-01 05:00:00-05:00",
             "2026-11-01T10:00:00Z"]  # fmt: skip
    rows = [dict(native_rows(1, 1)[0], run_id=f"r{i}", created_at=t) for i, t in enumerate(texts)]
    write_native_sqlite(tmp_path / "times.sqlite", rows)
    stepscope_json("import", tmp_path / "times.sqlite")
    stamps = {
        pa_type: pa.array([datetime(2026, 11, 1, 10)], type=pa_type)
        for pa_type in (pa.timestamp("us"), pa.timestamp("ms", tz="UTC"))
    }
    stamps[pa.timestamp("s", tz="Europe/Paris")] = pa.array(
        [datetime.fromisoformat("2026-11-01T11:00:00+01:00")],
        type=pa.timestamp("s", tz="Europe/Paris"),
    )
    for i, arr in enumerate(stamps.values()):
        row = {c: [native_rows(1, 1)[0][c]] for c in COLUMNS}
        row["run_id"] = [f"p{i}"]
        table = pa.table({**row, "created_at": arr})
        pq.write_table(table, tmp_path / f"t{i}.parquet")
        stepscope_json("import", tmp_path / f"t{i}.parquet")
    with debugger.open("stepscope.duckdb") as store:
        runs = store.run_records()
        assert len(runs) == 7
        assert {r.last_at for r in runs} == {datetime(2026, 11, 1, 10)}


def test_effects_recorded_twice_across_batches_stay_two_rows(tmp_path: Path) -> None:
    # 150 distinct emails, each recorded twice, the copies 150 rows apart: with batches of
    # 100 rows most pairs straddle a batch boundary
    emails = [dict(effect_rows(1)[0], idempotency_key=f"e-{i}") for i in range(150)]
    path = write_native_sqlite(tmp_path / "n.sqlite", native_rows(1, 3), [*emails, *emails])
    first = stepscope_json("import", path, "--batch-rows", "100")["tables"]["effects"]
    assert first == {
        "read": 300,
        "imported": 300,
        "already_present": 0,
        "quarantined": 0,
        "updated": 0,
    }
    again = stepscope_json("import", path, "--batch-rows", "100")["tables"]["effects"]
    assert again == {
        "read": 300,
        "imported": 0,
        "already_present": 300,
        "quarantined": 0,
        "updated": 0,
    }
    with debugger.open("stepscope.duckdb") as store:
        assert len(store.effects("run-0")) == 300


@pytest.mark.parametrize("repeat", [False, True])
def test_tool_calls_with_their_own_ids_are_each_stored_once(tmp_path: Path, repeat: bool) -> None:
    """Calls that carry ids take the short way when no id repeats in the batch, and the
    window that keeps the first copy when one does; both count every row once."""
    # four calls a run, c-0..c-3 in each (an id is a run's own: run-1's c-0 is another call)
    calls = [dict(c, call_id=f"c-{i % 4}") for i, c in enumerate(tool_call_rows(2, 2))]
    if repeat:
        calls.append(dict(calls[0], response=json.dumps({"ok": False})))  # same id, run-0
    path = write_native_sqlite(tmp_path / "n.sqlite", native_rows(2, 2))
    con = sqlite3.connect(path)
    cols = [*TOOL_CALL_COLUMNS, "call_id"]
    con.execute(f"CREATE TABLE tool_calls ({', '.join(cols)})")
    con.executemany(
        f"INSERT INTO tool_calls VALUES ({', '.join('?' for _ in cols)})",
        [tuple(c.get(k) for k in cols) for c in calls],
    )
    con.commit()
    con.close()
    distinct = len({(c["run_id"], c["call_id"]) for c in calls})
    n = len(calls)
    first = stepscope_json("import", path)["tables"]["tool_calls"]
    assert first == {"read": n, "imported": distinct, "already_present": n - distinct,
                     "quarantined": 0, "updated": 0}  # fmt: skip
    again = stepscope_json("import", path)["tables"]["tool_calls"]
    assert again == {"read": n, "imported": 0, "already_present": n, "quarantined": 0, "updated": 0}
    with debugger.open("stepscope.duckdb") as store:
        stored = store.sql("SELECT run_id, call_id, response FROM tool_calls ORDER BY 1, 2")
    assert len(stored) == distinct
    kept = {(r, c): resp for r, c, resp in stored}
    assert json.loads(kept[("run-0", "c-0")]) == json.loads(calls[0]["response"])  # the first


def test_a_relative_glob_is_recorded_as_an_absolute_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    WRITERS["parquet-glob"](tmp_path / "src", native_rows(), [], [])
    monkeypatch.chdir(tmp_path / "src")
    report = stepscope_json("import", "part-*.parquet", "--store", tmp_path / "s.duckdb")
    assert report["location"] == str(tmp_path / "src" / "part-*.parquet")
    monkeypatch.chdir(tmp_path)
    again = stepscope_json("import", "src/part-*.parquet", "--store", tmp_path / "s.duckdb")
    assert again["location"] == report["location"]


def test_numbers_beyond_64_bits_and_non_finite_values_come_back(tmp_path: Path) -> None:
    big = 123456789012345678901234567890
    states = [
        f'{{"id": {big}, "neg": -{2**63 + 1}, "ns": 1730455200000000000, "x": 0.1}}',
        '{"inf": 1e400, "nan": NaN, "text": "naïve ☃"}',
    ]
    rows = [dict(native_rows(1, 2)[s], working_state=states[s]) for s in range(2)]
    stepscope_json("import", write_native_sqlite(tmp_path / "n.sqlite", rows))
    first = stepscope_json("show", "run-0", "--step", "0")["checkpoint"]["working_state"]
    assert first == {"id": big, "neg": -(2**63 + 1), "ns": 1730455200000000000, "x": 0.1}
    assert type(first["id"]) is int
    second = stepscope_json("show", "run-0", "--step", "1")["checkpoint"]["working_state"]
    assert second == {"inf": None, "nan": None, "text": "naïve ☃"}  # JSON has no inf/NaN
    with debugger.open("stepscope.duckdb") as store:
        state = store.checkpoint("run-0", 1).working_state
        assert state["inf"] == float("inf") and state["nan"] != state["nan"]
        assert store.checkpoint("run-0", 0).working_state["id"] == big


def test_hive_directories_decoded_and_bookkeeping_files_skipped(tmp_path: Path) -> None:
    """Partition values are URL-decoded (Hive escapes them), ``__HIVE_DEFAULT_PARTITION__``
    is NULL, and files or directories starting with ``.`` or ``_`` are not data."""
    from loaders.parquet import ParquetReader

    table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS if c != "run_id"}
                                  for r in native_rows(1, 2)])  # fmt: skip
    root = tmp_path / "export"
    for part in ("run_id=desk%2F7", "run_id=__HIVE_DEFAULT_PARTITION__"):
        (root / part).mkdir(parents=True)
        pq.write_table(table, root / part / "0.parquet")
    (root / "_SUCCESS").write_text("")
    (root / "run_id=desk%2F7" / ".0.parquet.crc").write_bytes(b"\x00crc")
    (root / "_delta_log").mkdir()
    (root / "_delta_log" / "0.json").write_text("{}")
    with ParquetReader(str(root)) as reader:
        assert reader.count("checkpoints") == 4
        rows = [r for b in reader.scan("checkpoints") for r in b.to_pylist()]
    assert sorted(str(r["run_id"]) for r in rows) == ["None", "None", "desk/7", "desk/7"]
    assert reader.schema("checkpoints").field("run_id").type == pa.string()


def test_a_glob_reads_partitions_below_its_fixed_directory(tmp_path: Path) -> None:
    """Partitions are read from the directories a glob matched, not from the path above it
    (``tmp_path`` itself may hold an ``=``)."""
    from loaders.parquet import ParquetReader

    base = tmp_path / "x=1" / "export"
    table = pa.Table.from_pylist([{c: r[c] for c in COLUMNS if c != "run_id"}
                                  for r in native_rows(1, 2)])  # fmt: skip
    (base / "run_id=r1").mkdir(parents=True)
    pq.write_table(table, base / "run_id=r1" / "0.parquet")
    with ParquetReader(str(base / "*" / "*.parquet")) as reader:
        names = reader.schema("checkpoints").names
        rows = [r for b in reader.scan("checkpoints") for r in b.to_pylist()]
    assert "run_id" in names and "x" not in names
    assert {r["run_id"] for r in rows} == {"r1"}


@pytest.mark.parametrize("kind", ["parquet", "sqlite"])
def test_a_native_import_imports_neither_pandas_nor_pyarrow_compute(
    tmp_path: Path, kind: str
) -> None:
    """pandas costs about 0.3 s of CPU to import (holding the GIL), pyarrow.compute about
    0.1 s: a small import would pay them before its first batch. Nothing on the path of a
    source read as Arrow needs them (``pa.array`` imports pandas: the import builds its
    arrays from buffers), so the import does not start pandas on a thread either."""
    import subprocess
    import sys

    rows = native_rows()
    if kind == "parquet":
        src = write_native_parquet(tmp_path / "c.parquet", rows)
    else:
        src = write_native_sqlite(tmp_path / "c.sqlite", rows)
    code = (
        "import sys\nfrom debugger.store import Store\nfrom loaders import import_source\n"
        f"with Store.open({str(tmp_path / 's.duckdb')!r}) as s:\n"
        f"    n = import_source(s, {str(src)!r}).total.imported\n"
        "print(n, 'pandas' in sys.modules, 'pyarrow.compute' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(rows)), "False", "False"]


def test_a_record_repeated_in_five_batches_stays_five_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same email sent five times, each copy in another batch: five rows, and a
    re-import finds all five. (Occurrences were carried across batches as a maximum, so
    from the third copy on every copy took the second's name and was dropped as present.)"""
    import loaders.sqlite

    monkeypatch.setattr(loaders.sqlite, "BATCH_BYTES", 20_000)  # batches of 64 rows
    emails = [dict(effect_rows(1)[0], idempotency_key=f"e-{i}") for i in range(150)]
    path = write_native_sqlite(tmp_path / "n.sqlite", native_rows(1, 3), emails * 5)
    first = stepscope_json("import", path)["tables"]["effects"]
    assert first == {
        "read": 750,
        "imported": 750,
        "already_present": 0,
        "quarantined": 0,
        "updated": 0,
    }
    again = stepscope_json("import", path)["tables"]["effects"]
    assert again == {
        "read": 750,
        "imported": 0,
        "already_present": 750,
        "quarantined": 0,
        "updated": 0,
    }
    with debugger.open("stepscope.duckdb") as store:
        ids = [e.effect_id for e in store.effects("run-0") if e.idempotency_key == "e-0"]
    assert len(ids) == len(set(ids)) == 5


@pytest.mark.parametrize("rows", [64, 100, 2048, 4096, 16_384])
def test_ramped_batches_fill_row_groups_exactly(rows: int) -> None:
    """Small first, doubling, then the full size; the small ones add up to one full batch,
    so every batch still ends on a row-group boundary."""
    from itertools import islice

    from loaders.base import aligned_rows, ramped

    full = aligned_rows(rows)
    sizes = list(islice(ramped(full), 12))
    assert all(s & (s - 1) == 0 for s in sizes)  # powers of two
    assert sizes[0] == min(2048, full) and sizes[-1] == full
    ramp = sizes[: sizes.index(full) + 1] if full > 2048 else [full]
    assert sum(ramp[:-1]) in (0, full) and sizes == sorted(sizes)


@pytest.mark.parametrize("kind", ["sqlite", "parquet-file", "sqlite-mapped"])
def test_batch_rows_bounds_every_batch(tmp_path: Path, kind: str) -> None:
    """``--batch-rows`` (ImportOptions.batch_rows) reaches the reader, as a power of two."""
    from debugger.store import Store
    from loaders import ImportOptions, import_source

    written = WRITERS[kind](tmp_path / "src", native_rows(4, 40), [], [])
    mapping = written.args[1] if written.args else None  # ("--mapping", FILE)
    seen: list[int] = []
    with Store.open(tmp_path / "s.duckdb") as store:
        report = import_source(
            store,
            written.source,
            ImportOptions(
                batch_rows=100,
                mapping=mapping,
                progress=lambda table, n, total: seen.append(n),
            ),
        )
    assert seen == [64, 128, 160]
    assert report.total.imported == 160
