"""A Parquet table DuckDB reads itself, in one pass (``ImportSession.add_whole``), stores
exactly what the batch-by-batch import stores: the same checkpoints, keys, runs, quarantine
records and counts, on a fresh store, on a re-import and on a grown source; and where that
pass cannot take a table (a state to split, a file DuckDB cannot read) the import reads it
batch by batch, with the same result.

Real Parquet files written by pyarrow, real DuckDB stores; the batch path is the same import
with the one-pass plan withheld (``NativeFlavour._whole``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from debugger.errors import SourceError
from debugger.model import ImportReport
from debugger.store import Store
from debugger.store import session as session_module
from debugger.store.session import ImportSession
from debugger.store.state_parts import SPLIT_MIN_BYTES
from loaders import ImportOptions, import_source
from loaders import importer as importer_module
from loaders.native import NativeFlavour
from tests.fixtures.native import COLUMNS, EFFECT_COLUMNS, effect_rows, native_rows, payload_of

GOOD = native_rows(4, 6)


def _bad(step: Any, **changes: Any) -> dict[str, Any]:
    return {**GOOD[0], "run_id": "run-bad", "step_index": step, **changes}


BAD = [
    _bad(10, working_state='{"a": 1'),
    _bad(11, working_state=None),
    _bad(12, run_id=None),
    _bad(None),
    _bad(13, tokens_spent=-5),
    _bad("abc"),
    _bad("12.5"),
    _bad(str(2**32)),
    _bad(14, created_at="yesterday"),
    _bad(15, pending_effects='{"x": 1}'),
    _bad(16, metadata="[1, 2]"),
]


ODD_COLUMN = 'we"ird col; DROP TABLE runs'
"""An extra column the import ignores, named to break a statement that quoted it badly."""


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    """All columns as text, as an export without a schema writes them: every value,
    however wrong, has a place, and validation finds it; and one extra column."""
    table = pa.table(
        {c: pa.array([None if r.get(c) is None else str(r[c]) for r in rows], pa.string())
         for c in COLUMNS}
    ).append_column(ODD_COLUMN, pa.array(["x"] * len(rows)))  # fmt: skip
    pq.write_table(table, path, row_group_size=7)


def _source(directory: Path, rows: list[dict[str, Any]]) -> Path:
    """Two files of one dataset (a glob), the rows split between them."""
    directory.mkdir(parents=True, exist_ok=True)
    half = len(rows) // 2
    _write(directory / "part-0.parquet", rows[:half])
    _write(directory / "part-1.parquet", rows[half:])
    return directory / "part-*.parquet"


def _import(
    monkeypatch: pytest.MonkeyPatch,
    store: Path,
    source: Path,
    whole: bool,
    taken: list[bool] | None = None,
    **options: Any,
) -> tuple[ImportReport, list[bool]]:
    """Import ``source``; with ``whole`` False the one-pass plan is withheld. Returns the
    report and, for each one-pass attempt, whether it took the table (also in ``taken``)."""
    taken = [] if taken is None else taken
    with monkeypatch.context() as m:
        m.setattr(ImportSession, "add_whole", recording(ImportSession.add_whole, taken))
        if not whole:
            m.setattr(NativeFlavour, "_whole", staticmethod(lambda *a: None))
        with Store.open(store, read_only=False) as s:
            report = import_source(s, str(source), ImportOptions(**options))
    return report, taken


def recording(real: Callable[..., Any], taken: list[bool]) -> Callable[..., Any]:
    """``real`` (a pass of ``ImportSession``), appending to ``taken`` whether each call
    took its rows (True) or failed (False, and raises as it did)."""

    def spied(self: ImportSession, *args: Any, **kwargs: Any) -> Any:
        try:
            counts = real(self, *args, **kwargs)
        except Exception:
            taken.append(False)
            raise
        taken.append(True)
        return counts

    return spied


def _read(store: Path, queries: dict[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    """Each query's rows, on the store opened read-only with plain DuckDB."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        con.close()


