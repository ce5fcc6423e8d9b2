"""Batches fill the store's row groups exactly, and an import that commits many times stores
the same rows as one that commits once."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import debugger.store.session as session_mod
from debugger.store import Store
from debugger.store.session import ImportSession
from loaders import import_source
from loaders import importer as importer_module
from loaders.base import aligned_rows
from loaders.parquet import ParquetReader
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.loaders.test_whole_table import recording


def test_aligned_rows_is_a_power_of_two_within_bounds() -> None:
    assert aligned_rows(20_000) == 16_384
    assert aligned_rows(5_000) == 4_096
    assert aligned_rows(1) == 64
    assert aligned_rows(4_096) == 4_096


def test_parquet_batches_are_exact_across_files_and_row_groups(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    for day, n in (("2026-11-01", 150), ("2026-11-02", 70)):
        part = root / f"day={day}"
        part.mkdir(parents=True)
        table = pa.table({"run_id": [f"r-{day}"] * n, "step_index": list(range(n))})
        pq.write_table(table, part / "f.parquet", row_group_size=33)
    with ParquetReader(str(root)) as reader:
        batches = list(reader.scan("checkpoints", batch_rows=64))
    assert [b.num_rows for b in batches] == [64, 64, 64, 28]
    rows = [r for b in batches for r in b.to_pylist()]
    assert [(r["day"], r["step_index"]) for r in rows][149:151] == [
        ("2026-11-01", 149),
        ("2026-11-02", 0),
    ]
    assert len({r["_key"] for r in rows}) == 220


def test_many_commits_store_what_one_commit_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write_native_sqlite(tmp_path / "n.sqlite", native_rows(runs=40, steps=30))

    def stored(path: Path) -> list[tuple[object, ...]]:
        with Store.open(path) as store:
            report = import_source(store, str(source))
            assert report.total.imported == 1200
            return store.sql(
                "SELECT run_id, step_index, checkpoint_id, parent_id, state_hash "
                "FROM checkpoints ORDER BY run_id, step_index"
            )

    once = stored(tmp_path / "once.duckdb")
    monkeypatch.setattr(session_mod, "COMMIT_BYTES", 1)  # commit after every batch
    many = stored(tmp_path / "many.duckdb")
    assert many == once


def test_parents_chain_in_order_even_when_a_run_arrives_out_of_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source without parents: a run whose later batch holds an earlier step is still
    chained in order, every checkpoint's parent the step before it."""
    import loaders.sqlite

    monkeypatch.setattr(loaders.sqlite, "BATCH_BYTES", 20_000)  # batches of 64 rows
    rows = native_rows(runs=2, steps=50)
    late = rows.pop(25)  # run-0, step 25: read last, in another batch than its neighbours
    source = write_native_sqlite(tmp_path / "late.sqlite", [*rows, late])
    with Store.open(tmp_path / "s.duckdb") as store:
        import_source(store, str(source))
        pairs = store.sql(
            "SELECT c.run_id, c.step_index, p.step_index FROM checkpoints c "
            "LEFT JOIN checkpoints p ON p.run_id = c.run_id AND p.checkpoint_id = c.parent_id "
            "ORDER BY c.run_id, c.step_index"
        )
    assert pairs == [(f"run-{r}", s, s - 1 if s else None) for r in range(2) for s in range(50)]


def test_staging_on_its_own_connection_stores_what_the_store_connection_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints are validated and hashed on a staging cursor while the store's connection
    inserts the batch before; the rows stored and quarantined are those of validating on the
    store's own connection, including timestamps with offsets and zone names."""
    import loaders.sqlite

    monkeypatch.setattr(loaders.sqlite, "BATCH_BYTES", 20_000)  # several batches
    rows = native_rows(runs=4, steps=40)
    rows[3]["created_at"] = "2026-11-01 12:00:00+05:30"
    rows[4]["created_at"] = "2026-11-01 12:00:00 Europe/Paris"
    rows[5]["created_at"] = "2026-11-01T12:00:00"
    rows[7]["working_state"] = "{not json"
    rows[8]["tokens_spent"] = -3
    rows[9]["created_at"] = "yesterday"
    rows.append(dict(rows[10]))  # the same checkpoint twice
    source = write_native_sqlite(tmp_path / "mixed.sqlite", rows)

    def stored(path: Path) -> tuple[object, ...]:
        with Store.open(path) as store:
            report = import_source(store, str(source))
            return (
                report.total,
                # (lookup_key holds the run's number, which is given in no set order)
                store.sql(
                    "SELECT * EXCLUDE (source_id, lookup_key) FROM checkpoint_rows "
                    "ORDER BY ckpt_key"
                ),
                store.sql(
                    "SELECT source_table, source_key, reason, raw FROM quarantine ORDER BY 2"
                ),
            )

    apart = stored(tmp_path / "apart.duckdb")
    monkeypatch.setattr(session_mod, "PRESTAGED_TABLES", frozenset())
    together = stored(tmp_path / "together.duckdb")
    assert apart == together
    total = apart[0]
    assert total.quarantined == 3 and total.already_present == 1  # type: ignore[attr-defined]
    times = {r[4]: str(r[6]) for r in apart[1] if r[1] == "run-0"}  # type: ignore[attr-defined]
    assert [times[3], times[4], times[5]] == [
        "2026-11-01 06:30:00",
        "2026-11-01 11:00:00",
        "2026-11-01 12:00:00",
    ]


