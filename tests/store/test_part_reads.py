"""A split state's parts are read by stretch of rows where they lie together, by hash where
not, and the state comes back exactly either way (``debugger.store.reads``)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from debugger.store import Store, reads
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite

MSG = "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 6


def _msgs(prefix: str, ids: list[int]) -> list[dict[str, str]]:
    return [{"id": f"{prefix}{i}", "content": f"{prefix}{i} {MSG}"} for i in ids]


def _source(path: Path, states: dict[str, list[list[dict[str, str]]]]) -> Path:
    """A native source: run ``name``'s step ``s`` holds ``states[name][s]`` as messages."""
    base = native_rows(runs=1, steps=1)[0]
    rows = []
    for name, steps in states.items():
        for s, msgs in enumerate(steps):
            state = orjson.dumps({"messages": msgs, "s": s}).decode()
            at = f"2026-11-01T10:00:{s:02d}+00:00"
            rows.append({**base, "run_id": name, "step_index": s, "created_at": at,
                         "working_state": state})  # fmt: skip
    return write_native_sqlite(path, rows)


def _texts(path: Path) -> dict[tuple[str, int], str]:
    import sqlite3

    con = sqlite3.connect(path)
    try:
        q = "SELECT run_id, step_index, working_state FROM checkpoints"
        return {(r, s): t for r, s, t in con.execute(q).fetchall()}
    finally:
        con.close()


def _refs(store: Store, run_id: str, step: int) -> list[int]:
    [(refs,)] = store.sql(
        "SELECT s.refs FROM split_states s JOIN checkpoint_rows c USING (ckpt_key) "
        "WHERE c.run_id = ? AND c.step_index = ?",
        [run_id, step],
    )
    return list(dict.fromkeys(refs))


def test_parts_together_are_read_by_stretch_and_scattered_ones_by_hash(tmp_path: Path) -> None:
    old = _source(tmp_path / "a.sqlite", {"old": [_msgs("a", list(range(40)))] * 2})
    new = _source(
        tmp_path / "b.sqlite",
        {
            # the first 30 of the old run's messages (stored long before), then 30 of its own
            "shared": [_msgs("a", list(range(30))) + _msgs("b", list(range(30)))] * 2,
            # its own messages, referenced in the reverse of the order they were written
            "reversed": [_msgs("c", list(range(40))), _msgs("c", list(range(39, -1, -1)))],
        },
    )
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(old))
        # other runs' parts, written between the old run's and the new ones
        fill = {"fill": [_msgs("f", list(range(400)))]}
        import_source(store, str(_source(tmp_path / "f.sqlite", fill)))
        import_source(store, str(new))
        con = store._con
        # the old run's parts lie together: all found in one stretch
        refs = _refs(store, "old", 1)
        assert len(reads._parts_by_range(con, refs)) == len(refs) == 40
        # shared with a run imported before, 400 rows between: not read by stretch
        assert reads._parts_by_range(con, _refs(store, "shared", 0)) == {}
        refs = _refs(store, "reversed", 1)
        assert len(reads._parts_by_range(con, refs)) == len(refs) == 40
        store.sql("CHECKPOINT")
        want = {**_texts(old), **_texts(new)}
        for (run_id, step), text in want.items():
            reads._forget_parts(list(reads._part_cache))
            assert store.checkpoint_text(run_id, step)[1] == text, (run_id, step)
            assert store.checkpoint(run_id, step).working_state == json.loads(text)
        # several states at once, parts from memory and from the store mixed
        reads._forget_parts(list(reads._part_cache)[::2])
        got = [c.working_state for c in store.checkpoints("reversed")]
        assert got == [json.loads(want[("reversed", s)]) for s in (0, 1)]
