"""Batches held and inserted in one pass (``loaders.importer._gathered``,
``ImportSession.add_gathered``) store exactly what the batches added one by one store: the
same checkpoints, keys, runs, quarantine records and counts, on a fresh store, on a
re-import, on a grown source and in several passes (a memory bound); a state to split,
another shape or a source that fails part-way hands the held batches back to be added one
by one, with the same result.

Real SQLite files written by the stdlib driver (typed and untyped columns, values of the
wrong type, text that is not UTF-8), real DuckDB stores. Batches are made small
(``batch_rows``) so that a few hundred rows are several batches; the one-by-one way is the
same import with nothing held.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from debugger.errors import SourceError
from debugger.model import ImportReport
from debugger.store import Store
from debugger.store.session import ImportSession
from debugger.store.state_parts import SPLIT_MIN_BYTES
from loaders import ImportOptions, import_source
from loaders import importer as importer_module
from loaders import native as native_module
from loaders.parquet import file_key
from tests.fixtures.native import CHECKPOINT_DDL, COLUMNS, native_rows
from tests.loaders.test_whole_table import BAD, GOOD, _content, _counts, recording

BATCH = 64
"""Rows a batch in these tests, the fewest a reader gives (the default, 16,384, would make
every source here one batch)."""
MANY = native_rows(12, 20)
"""240 checkpoints: four batches."""


def _sqlite(path: Path, rows: list[dict[str, Any]], typed: bool = True) -> Path:
    """A native SQLite source: declared column types (values of another type stay as
    written, as SQLite keeps them) or none at all, as a quick export writes it."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute(CHECKPOINT_DDL if typed else f"CREATE TABLE checkpoints ({', '.join(COLUMNS)})")
    con.executemany(
        f"INSERT INTO checkpoints VALUES ({', '.join('?' for _ in COLUMNS)})",
        [tuple(r.get(c) for c in COLUMNS) for r in rows],
    )
    con.commit()
    con.close()
    return path


def _import(
    monkeypatch: pytest.MonkeyPatch,
    store: Path,
    source: Path | str,
    gather: bool,
    max_bytes: int | None = None,
    one_pass: int | None = None,
    **options: Any,
) -> tuple[ImportReport, list[bool]]:
    """Import ``source`` in batches of :data:`BATCH` rows; with ``gather`` False nothing is
    held. Returns the report and, for each one-pass attempt, whether it took the batches."""
    taken: list[bool] = []
    with monkeypatch.context() as m:
        m.setattr(ImportSession, "add_gathered", recording(ImportSession.add_gathered, taken))
        m.setattr(native_module, "BATCH_ROWS", BATCH)  # batches this small may be held
        if not gather:
            m.setattr(importer_module, "_gathered", lambda session, plan, batches, o: batches)
        elif max_bytes is not None:
            m.setattr(importer_module, "GATHER_MAX_BYTES", max_bytes)
            m.setattr(importer_module, "ONE_PASS_MAX_BYTES", one_pass or max_bytes)
        with Store.open(store, read_only=False) as s:
            report = import_source(s, str(source), ImportOptions(batch_rows=BATCH, **options))
    return report, taken


Way = tuple[tuple[Any, ...], dict[str, int], dict[str, list[tuple[Any, ...]]]]
"""An import's counts, quarantine reasons and store content."""


def _both_ways(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    source: Path | str,
    taken: list[bool],
    **kwargs: Any,
) -> dict[bool, Way]:
    """``source`` imported into a new store with its batches held (the pass ``taken`` so)
    and one by one: each way's counts, quarantine reasons and store content."""
    results = {}
    for gather in (True, False):
        store = tmp_path / f"{gather}.duckdb"
        report, took = _import(monkeypatch, store, source, gather, **kwargs)
        assert took == (taken if gather else [])
        results[gather] = (_counts(report), dict(report.quarantine_reasons), _content(store))
    return results


NOT_UTF8 = b"\xff\xfe not text"


SAME_TYPES = [b for b in BAD if b["step_index"] is None or isinstance(b["step_index"], int)]
"""Bad rows whose values have their columns' types (invalid JSON, NULLs, a negative budget,
a time that is not one...): their batch has the shape of the others."""


@pytest.mark.parametrize("typed", [True, False], ids=["typed", "untyped"])
@pytest.mark.parametrize("bad", ["same types", "other types"])
def test_held_batches_store_what_the_batches_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: bool, bad: str
) -> None:
    """With values of another type in a batch (a step that is text), that batch is read
    the stdlib way, typed otherwise: the held batches are handed back when it comes."""
    wrong = SAME_TYPES if bad == "same types" else BAD
    rows = [*MANY[:100], *wrong, *MANY[100:], MANY[3], MANY[90]]  # two twice: kept once
    source = _sqlite(tmp_path / "src.sqlite", rows, typed)
    ways = _both_ways(monkeypatch, tmp_path, source, [True] if bad == "same types" else [])
    counts, reasons, content = ways[True]
    assert counts == (len(rows), len(MANY), 0, 2, len(wrong))
    assert sum(reasons.values()) == len(wrong)
    assert len(content["view"]) == len(MANY) and content["quarantine"]
    assert ways[True] == ways[False]


