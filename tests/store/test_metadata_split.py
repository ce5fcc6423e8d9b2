"""Large metadata stored as a stub and a split text (store version 6;
:mod:`debugger.store.metadata_split`), on databases the real LangGraph wrote.

A functional-API chat that saves its history keeps it in every checkpoint's
``metadata.internal_channels.__previous__``. Each document must come back exactly (byte for
byte through ``show --json`` and the view, as a store that keeps them whole gives them), as
LangGraph's saver holds it, through re-imports of a live database, prune and compaction, and
from a store the previous layout wrote (``data/store_v5.duckdb.gz``: commit 2177a76's
``stepscope import`` of :func:`tests.store.v6_source.chat_source`).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from debugger.store import Store, metadata_split, reads, schema
from debugger.store.prune import PruneRules, compact
from debugger.store.state_parts import text_hash
from loaders import import_source
from tests.fixtures.native import native_rows, stepscope, write_native_sqlite
from tests.store.v6_source import chat_source, go_on

DATA = Path(__file__).parent / "data"


def _store(path: Path, *sources: Path, split: bool = True) -> Path:
    with pytest.MonkeyPatch.context() as m:
        if not split:  # the layout before version 6: every document whole in its row
            m.setattr(metadata_split, "CANDIDATES", "false")
        with Store.open(path) as store:
            for source in sources:
                import_source(store, str(source))
    return path


def _raw(path: Path) -> dict[tuple[str, str], str]:
    """The documents as ``checkpoint_rows`` holds them (stubs, where split)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute("SELECT run_id, checkpoint_id, metadata FROM checkpoint_rows")
        return {(r, c): m for r, c, m in rows.fetchall()}
    finally:
        con.close()


def _documents(path: Path) -> dict[tuple[str, str], str]:
    """Every checkpoint's metadata through the view (as the SQL console reads it)."""
    with Store.open(path, read_only=True) as store:
        rows = store.sql("SELECT run_id, checkpoint_id, CAST(metadata AS VARCHAR) FROM checkpoints")
    return {(r, c): m for r, c, m in rows}


def _run_macro_matches_the_view(path: Path) -> None:
    """``checkpoints_of(run)`` gives each run's rows of the view, column for column."""
    with Store.open(path, read_only=True) as store:
        runs = [r for (r,) in store.sql("SELECT DISTINCT run_id FROM checkpoints")]
        assert runs
        for run in runs:
            order = "ORDER BY checkpoint_id"
            view = store.sql(f"SELECT * FROM checkpoints WHERE run_id = ? {order}", [run])
            assert store.sql(f"SELECT * FROM checkpoints_of(?) {order}", [run]) == view
        assert store.sql("SELECT count(*) FROM checkpoints_of('no such run')") == [(0,)]


def _through_python(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every checkpoint's metadata read as the pages read it: a run's checkpoints at once,
    and each one alone (by step and by id), which must agree."""
    reads.clear_part_cache()
    out = {}
    with Store.open(path, read_only=True) as store:
        for run in store.runs()["run_id"]:
            for c in store.checkpoints(run):
                out[(run, c.checkpoint_id)] = c.metadata
                alone = store.checkpoint(run, checkpoint_id=c.checkpoint_id)
                assert alone.metadata == c.metadata
                assert store.checkpoint(run, c.step_index).metadata is not None
    return out


def _shows(path: Path, keys: list[tuple[str, str]]) -> list[str]:
    reads.clear_part_cache()
    out = []
    for run, ckpt in keys:
        result = stepscope("show", run, "--checkpoint", ckpt, "--json", "--store", path)
        assert result.exit_code == 0, result.output
        out.append(result.stdout)
    return out


def _stubs_match_split_rows(path: Path) -> int:
    """Every split document belongs to a checkpoint whose stub names its text's hash, and
    every part referred to is stored; returns how many documents are split."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        split = con.execute(
            f"""SELECT c.metadata, m.text
                FROM ({schema.split_texts_sql("WHERE ckpt_key < 0")}) m
                LEFT JOIN checkpoint_rows c ON c.ckpt_key = -1 - m.ckpt_key"""
        ).fetchall()
        lost = con.execute(
            "SELECT count(*) FROM (SELECT unnest(refs) AS n FROM split_states) "
            "WHERE n NOT IN (SELECT part_num FROM state_parts)"
        ).fetchone()
    finally:
        con.close()
    for stub, text in split:
        assert stub is not None and metadata_split.stub_hash(stub) == text_hash(text)
    assert lost == (0,)
    return len(split)