def test_json_written_by_the_reader_skips_only_the_parse(tmp_path: Path) -> None:
    """A batch whose documents the reader serialized itself (contract.JSON_WRITTEN, as the
    LangGraph flavour's) is not parsed again to be validated; it stores the same rows, and
    documents of the wrong JSON type are still quarantined."""
    from debugger.contract import JSON_WRITTEN
    from debugger.store.validate import reasons
    from loaders.langgraph import select_all, to_batch

    types = {"working_state": "VARCHAR", "metadata": "VARCHAR"}
    assert "json_valid" in " ".join(reasons("checkpoints", types))
    checks = " ".join(reasons("checkpoints", {**types, JSON_WRITTEN: "VARCHAR"}))
    assert "json_valid" not in checks and "json_type(CAST(metadata" in checks

    def row(step: int, metadata: bytes) -> dict[str, object]:
        return {"_key": step, "run_id": "r", "checkpoint_id": f"c{step}", "step_index": step,
                "created_at": f"2026-11-01T10:00:0{step}+00:00",
                "working_state": b'{"n": %d, "xs": [1.5, "a", null]}' % step,
                "pending_effects": b"[]", "metadata": metadata}  # fmt: skip

    batch = to_batch("checkpoints", [row(0, b'{"agent": "a"}'), row(1, b"[1]"), row(2, b"{}")])
    plain = select_all("checkpoints").replace(f", {JSON_WRITTEN}", "")
    assert JSON_WRITTEN in select_all("checkpoints") and JSON_WRITTEN not in plain

    def stored(path: Path, select_sql: str) -> tuple[object, ...]:
        with Store.open(path) as store:
            with store.import_session("sqlite", "test", "x") as session:
                counts = session.add("checkpoints", batch, select_sql)
                session.finish()
            rows = store.sql(
                "SELECT checkpoint_id, working_state, state_hash, metadata FROM checkpoint_rows "
                "ORDER BY 1"
            )
            reasons = store.sql("SELECT reason FROM quarantine")
        return counts, rows, reasons

    written = stored(tmp_path / "written.duckdb", select_all("checkpoints"))
    assert written == stored(tmp_path / "parsed.duckdb", plain)
    assert [r[0] for r in written[1]] == ["c0", "c2"]  # type: ignore[index]
    assert written[2] == [("metadata is not a JSON object",)]


def test_an_import_ending_on_a_part_filled_group_leaves_no_free_blocks(tmp_path: Path) -> None:
    """A full row group then a short last batch: each is committed so that DuckDB keeps the
    group it wrote during the insert (in one transaction the commit wrote every row again,
    leaving the first copy's blocks free in the file)."""
    _import_leaves_no_free_blocks(tmp_path, _rows_18k())


def _rows_18k() -> list[dict[str, object]]:
    """18,000 rows of ~2 KB states: a batch of 16,384 (two full row groups) and 1,616."""
    base = native_rows(runs=60, steps=60)
    return [
        {**r, "run_id": f"{r['run_id']}-{k}", "working_state": json.dumps({"n": [i, k] * 200})}
        for k in range(5)
        for i, r in enumerate(base)
    ]


def _import_leaves_no_free_blocks(tmp_path: Path, rows: list[dict[str, object]]) -> None:
    source = write_native_sqlite(tmp_path / "n.sqlite", rows)
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        assert import_source(store, str(source)).total.imported == len(rows)
    with Store.open(path, read_only=True) as store:
        free = store.sql(
            "SELECT free_blocks FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        )
        assert free == [(0,)]
        assert store.sql("SELECT count(*) FROM checkpoints") == [(len(rows),)]


def test_batches_after_a_pass_left_open_leave_no_free_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first batch held and inserted as a pass, its transaction left open for what
    follows, then a batch that cannot join a pass (a state to split) added in it: the
    short group after the pass's full ones does not have DuckDB write them again."""
    rows = _rows_18k()
    rows[-1]["working_state"] = json.dumps({"notes": ["x" * 300] * 40})  # split: no pass
    monkeypatch.setattr(importer_module, "GATHER_MAX_BYTES", 1)  # a pass for each batch
    monkeypatch.setattr(importer_module, "ONE_PASS_MAX_BYTES", 1)
    passes: list[bool] = []
    monkeypatch.setattr(
        ImportSession, "add_gathered", recording(ImportSession.add_gathered, passes)
    )
    _import_leaves_no_free_blocks(tmp_path, rows)
    assert passes == [True]