def test_text_that_is_not_utf8_is_quarantined_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _sqlite(tmp_path / "src.sqlite", MANY)
    con = sqlite3.connect(source)
    con.execute(
        "UPDATE checkpoints SET model_version = CAST(? AS TEXT) WHERE rowid IN (3, 190)",
        [NOT_UTF8],
    )
    con.commit()
    con.close()
    ways = _both_ways(monkeypatch, tmp_path, source, [True])
    assert ways[True][0] == (len(MANY), len(MANY) - 2, 0, 0, 2)
    assert ways[True] == ways[False]


def test_a_reimport_and_a_grown_source_match_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = dict(MANY[5], working_state=json.dumps({"step": 5, "changed": True}))
    grown = [*MANY[:5], changed, *MANY[6:], *BAD[:3]]
    results = {}
    for gather in (True, False):
        store = tmp_path / f"{gather}.duckdb"
        first = _sqlite(tmp_path / "v1.sqlite", [*MANY[:150], *BAD[:3]])
        _import(monkeypatch, store, first, gather)
        again, _ = _import(monkeypatch, store, first, gather)
        assert _counts(again) == (153, 0, 0, 150, 3)  # all there, quarantine not doubled
        report, taken = _import(monkeypatch, store, _sqlite(tmp_path / "v2.sqlite", grown), gather)
        assert taken == ([True] if gather else [])
        results[gather] = (_counts(report), _content(store))
    # a changed state is a new checkpoint (its id is derived from its content)
    assert results[True][0] == (len(grown), len(MANY) - 150 + 1, 0, 149, 3)
    assert results[True] == results[False]


def test_a_state_to_split_hands_the_batches_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large state in a later batch: the batches held before it are added one by one
    (no pass is tried), and the state is stored as without holding."""
    big = {"step": 2, "notes": [f"note {i} " + "x" * 200 for i in range(40)]}
    rows = [dict(r) for r in MANY]
    rows[200]["working_state"] = json.dumps(big)
    assert len(rows[200]["working_state"]) >= SPLIT_MIN_BYTES
    ways = _both_ways(monkeypatch, tmp_path, _sqlite(tmp_path / "src.sqlite", rows), [])
    assert ways[True] == ways[False]
    with Store.open(tmp_path / "True.duckdb", read_only=True) as s:
        ckpt = s.checkpoint(rows[200]["run_id"], rows[200]["step_index"])
        assert ckpt is not None and ckpt.working_state == big


@pytest.mark.parametrize(("passes", "bound", "one_pass"), [(4, 1, 1), (2, 30_000, 30_000),
                                                          (1, 30_000, 10**6)])  # fmt: skip
def test_more_than_the_bound_goes_in_several_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, passes: int, bound: int, one_pass: int
) -> None:
    """Passes of a batch each, or of two (a batch of MANY holds ~21,500 bytes): the
    duplicates in later passes are found in the store, and the runs spread over passes are
    derived once from all their rows. A table that looks no larger than the one-pass bound
    (its rows at the first batch's size) goes in one."""
    rows = [*MANY, MANY[3], MANY[90]]
    source = _sqlite(tmp_path / "src.sqlite", rows)
    ways = _both_ways(
        monkeypatch, tmp_path, source, [True] * passes, max_bytes=bound, one_pass=one_pass
    )
    assert ways[True][0] == (len(rows), len(MANY), 0, 2, 0) and ways[True] == ways[False]


def test_a_source_failing_part_way_keeps_what_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader fails after some batches (a file of a dataset is corrupt): the batches
    held are stored, as the import one batch at a time stores them, and the error is the
    reader's."""
    results = {}
    for gather in (True, False):
        folder = tmp_path / f"src-{gather}"
        folder.mkdir()
        table = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in MANY])
        pq.write_table(table.slice(0, 150), folder / "a.parquet")
        bad = folder / "b.parquet"
        pq.write_table(table.slice(150), bad)
        data = bytearray(bad.read_bytes())
        data[4:200] = b"\xab" * 196  # its data pages, not its footer
        bad.write_bytes(bytes(data))
        store = tmp_path / f"{gather}.duckdb"
        with pytest.raises(SourceError) as failed:
            _import(monkeypatch, store, folder / "*.parquet", gather)
        results[gather] = (str(failed.value).replace(str(folder), "SRC"), _content(store))
    assert len(results[True][1]["view"]) == 150
    assert results[True] == results[False]