def _saved_history(source: Path) -> dict[str, list[tuple[str, str]]]:
    """What LangGraph's saver holds in ``__previous__`` at each checkpoint: each message's
    id and text."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(source, check_same_thread=False)
    try:
        saver = SqliteSaver(con)
        out = {}
        for t in saver.list(None):
            previous = t.checkpoint["channel_values"].get("__previous__")
            out[t.checkpoint["id"]] = [(m.id, m.content) for m in previous or []]
        return out
    finally:
        con.close()


def test_a_chat_s_history_is_stored_once_and_read_back_whole(tmp_path: Path) -> None:
    source = chat_source(tmp_path / "chat.sqlite")
    split = _store(tmp_path / "split.duckdb", source)
    whole = _store(tmp_path / "whole.duckdb", source, split=False)
    raw, documents = _raw(split), _documents(split)
    # most documents are stubs, and the stubs are small
    stubs = [k for k, text in raw.items() if metadata_split.MARK in text]
    assert len(stubs) >= len(raw) // 2 and _stubs_match_split_rows(split) == len(stubs)
    assert sum(len(raw[k]) for k in stubs) < sum(len(documents[k]) for k in stubs) / 10
    # the same documents, byte for byte, as the store that keeps them whole gives them
    assert documents == _documents(whole) == _raw(whole)
    assert _through_python(split) == _through_python(whole)
    _run_macro_matches_the_view(split)
    # the console (read-only, no external access) has the macro too
    result = stepscope(
        "sql", "SELECT count(*) AS n FROM checkpoints_of('chat-a')", "--json", "--store", split
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == [{"n": 12}]
    keys = sorted(raw)
    assert _shows(split, keys) == _shows(whole, keys)
    # what LangGraph's saver holds in __previous__ at each checkpoint
    history = _saved_history(source)
    for (_, ckpt), doc in _through_python(split).items():
        previous = doc["internal_channels"].get("__previous__") or []
        assert [(m["id"], m["content"]) for m in previous] == history[ckpt]
        # each saved message whole, as every checkpoint holds it (its parts shared)
        assert "stepscope.same_as" not in json.dumps(previous)
    # the statuses read from the stubs where they lie: chat-b failed at its last call
    with Store.open(split, read_only=True) as a, Store.open(whole, read_only=True) as b:
        assert a.runs().to_dict() == b.runs().to_dict()
        failed = a.run("chat-b")
        assert failed.status == "failed"
        assert "model endpoint unavailable" in (failed.last_error or "")
    diffs = []
    for p in (split, whole):
        for run in ("chat-a", "chat-b"):
            result = stepscope("diff", f"{run}:1", f"{run}:3", "--json", "--store", p)
            assert result.exit_code == 0, result.output
            diffs.append(result.stdout)
    assert diffs[:2] == diffs[2:]


def test_a_live_chat_re_imported_as_it_goes_on(tmp_path: Path) -> None:
    source = chat_source(tmp_path / "chat.sqlite")
    path = _store(tmp_path / "s.duckdb", source)
    with Store.open(path) as store:
        again = import_source(store, str(source))
    counts = again.tables["checkpoints"]
    assert (counts.imported, counts.updated) == (0, 0)
    assert counts.already_present == counts.read
    go_on(source, "chat-a", 6, 2)  # the thread goes on: its old head gains a child
    with Store.open(path) as store:
        more = import_source(store, str(source)).tables["checkpoints"]
    assert more.imported == 4 and more.updated >= 1
    fresh = _store(tmp_path / "fresh.duckdb", source)
    assert _documents(path) == _documents(fresh)
    assert _through_python(path) == _through_python(fresh)
    _stubs_match_split_rows(path)


def test_prune_and_compact_keep_every_document_and_drop_unused_parts(tmp_path: Path) -> None:
    source = chat_source(tmp_path / "chat.sqlite")
    path = _store(tmp_path / "s.duckdb", source)
    before = _documents(path)

    def parts() -> int:
        con = duckdb.connect(str(path), read_only=True)
        try:
            row = con.execute("SELECT count(*) FROM state_parts").fetchone()
            return int(row[0]) if row else 0
        finally:
            con.close()

    all_parts = parts()
    with Store.open(path) as store:
        store.prune(PruneRules(keep_last=2))
    kept = _documents(path)
    assert 0 < len(kept) < len(before)
    assert all(before[k] == text for k, text in kept.items())
    _stubs_match_split_rows(path)
    with Store.open(path) as store:
        store.prune(PruneRules(runs=("chat-a",)))
    assert {r for r, _ in _documents(path)} == {"chat-b"}
    assert parts() < all_parts
    compact(str(path))
    assert _documents(path) == {k: t for k, t in before.items() if k in _documents(path)}
    assert len(_documents(path)) == 2
    _stubs_match_split_rows(path)
    _run_macro_matches_the_view(path)  # the compacted copy keeps the macro


def _v5_store(tmp_path: Path) -> Path:
    path = tmp_path / "v5.duckdb"
    with gzip.open(DATA / "store_v5.duckdb.gz") as f, path.open("wb") as out:
        shutil.copyfileobj(f, out)
    return path


def test_a_v5_store_s_documents_are_split_by_its_migration(tmp_path: Path) -> None:
    old = _v5_store(tmp_path)
    written = _raw(old)  # version 5 kept every document whole
    assert not any(metadata_split.MARK in t for t in written.values())
    with Store.open(old) as store:
        assert store.schema_version() == schema.CURRENT_VERSION == 6
    raw = _raw(old)
    stubs = sum(metadata_split.MARK in t for t in raw.values())
    assert stubs >= len(raw) // 2 and _stubs_match_split_rows(old) == stubs
    assert _documents(old) == written
    _run_macro_matches_the_view(old)
    assert _through_python(old) == {k: json.loads(t) for k, t in written.items()}
    shows = _shows(old, sorted(written))
    assert [json.loads(s)["checkpoint"]["metadata"] for s in shows] == [
        json.loads(written[k]) for k in sorted(written)
    ]


def test_documents_that_look_like_stubs_or_cannot_be_cut_are_read_as_written(
    tmp_path: Path,
) -> None:
    """A source's own document may name the stub's type, or be a large document the cut
    does not reproduce (spaces): each is read back exactly as it was written."""
    message = {"id": "m", "content": f"{metadata_split.MARK} " * 40}
    fake = {"__type__": metadata_split.MARK, "hash": "0" * 32}
    docs = [
        {"internal_channels": fake},  # small: stays whole, looks like a stub
        {"status": "completed", "internal_channels": {"__previous__": [message] * 30, "x": fake}},
        {"internal_channels": fake, "notes": [message] * 30},  # large, with a fake stub
        {"internal_channels": {"__previous__": [message] * 30}},  # written with spaces below
    ]
    rows = native_rows(runs=1, steps=len(docs))
    texts = [orjson.dumps(d).decode() for d in docs]
    texts[3] = json.dumps(docs[3])  # not the compact JSON the cut reproduces
    for row, text in zip(rows, texts, strict=True):
        row["metadata"] = text
    source = write_native_sqlite(tmp_path / "n.sqlite", rows)
    path = _store(tmp_path / "s.duckdb", source)
    with Store.open(path, read_only=True) as store:
        ids = {c.checkpoint_id: c.step_index for c in store.checkpoints("run-0")}
    assert {ids[c]: t for (_, c), t in _documents(path).items()} == dict(enumerate(texts))
    assert {ids[c]: d for (_, c), d in _through_python(path).items()} == {
        i: json.loads(t) for i, t in enumerate(texts)
    }
    split = sorted(ids[c] for (_, c), t in _raw(path).items() if t != texts[ids[c]])
    assert split == [1, 2] and _stubs_match_split_rows(path) == 2


def test_a_document_orjson_cannot_write_back_is_kept_whole() -> None:
    """The import refuses documents nested past 200 levels, but a store migrated from an
    older one may hold one: orjson reads 1,024 levels and writes 254, so a stub that keeps
    such a key cannot be written, and the document stays whole instead of failing the
    migration."""
    deep: Any = "end"
    for _ in range(300):
        deep = {"k": deep}
    moved = {"__previous__": ["x" * 300] * 20}
    text = json.dumps({"internal_channels": moved, "notes": deep}, separators=(",", ":"))
    assert metadata_split._stub(text) is None
    shallow = json.dumps({"internal_channels": {"__previous__": ["x" * 300] * 20}})
    assert metadata_split.stub_hash(metadata_split._stub(shallow)) == text_hash(shallow)