def _content(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    return _read(
        store,
        {
            "rows": "SELECT * EXCLUDE (source_id) FROM checkpoint_rows ORDER BY ckpt_key",
            "view": "SELECT * EXCLUDE (source_id) FROM checkpoints "
            "ORDER BY run_id, step_index, checkpoint_id",
            "runs": "SELECT * FROM runs ORDER BY run_id",
            "run_keys": "SELECT * FROM run_keys ORDER BY run_num",
            "quarantine": "SELECT * EXCLUDE (quarantined_at) FROM quarantine "
            "ORDER BY source_key, reason",
            "sources": "SELECT source_id, kind, flavour, rows_read, imported, "
            "already_present, quarantined FROM sources ORDER BY source_id",
        },
    )


def _counts(report: ImportReport) -> tuple[Any, ...]:
    t = report.total
    return t.read, t.imported, t.updated, t.already_present, t.quarantined


def _both_ways(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: Path, taken: list[bool]
) -> dict[bool, tuple[ImportReport, dict[str, list[tuple[Any, ...]]]]]:
    """``source`` imported into a new store in one pass (which must be ``taken`` so) and
    batch by batch: each way's report and store content."""
    results = {}
    for whole in (True, False):
        store = tmp_path / f"{whole}.duckdb"
        report, took = _import(monkeypatch, store, source, whole)
        assert took == (taken if whole else [])
        results[whole] = (report, _content(store))
    return results


def test_one_pass_stores_what_the_batches_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [*GOOD, *BAD, GOOD[3], GOOD[9]]  # two rows twice: kept once
    folder = tmp_path / "it's a 'src', ~ and all"  # quoted in the statement as a path
    ways = _both_ways(monkeypatch, tmp_path, _source(folder, rows), [True])
    results = {
        whole: (_counts(r), dict(r.quarantine_reasons), r.runs_touched, content)
        for whole, (r, content) in ways.items()
    }
    counts, reasons, _, content = results[True]
    assert counts == (len(rows), len(GOOD), 0, 2, len(BAD))
    assert sum(reasons.values()) == len(BAD)
    assert content["quarantine"] and len(content["view"]) == len(GOOD)
    assert results[True] == results[False]


def chain_rows() -> list[dict[str, Any]]:
    """Checkpoints whose chain is not the order they are read in: runs read backwards, two
    checkpoints of a run written at the same time (the step decides), one without a time
    (it comes first), and one read twice (kept once)."""
    rows = [dict(r) for r in reversed(GOOD)]
    for r in rows:
        if r["run_id"] == "run-2" and r["step_index"] in (3, 4):
            r["created_at"] = "2026-11-01T10:02:03+00:00"
        if r["run_id"] == "run-0" and r["step_index"] == 4:
            r["created_at"] = None
    return [*rows, rows[7]]


def expected_parents(rows: list[dict[str, Any]]) -> dict[tuple[str, int], int | None]:
    """(run, step) -> the parent's step, by the documented rule: a run's checkpoints in
    (created_at, NULL first; step; read order) order, each the child of the one before."""
    parents: dict[tuple[str, int], int | None] = {}
    for run in {r["run_id"] for r in rows}:
        chain = sorted(
            {r["step_index"]: (r["created_at"] is not None, r["created_at"] or "", i)
             for i, r in reversed(list(enumerate(rows))) if r["run_id"] == run}.items(),
            key=lambda kv: (*kv[1][:2], kv[0], kv[1][2]),
        )  # fmt: skip
        for before, (step, _) in zip([None, *chain], chain, strict=False):
            parents[(run, step)] = None if before is None else before[0]
    return parents


def stored_parents(store: Path) -> dict[tuple[str, int], int | None]:
    """(run, step) -> the stored parent's step."""
    sql = (
        "SELECT c.run_id, c.step_index, p.step_index FROM checkpoints c "
        "LEFT JOIN checkpoints p ON p.run_id = c.run_id AND p.checkpoint_id = c.parent_id"
    )
    return {(run, step): parent for run, step, parent in _read(store, {"p": sql})["p"]}


def _payload_source(directory: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows in the payload form (one JSON document a row), each with its checkpoint id,
    and run-1's step 5 given a parent of its own: step 2 (a fork, as a resume writes it)."""
    directory.mkdir()
    docs = []
    for r in rows:
        doc = json.loads(payload_of(r))
        doc["checkpoint_id"] = f"{r['run_id']}/c{r['step_index']}"
        if (r["run_id"], r["step_index"]) == ("run-1", 5):
            doc["parent_id"] = "run-1/c2"
        docs.append(json.dumps(doc))
    table = pa.table({"run_id": [r["run_id"] for r in rows],
                      "step_index": [r["step_index"] for r in rows], "payload": docs})  # fmt: skip
    pq.write_table(table, directory / "part-0.parquet", row_group_size=7)
    return directory / "part-*.parquet"


@pytest.mark.parametrize("form", ["columns", "payload"])
def test_a_source_without_parents_is_chained_as_it_goes_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """A source with no parent column: a pass over the whole table (DuckDB's, or batches
    held) gives each checkpoint the one before it in its run as it inserts it, with no
    update after; batch by batch, the rows are updated after; the chain is the same. A
    parent the row gives in its payload is kept."""
    rows = chain_rows()
    expected = expected_parents(rows)
    if form == "columns":
        source = _source(tmp_path / "src", rows)
    else:
        source = _payload_source(tmp_path / "src", rows)
        expected[("run-1", 5)] = 2
    real = session_module.derive_parents
    updated: list[str] = []
    monkeypatch.setattr(
        session_module, "derive_parents", lambda *a, **k: (updated.append(way), real(*a, **k))
    )
    contents = {}
    for way in ("whole", "held", "batches"):
        store = tmp_path / f"{way}.duckdb"
        with monkeypatch.context() as m:
            if way == "batches":
                m.setattr(importer_module, "_gathered", lambda session, plan, batches, o: batches)
            _import(monkeypatch, store, source, way == "whole")
        contents[way] = _content(store)
        assert stored_parents(store) == expected, way
    assert updated == ["batches"]
    assert contents["whole"] == contents["held"] == contents["batches"]


def test_a_reimport_and_a_grown_source_match_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _source(tmp_path / "v1", [*GOOD[:12], *BAD[:3]])
    changed = dict(GOOD[5], working_state=json.dumps({"step": 5, "changed": True}))
    grown = [*GOOD[:5], changed, *GOOD[6:], *BAD[:3]]
    second = _source(tmp_path / "v2", grown)
    results = {}
    for whole in (True, False):
        store = tmp_path / f"{whole}.duckdb"
        _import(monkeypatch, store, first, whole)
        again, _ = _import(monkeypatch, store, first, whole)
        assert _counts(again) == (15, 0, 0, 12, 3)  # all there already, quarantine not doubled
        report, taken = _import(monkeypatch, store, second, whole)
        assert taken == ([True] if whole else [])
        results[whole] = (_counts(report), _content(store))
    # a changed state is a new checkpoint (its id is derived from its content)
    assert results[True][0] == (len(grown), len(GOOD) - 12 + 1, 0, 11, 3)
    assert results[True] == results[False]


def test_a_state_to_split_sends_the_table_to_the_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One large state among small ones: the row groups' sizes let the pass start, the
    state stops it (its cutting needs a batch's bounds), and the batches store it split."""
    big = {"step": 2, "notes": [f"note {i} " + "x" * 200 for i in range(40)]}
    rows = [dict(r) for r in GOOD]
    rows[2]["working_state"] = json.dumps(big)
    assert len(rows[2]["working_state"]) >= SPLIT_MIN_BYTES
    ways = _both_ways(monkeypatch, tmp_path, _source(tmp_path / "src", rows), [False])
    assert _counts(ways[True][0]) == _counts(ways[False][0]) and ways[True][1] == ways[False][1]
    with Store.open(tmp_path / "True.duckdb", read_only=True) as s:
        ckpt = s.checkpoint("run-0", 2)
        assert ckpt is not None and ckpt.working_state == big


def _damage(path: Path, group: int, column: int) -> None:
    """Overwrite the first data page of a column chunk with noise (the footer intact)."""
    page = pq.ParquetFile(path).metadata.row_group(group).column(column)
    with path.open("r+b") as f:
        f.seek(page.data_page_offset)
        f.write(b"\xde\xad" * 32)


def test_a_file_duckdb_cannot_read_goes_batch_by_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data page overwritten with noise (the footer intact): the pass fails and leaves
    nothing, and the batches fail as an import that never tried the pass fails (their
    message, the rows they keep)."""
    results = {}
    for whole in (True, False):
        source = tmp_path / f"src-{whole}"
        source.mkdir()
        path = source / "part-0.parquet"
        _write(path, GOOD)  # row groups of 7 rows
        _damage(path, 2, COLUMNS.index("working_state"))
        store = tmp_path / f"{whole}.duckdb"
        taken: list[bool] = []
        with pytest.raises(SourceError) as failed:
            _import(monkeypatch, store, source / "part-*.parquet", whole, taken)
        assert taken == ([False] if whole else [])
        results[whole] = (str(failed.value).replace(str(source), "SRC"), _content(store))
    assert results[True] == results[False]
    assert "the file may be corrupt" in results[True][0]


def test_a_later_table_failing_keeps_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoints go in one pass, left open for what follows; the effects' file then
    fails to read (a data page overwritten, the footer intact): the import reports it and
    keeps the checkpoints and their runs, as the batches' import does."""
    results = {}
    for whole in (True, False):
        source = tmp_path / f"src-{whole}"
        source.mkdir()
        _write(source / "checkpoints.parquet", GOOD)
        effects = source / "effects.parquet"
        table = pa.Table.from_pylist([{c: e[c] for c in EFFECT_COLUMNS} for e in effect_rows(4)])
        pq.write_table(table, effects, row_group_size=2)
        _damage(effects, 1, EFFECT_COLUMNS.index("tool"))
        store = tmp_path / f"{whole}.duckdb"
        taken: list[bool] = []
        with pytest.raises(SourceError):
            _import(monkeypatch, store, source, whole, taken)
        assert taken == ([True] if whole else [])
        content = _content(store)
        assert len(content["view"]) == len(GOOD)
        assert len(content["runs"]) == len({r["run_id"] for r in GOOD})
        results[whole] = content
    assert results[True] == results[False]


def test_progress_rises_to_the_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _source(tmp_path / "src", GOOD)
    seen: list[tuple[str, int, int | None]] = []
    report, taken = _import(
        monkeypatch, tmp_path / "s.duckdb", source, True,
        progress=lambda table, done, total: seen.append((table, done, total)),
    )  # fmt: skip
    assert taken == [True] and report.total.imported == len(GOOD)
    done = [n for table, n, _ in seen if table == "checkpoints"]
    assert done == sorted(done) and done[-1] == len(GOOD)


def test_large_states_never_start_the_pass(tmp_path: Path) -> None:
    """Row groups whose states average the split size or more are read batch by batch from
    the start (their cutting needs a batch's bounds), as are partitioned datasets."""
    from loaders.parquet import ParquetReader

    rows = [
        dict(r, working_state=json.dumps({"i": i, "text": f"{i} y" * SPLIT_MIN_BYTES}))
        for i, r in enumerate(GOOD)
    ]  # each its own (repeated values are stored once, and their size counted once)
    large = _source(tmp_path / "large", rows)
    small = _source(tmp_path / "small", GOOD)
    plans = {}
    for name, source in (("large", large), ("small", small)):
        reader = ParquetReader(str(source))
        plans[name] = next(NativeFlavour().plans(reader)).whole
    assert plans["large"] is None
    assert plans["small"] is not None and plans["small"].rows == len(GOOD)
    # a nested column first: the file's column chunks no longer line up with its fields
    nested = tmp_path / "nested"
    nested.mkdir()
    table = pq.read_table(tmp_path / "large" / "part-0.parquet")
    extra = pa.array([{"a": 1, "b": "x", "c": 2.0}] * table.num_rows)
    pq.write_table(table.add_column(0, "extra", extra), nested / "part-0.parquet")
    assert next(NativeFlavour().plans(ParquetReader(str(nested)))).whole is None
    hive = tmp_path / "hive" / "day=2026-11-01"
    hive.mkdir(parents=True)
    _write(hive / "part-0.parquet", GOOD)
    assert next(NativeFlavour().plans(ParquetReader(str(tmp_path / "hive")))).whole is None


def test_a_parquet_file_duckdb_wrote_matches_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export made with DuckDB's ``COPY ... TO`` (its own writer, typed columns, one row
    group), as a person turns a SQLite checkpoint table into Parquet."""
    source = tmp_path / "export"
    source.mkdir()
    _write(tmp_path / "text.parquet", [*GOOD, *BAD[:2]])
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * EXCLUDE (step_index), TRY_CAST(step_index AS BIGINT) AS step_index "
        f"FROM read_parquet('{tmp_path / 'text.parquet'}')) "
        f"TO '{source / 'checkpoints.parquet'}' (FORMAT parquet)"
    )
    con.close()
    ways = _both_ways(monkeypatch, tmp_path, source / "checkpoints.parquet", [True])
    assert _counts(ways[True][0]) == (len(GOOD) + 2, len(GOOD), 0, 0, 2)
    assert _counts(ways[True][0]) == _counts(ways[False][0]) and ways[True][1] == ways[False][1]
