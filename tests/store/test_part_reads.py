"""A split state's parts are read by stretch of part numbers where they lie together, through
the index where not, and the state comes back exactly either way (``debugger.store.reads``)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from debugger.store import Store, reads
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.store.statements import noted

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
    with store:
        [(refs,)] = store.sql(
            "SELECT s.refs FROM split_states s JOIN checkpoint_rows c USING (ckpt_key) "
            "WHERE c.run_id = ? AND c.step_index = ?",
            [run_id, step],
        )
    return list(dict.fromkeys(refs))


def test_stretches_of_part_numbers() -> None:
    assert reads.stretches(list(range(10, 50))) == ([(10, 49)], [])
    # gaps up to STRETCH_GAP stay in one stretch; a few parts far away go by index
    nums = [*range(100, 130, 3), 5, 900, 901, *range(400, 380, -1)]
    found, rest = reads.stretches(nums)
    assert found == [(100, 127), (381, 400)] and rest == [5, 900, 901]
    assert reads.stretches([]) == ([], [])


def test_parts_together_are_read_by_stretch_and_scattered_ones_by_index(tmp_path: Path) -> None:
    old = _source(tmp_path / "a.sqlite", {"old": [_msgs("a", list(range(40)))] * 2})
    new = _source(
        tmp_path / "b.sqlite",
        {
            # the first 30 of the old run's messages (stored long before), then 30 of its own
            "shared": [_msgs("a", list(range(30))) + _msgs("b", list(range(30)))] * 2,
            # its own messages, referenced in the reverse of the order they were written
            "reversed": [_msgs("c", list(range(40))), _msgs("c", list(range(39, -1, -1)))],
            # every 25th of the filler's messages: scattered over the table
            "scattered": [_msgs("f", list(range(0, 400, 25)))],
        },
    )
    path = tmp_path / "s.duckdb"
    fill = {"fill": [_msgs("f", list(range(400)))]}
    with Store.open(path) as store:
        import_source(store, str(old))
        # other runs' parts, written between the old run's and the new ones
        import_source(store, str(_source(tmp_path / "f.sqlite", fill)))
        import_source(store, str(new))
    want = {**_texts(old), **_texts(new)}
    expected = {
        ("old", 1): ["stretch"],
        ("shared", 0): ["stretch"],  # two stretches, one statement
        ("reversed", 1): ["stretch"],
        ("scattered", 0): ["index"],
    }
    for (run_id, step), kinds in expected.items():
        found, rest = reads.stretches(_refs(Store.open(path, read_only=True), run_id, step))
        reads.clear_part_cache()
        with Store.open(path, read_only=True) as store, noted(store) as statements:
            assert store.checkpoint_text(run_id, step)[1] == want[(run_id, step)]
        parts = ["stretch" if "BETWEEN" in q else "index" for q in statements if "state_parts" in q]
        assert parts == kinds, (run_id, step, found, rest)
    with Store.open(path, read_only=True) as store:
        for (run_id, step), text in want.items():
            reads.clear_part_cache()
            assert store.checkpoint_text(run_id, step)[1] == text, (run_id, step)
            assert store.checkpoint(run_id, step).working_state == json.loads(text)
        # several states at once, parts from memory and from the store mixed
        for key in list(reads._part_cache)[::2]:
            reads._forget_parts(key[0], [key[1]])
        got = [c.working_state for c in store.checkpoints("reversed")]
        assert got == [json.loads(want[("reversed", s)]) for s in (0, 1)]
