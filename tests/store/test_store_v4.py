"""Store version 4 (split states, compressed small ones): the migration from a store the
previous layout wrote, and prune, refresh and re-import on the new layout.

``data/store_v3.duckdb.gz`` is a real store written by Stepscope at store version 3
(commit c389004's ``stepscope import``) from the source :func:`v3_source` writes; it holds
a message-heavy run (states growing from ~6 to ~13 KB), a 40 KB state without parts (in
``large_states``) and a large state written with spaces (kept whole).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import debugger
from debugger.cli import main
from debugger.errors import StoreError
from debugger.store import Store, schema
from debugger.store.prune import PruneRules, compact
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite

DATA = Path(__file__).parent / "data"
MSG = "lorem ipsum dolor sit amet " * 12


def _messages(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "content": MSG} for i in range(n)]


def v3_source(path: Path, extra: int = 0) -> Path:
    """The source the v3 fixture store was imported from (``extra``: more messages in run-0,
    a changed source)."""
    rows = native_rows(runs=3, steps=6)
    for r in rows:
        run = int(r["run_id"].split("-")[1])
        s = r["step_index"]
        if run == 0:  # message-heavy: the list grows by two each step
            msgs = _messages(20 + 2 * s + extra)
            r["working_state"] = orjson.dumps({"messages": msgs, "step": s}).decode()
        elif run == 1 and s == 3:  # a large state without parts
            r["working_state"] = '{"big": "' + "x" * 40_000 + '"}'
        elif run == 2 and s == 2:  # large, with parts, written with spaces: stays whole
            r["working_state"] = json.dumps({"messages": _messages(150)})
    return write_native_sqlite(path, rows)


def _source_states(path: Path) -> dict[tuple[str, int], str]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT run_id, step_index, working_state FROM checkpoints")
        return {(r, s): t for r, s, t in rows.fetchall()}
    finally:
        con.close()


def _v3_store(tmp_path: Path) -> Path:
    path = tmp_path / "v3.duckdb"
    with gzip.open(DATA / "store_v3.duckdb.gz") as f, path.open("wb") as out:
        shutil.copyfileobj(f, out)
    return path


def _show_all(path: Path, keys: list[tuple[str, int]]) -> list[str]:
    runner = CliRunner()
    out = []
    for run, step in keys:
        r = runner.invoke(main, ["show", run, "--step", str(step), "--json", "--store", str(path)])
        assert r.exit_code == 0, r.output
        out.append(r.output)
    r = runner.invoke(main, ["diff", "run-0:1", "run-0:4", "--json", "--store", str(path)])
    assert r.exit_code == 0, r.output
    out.append(r.output)
    return out


def test_a_v3_store_migrates_in_place_and_reads_byte_for_byte(tmp_path: Path) -> None:
    src = v3_source(tmp_path / "src.sqlite")
    want = _source_states(src)
    old = _v3_store(tmp_path)
    with pytest.raises(StoreError, match="needs migrating"):
        debugger.open(old)
    fresh = tmp_path / "fresh.duckdb"
    with Store.open(fresh) as store:
        import_source(store, str(src))
    with Store.open(old) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        for (run, step), text in want.items():
            assert store.checkpoint_text(run, step)[1] == text
        rows = store.sql(
            "SELECT run_id, step_index, CAST(working_state AS VARCHAR) FROM checkpoints"
        )
        view = {(r, s): t for r, s, t in rows}
        assert view == want
        rows = store.sql(
            "SELECT run_id, step_index FROM checkpoint_rows JOIN split_states USING (ckpt_key)"
        )
        split = {(r, s) for r, s in rows}
        assert split == {("run-0", s) for s in range(6)}
        [(large,)] = store.sql("SELECT count(*) FROM large_states")
        assert large == 2  # the 40 KB state and the one written with spaces, whole
        [(parts,)] = store.sql("SELECT count(*) FROM state_parts")
        assert parts == 30  # run-0's thirty messages, once
        report = import_source(store, str(src))  # nothing changed: nothing to do
        assert report.total.imported == 0 and report.total.already_present == len(want)
        assert store.checkpoints("run-0")[-1].working_state == orjson.loads(want[("run-0", 5)])
    # the CLI shows and diffs the migrated store exactly as a store imported fresh
    keys = sorted(want)
    assert _show_all(old, keys) == _show_all(fresh, keys)


def test_migration_of_an_empty_v3_store(tmp_path: Path) -> None:
    """A store created at version 3 with nothing imported migrates, then imports as new."""
    path = tmp_path / "empty.duckdb"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
        m.setattr("debugger.store.CURRENT_VERSION", 3)
        with Store.open(path):
            pass
    src = v3_source(tmp_path / "src.sqlite")
    with Store.open(path) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        import_source(store, str(src))
        for (run, step), text in _source_states(src).items():
            assert store.checkpoint_text(run, step)[1] == text


def _with_ids(path: Path) -> Path:
    """The source with checkpoint ids of its own, so that a changed state is an update."""
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE checkpoints ADD COLUMN checkpoint_id TEXT")
    con.execute("UPDATE checkpoints SET checkpoint_id = run_id || '-' || step_index")
    con.commit()
    con.close()
    return path


def test_a_changed_source_rewrites_split_states_exactly(tmp_path: Path) -> None:
    src = _with_ids(v3_source(tmp_path / "src.sqlite"))
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(src))
        # run-0's states change: three more messages each
        changed = _with_ids(v3_source(tmp_path / "src.sqlite", extra=3))
        report = import_source(store, str(changed))
        assert report.total.imported == 0 and report.total.updated == 6
        for (run, step), text in _source_states(changed).items():
            assert store.checkpoint_text(run, step)[1] == text
        [(rows,)] = store.sql("SELECT count(*) - count(DISTINCT ckpt_key) FROM split_states")
        assert rows == 0  # one skeleton a checkpoint: the old ones were replaced
        [(whole,)] = store.sql(
            "SELECT count(*) FROM checkpoint_rows c JOIN split_states USING (ckpt_key) "
            "WHERE c.working_state IS NOT NULL"
        )
        assert whole == 0


def test_prune_drops_parts_no_state_refers_to_and_keeps_the_rest_exact(tmp_path: Path) -> None:
    rows = native_rows(runs=2, steps=4)
    for r in rows:  # each step a new set of messages: trimming old steps frees their parts
        prefix = f"{r['run_id']}-{r['step_index']}-"
        r["working_state"] = orjson.dumps({"messages": _messages(20, prefix)}).decode()
    src = write_native_sqlite(tmp_path / "src.sqlite", rows)
    want = _source_states(src)
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(src))
        assert store.sql("SELECT count(*) FROM state_parts") == [(160,)]
        report = store.prune(PruneRules(keep_last=1, runs=("run-1",)))
        assert report.checkpoints == 7
        assert store.sql("SELECT count(*) FROM state_parts") == [(20,)]
        assert store.checkpoint_text("run-0", 3)[1] == want[("run-0", 3)]
    compact(str(path))
    with debugger.open(path) as store:
        assert store.checkpoint_text("run-0", 3)[1] == want[("run-0", 3)]
        [(n,)] = store.sql("SELECT count(*) FROM split_states")
        assert n == 1