def test_progress_never_goes_back_and_ends_at_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held batches are reported as read (a third of the work), the pass as it inserts;
    handed back after a large state, they count again from the first, never below what
    was shown."""
    rows = [dict(r) for r in native_rows(10, 30)]
    rows[290]["working_state"] = json.dumps({"x": "y" * SPLIT_MIN_BYTES})
    for name, source_rows in (("held", native_rows(10, 30)), ("handed-back", rows)):
        seen: list[int] = []
        report, _ = _import(
            monkeypatch, tmp_path / f"{name}.duckdb",
            _sqlite(tmp_path / f"{name}.sqlite", source_rows), True,
            progress=lambda table, done, total, seen=seen: seen.append(done),
        )  # fmt: skip
        assert report.total.imported == len(source_rows)
        assert seen == sorted(seen) and seen[-1] == len(source_rows), (name, seen)


def _keyed_parquet(folder: Path, first: str, second: str) -> Path:
    """Two files of one dataset, each with the same checkpoint id of one run and another
    state; ``first`` sorts (and is read) before ``second``."""
    folder.mkdir()
    for name, value in ((first, "first"), (second, "second")):
        row = dict(GOOD[0], checkpoint_id="ck-same", working_state=json.dumps({"v": value}))
        pq.write_table(pa.Table.from_pylist([row]), folder / name)
    return folder / "*.parquet"


def test_a_checkpoint_twice_keeps_the_one_read_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever way the rows go in (one pass over the files, held batches, batch by
    batch), the first read is kept, though the second file's keys are the smaller ones (a
    Parquet file's keys start from a hash of its path)."""
    kept = {}
    for way in ("whole", "gather", "batches"):
        folder = tmp_path / way
        names = [f"part-{i}.parquet" for i in range(40)]
        first, second = next(
            (a, b)
            for a, b in itertools.pairwise(names)
            if file_key(str(folder / a)) > file_key(str(folder / b))
        )
        source = _keyed_parquet(folder, first, second)
        with monkeypatch.context() as m:
            if way != "whole":
                m.setattr(native_module.NativeFlavour, "_whole", staticmethod(lambda *a: None))
            report, _ = _import(monkeypatch, tmp_path / f"{way}.duckdb", source, way == "gather")
        assert _counts(report) == (2, 1, 0, 1, 0)
        with Store.open(tmp_path / f"{way}.duckdb", read_only=True) as s:
            ckpt = s.checkpoint(GOOD[0]["run_id"], GOOD[0]["step_index"])
            assert ckpt is not None
            kept[way] = ckpt.working_state
    assert kept == {way: {"v": "first"} for way in kept}


def test_row_groups_are_not_merged_during_an_import_and_settings_come_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passes' short row groups stay as written while the import runs (merged at its
    last checkpoint they were rewritten whole); a large import's pass has a larger buffer
    pool than its batches; every setting is as before afterwards."""
    from debugger.store import session as session_module

    during: list[tuple[str, str]] = []
    real = session_module.ingest_batch

    def spied(con: Any, *args: Any, **kwargs: Any) -> Any:
        query = "SELECT current_setting('max_vacuum_tasks'), current_setting('memory_limit')"
        during.append(con.execute(query).fetchall()[0])
        return real(con, *args, **kwargs)

    source = _sqlite(tmp_path / "src.sqlite", MANY)
    monkeypatch.setattr(session_module, "ingest_batch", spied)
    monkeypatch.setattr(session_module, "LARGE_IMPORT_BYTES", 30_000)  # after the first batch
    monkeypatch.setattr(native_module, "BATCH_ROWS", BATCH)
    monkeypatch.setattr(importer_module, "GATHER_MAX_BYTES", 30_000)  # passes of two batches
    monkeypatch.setattr(importer_module, "ONE_PASS_MAX_BYTES", 30_000)
    with Store.open(tmp_path / "s.duckdb", read_only=False) as s:
        settings = "SELECT name, value FROM duckdb_settings() ORDER BY name"
        before = s._con.execute(settings).fetchall()
        import_source(s, str(source), ImportOptions(batch_rows=BATCH))
        assert s._con.execute(settings).fetchall() == before
    pool = int(session_module.PASS_MEMORY_LIMIT.removesuffix("MB")) * 10**6 // 2**20
    assert [(v, m.split(".")[0]) for v, m in during] == [(0, str(pool))] * 2  # given in MiB


def test_the_runtimes_own_database_matches_the_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled sample, written by Stepscope's runtime (``sample_checkpoints/export.py``)
    with its effects and tool calls: held and inserted in one pass, it stores what the
    batches store, and every checkpoint the runtime recorded."""
    from sample_checkpoints import DATA_DIR

    source = DATA_DIR / "native.sqlite"
    ways = _both_ways(monkeypatch, tmp_path, source, [True])
    assert ways[True] == ways[False]
    con = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    recorded = con.execute("SELECT count(*), count(DISTINCT run_id) FROM checkpoints").fetchone()
    con.close()
    content = ways[True][2]
    assert (len(content["view"]), len(content["runs"])) == recorded
