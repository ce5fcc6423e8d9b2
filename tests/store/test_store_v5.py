"""Store version 5 (split states refer to their parts by number): the migration from a store
the previous layout wrote, and imports, reads and prune on the new layout.

``data/store_v4.duckdb.gz`` is a real store written by Stepscope at store version 4 (commit
e8751d2's ``stepscope import`` of :func:`tests.store.v5_source.first_source`, then of
:func:`~tests.store.v5_source.second_source`): message-heavy runs, parts shared between
runs and between the two imports, parts referred to in reverse, a 40 KB state without parts
and one written with spaces (both whole in ``large_states``).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import debugger
from debugger.cli import main
from debugger.errors import StoreError
from debugger.store import Store, reads, schema
from debugger.store.prune import PruneRules, compact
from loaders import import_source
from tests.fixtures.native import native_rows, stepscope, write_native_sqlite
from tests.store.v5_source import first_source, messages, second_source

DATA = Path(__file__).parent / "data"


def _v4_store(tmp_path: Path) -> Path:
    path = tmp_path / "v4.duckdb"
    with gzip.open(DATA / "store_v4.duckdb.gz") as f, path.open("wb") as out:
        shutil.copyfileobj(f, out)
    return path


def _states(*paths: Path) -> dict[tuple[str, int], str]:
    out = {}
    for path in paths:
        con = sqlite3.connect(path)
        try:
            rows = con.execute("SELECT run_id, step_index, working_state FROM checkpoints")
            out.update({(r, s): t for r, s, t in rows.fetchall()})
        finally:
            con.close()
    return out


def _cli(path: Path, keys: list[tuple[str, int]]) -> list[str]:
    runner = CliRunner()
    out = []
    commands = [["show", r, "--step", str(s), "--json"] for r, s in keys]
    commands += [["diff", "run-0:1", "run-3:2", "--json"], ["diff", "run-4:2", "run-4:3", "--json"]]
    for args in commands:
        r = runner.invoke(main, [*args, "--store", str(path)])
        assert r.exit_code == 0, r.output
        out.append(r.output)
    return out


def test_a_v4_store_migrates_and_reads_byte_for_byte(tmp_path: Path) -> None:
    a, b = first_source(tmp_path / "a.sqlite"), second_source(tmp_path / "b.sqlite")
    want = _states(a, b)
    old = _v4_store(tmp_path)
    with pytest.raises(StoreError, match="needs migrating"):
        debugger.open(old)
    fresh = tmp_path / "fresh.duckdb"
    with Store.open(fresh) as store:
        import_source(store, str(a))
        import_source(store, str(b))
    reads.clear_part_cache()
    with Store.open(old) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        for key, text in want.items():
            assert store.checkpoint_text(*key)[1] == text, key
        rows = store.sql(
            "SELECT run_id, step_index, CAST(working_state AS VARCHAR) FROM checkpoints"
        )
        assert {(r, s): t for r, s, t in rows} == want
        # the run macro of version 6 rebuilds each run's split states alone, as the view
        for run in {r for r, _ in want}:
            by_macro = store.sql(
                "SELECT step_index, CAST(working_state AS VARCHAR) FROM checkpoints_of(?)", [run]
            )
            assert {(run, s): t for s, t in by_macro} == {
                k: t for k, t in want.items() if k[0] == run
            }
        # every reference is a part's number, and the parts keep the order they were stored in
        [(dangling,)] = store.sql(
            "SELECT count(*) FROM (SELECT unnest(refs) AS n FROM split_states) "
            "WHERE n NOT IN (SELECT part_num FROM state_parts)"
        )
        assert dangling == 0
        nums = [n for (n,) in store.sql("SELECT part_num FROM state_parts ORDER BY rowid")]
        assert nums == sorted(nums) and len(set(nums)) == len(nums) == 128
        assert store.sql("SELECT count(*) FROM split_states") == [(20,)]
        assert store.sql("SELECT count(*) FROM large_states") == [(2,)]
        # nothing changed in the sources: nothing to do
        for src in (a, b):
            report = import_source(store, str(src))
            assert report.total.imported == 0 and report.total.already_present > 0
    # shown and diffed exactly as a store imported fresh at version 5
    assert _cli(old, sorted(want)) == _cli(fresh, sorted(want))


def test_an_import_after_the_migration_numbers_on_and_shares_old_parts(tmp_path: Path) -> None:
    old = _v4_store(tmp_path)
    rows = [r for r in native_rows(runs=6, steps=2) if r["run_id"] == "run-5"]
    for r in rows:  # run-0's first messages, then its own
        msgs = messages(list(range(8))) + messages(list(range(12 + r["step_index"])), "e")
        r["working_state"] = '{"messages":' + _compact(msgs) + "}"
    src = write_native_sqlite(tmp_path / "c.sqlite", rows)
    with Store.open(old) as store:
        [(last,)] = store.sql("SELECT max(part_num) FROM state_parts")
        import_source(store, str(src))
        new = store.sql(f"SELECT part_num FROM state_parts WHERE part_num > {last} ORDER BY 1")
        assert [n for (n,) in new] == list(range(last + 1, last + 14))  # e0..e12, once each
        [(refs,)] = store.sql(
            "SELECT s.refs FROM split_states s JOIN checkpoint_rows c USING (ckpt_key) "
            "WHERE c.run_id = 'run-5' AND c.step_index = 1"
        )
        assert refs[:8] == list(range(8))  # run-0's parts, stored by the v4 import
        for key, text in _states(src).items():
            assert store.checkpoint_text(*key)[1] == text


def test_prune_and_compact_after_the_migration_keep_every_state_exact(tmp_path: Path) -> None:
    a, b = first_source(tmp_path / "a.sqlite"), second_source(tmp_path / "b.sqlite")
    want = _states(a, b)
    old = _v4_store(tmp_path)
    with Store.open(old) as store:
        report = store.prune(PruneRules(keep_last=1))  # each run's head stays
        assert report.checkpoints == len(want) - 5
        # run-0's first messages are run-1's and run-3's too: only what nothing refers to went
        [(left,)] = store.sql(
            "SELECT count(*) FROM state_parts WHERE part_num NOT IN "
            "(SELECT DISTINCT unnest(refs) FROM split_states)"
        )
        assert left == 0
    compact(str(old))
    reads.clear_part_cache()
    heads = {f"run-{r}": s for r, s in enumerate((5, 5, 5, 3, 3))}
    with debugger.open(old) as store:
        assert store.sql("SELECT count(*) FROM checkpoints") == [(5,)]
        for run_id, step in heads.items():
            assert store.checkpoint_text(run_id, step)[1] == want[(run_id, step)]


def _compact(value: object) -> str:
    import orjson

    return orjson.dumps(value).decode()


def test_migration_of_an_empty_v4_store(tmp_path: Path) -> None:
    """A store created at version 4 with nothing imported migrates, then imports as new."""
    path = tmp_path / "empty.duckdb"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:4])
        m.setattr("debugger.store.CURRENT_VERSION", 4)
        with Store.open(path) as store:
            assert store.schema_version() == 4
    a = first_source(tmp_path / "a.sqlite")
    with Store.open(path) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        import_source(store, str(a))
        for key, text in _states(a).items():
            assert store.checkpoint_text(*key)[1] == text


def test_a_migration_that_fails_leaves_the_v4_store_as_it_was(tmp_path: Path) -> None:
    """The migration runs in one transaction: stopped after its last statement (as a killed
    process or a full disk would stop it before the commit), the store is still at version
    4, whole, and the next open migrates it."""
    a, b = first_source(tmp_path / "a.sqlite"), second_source(tmp_path / "b.sqlite")
    old = _v4_store(tmp_path)
    step = schema.MIGRATIONS[4]

    def stopped(con: duckdb.DuckDBPyConnection) -> None:
        step.apply(con)
        raise OSError(28, "No space left on device")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS[:4], replace(step, apply=stopped)])
        with pytest.raises(StoreError, match=r"could not be migrated .* No space left"):
            Store.open(old)
        result = stepscope("import", a, "--store", old)  # the command: one line, a hint
        assert result.exit_code != 0 and "Traceback" not in result.stderr
        assert "could not be migrated" in result.stderr and "Hint:" in result.stderr
    with pytest.raises(StoreError, match="needs migrating"):
        debugger.open(old)  # still version 4, refused read-only as before
    con = duckdb.connect(str(old), read_only=True)
    try:
        assert schema.applied_version(con) == 4
        assert con.execute("SELECT count(*) FROM split_states").fetchone() == (20,)
        assert [r[0] for r in con.execute("DESCRIBE state_parts").fetchall()] == [
            "part_hash",
            "part",
        ]
    finally:
        con.close()
    with Store.open(old) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        for key, text in _states(a, b).items():
            assert store.checkpoint_text(*key)[1] == text


def test_the_import_command_says_it_migrates_and_keeps_its_json_clean(tmp_path: Path) -> None:
    a = first_source(tmp_path / "a.sqlite")
    old = _v4_store(tmp_path)
    result = stepscope("import", a, "--store", old, "--json")
    assert result.exit_code == 0, result.stderr
    assert "migrating the store" in result.stderr
    assert f"from schema version 4 to {schema.CURRENT_VERSION}" in result.stderr
    report = json.loads(result.stdout)  # stdout holds the report alone
    assert report["total"]["already_present"] == len(_states(a))
    again = stepscope("import", a, "--store", old, "--json")
    assert "migrating" not in again.stderr  # once


def test_a_v4_store_that_lost_a_part_is_refused_in_a_line_and_kept(tmp_path: Path) -> None:
    old = _v4_store(tmp_path)
    con = duckdb.connect(str(old))
    try:
        con.execute("DELETE FROM state_parts WHERE rowid = 3")  # a part run-0's states use
    finally:
        con.close()
    damaged = old.read_bytes()
    result = stepscope("runs", "--store", old)
    assert result.exit_code != 0 and "needs migrating" in result.stderr
    result = stepscope("import", first_source(tmp_path / "a.sqlite"), "--store", old)
    assert result.exit_code != 0
    assert "refer to parts it does not hold" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    con = duckdb.connect(str(old), read_only=True)
    try:
        assert schema.applied_version(con) == 4  # rolled back: as it was
    finally:
        con.close()
    assert len(old.read_bytes()) >= len(damaged) // 2
