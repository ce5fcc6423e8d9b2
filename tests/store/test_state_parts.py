"""Large states stored as a skeleton plus shared parts come back byte for byte.

The cut (:mod:`debugger.store.state_parts`) is attacked with states built to break it:
placeholder-like text, unicode, deep nesting, huge arrays, the same element at several
paths, text the cut cannot reproduce, hash collisions. Each goes through a real import into
a real store and is read back by every read path (point read, a run's checkpoints, the
audit's texts, the SQL view, ``show --json``) and compared with the source's text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from debugger.cli import main
from debugger.json_text import dumps, loads
from debugger.store import Store, state_parts, state_write
from debugger.store.state_parts import PART_MIN_CHARS, SPLIT_MIN_BYTES, join, split
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite

MSG = "lorem ipsum dolor sit amet " * 12  # one message's text: a part


def _messages(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "role": "ai" if i % 2 else "user", "content": MSG}
            for i in range(n)]  # fmt: skip


def _hostile() -> dict[str, str]:
    """State texts by name, each large enough to be cut, most of them with parts."""
    msgs = _messages(30)
    deep: Any = {"leaf": _messages(20)}
    for _ in range(90):  # 180 levels: under the import's limit of 200
        deep = {"d": [deep, MSG]}
    states: dict[str, Any] = {
        "messages": {"messages": msgs},
        # non-ASCII in the parts and in the skeleton around them (offsets count characters)
        "unicode": {
            "ключ 👩‍👩‍👧 e\u0301": "日本",
            "messages": [
                {"id": i, "content": "日本語 ü 🚀 👩‍👩‍👧 e\u0301 \u2028 \\u0000 " * 20}
                for i in range(20)
            ],
            "après 🚀": ["ü", *[{"c": "é" * 300, "i": i} for i in range(5)], "👩‍👩‍👧"],
        },
        "same-element-at-several-paths": {
            "a": msgs[:10],
            "b": {"c": msgs[:10]},
            "d": [msgs[:10], msgs[:10]],
        },
        # what a reader of a placeholder format would choke on, inside values and keys
        "placeholder-like": {
            "messages": msgs,
            "fake": [
                {"$ref": str(state_parts.part_hash(orjson.dumps(msgs[0]).decode()))},
                "\u0000\u0001{{part:0}}",
                "%s %d {0}",
            ]
            * 10,
            "{{part:0}}": ["[[[", "]]]", '","', "\\"],
        },
        "huge-array": {"items": [f"item {i} " + "x" * PART_MIN_CHARS for i in range(2_000)]},
        "big-element-opened": {"outer": [{"inner": _messages(300, "big")}]},
        "deep": deep,
        "strings-only": {"list": [MSG + str(i) for i in range(40)]},
        "top-level-array": _messages(30),
        "numbers": {"xs": [[1.5, -0.0, 1e-7, 12345678901234567] * 20 for _ in range(20)]},
    }
    texts = {name: orjson.dumps(v).decode() for name, v in states.items()}
    # text the cut cannot reproduce exactly: stored whole, still returned exactly
    texts["spaces"] = json.dumps({"messages": msgs}, indent=1)
    texts["nan"] = '{"messages": ' + orjson.dumps(msgs).decode() + ', "x": NaN}'
    texts["duplicate-keys"] = '{"a":1,"a":2,"m":' + orjson.dumps(msgs).decode() + "}"
    texts["escapes"] = '{"m":' + orjson.dumps(msgs).decode() + ',"e":"\\u00e9\\/"}'
    texts["big-int"] = '{"m":' + orjson.dumps(msgs).decode() + ',"n":123456789012345678901}'
    texts["float-form"] = '{"m":' + orjson.dumps(msgs).decode() + ',"f":1E5}'
    for name, text in texts.items():
        assert len(text.encode()) >= SPLIT_MIN_BYTES, name
    return texts


def test_split_and_join_give_back_every_hostile_text() -> None:
    cut_ones = set()
    for name, text in _hostile().items():
        cut = split(text)
        if cut is None:
            continue
        cut_ones.add(name)
        assert join(cut.skeleton, cut.cuts, cut.refs, cut.parts) == text, name
        assert len(cut.cuts) == len(cut.refs) and cut.cuts == sorted(cut.cuts)
        assert all(len(p) >= PART_MIN_CHARS for p in cut.parts.values())
    # the compact ones are cut; those whose text orjson would write otherwise are not
    assert {"messages", "unicode", "same-element-at-several-paths", "placeholder-like",
            "huge-array", "big-element-opened", "deep", "strings-only", "top-level-array",
            } <= cut_ones  # fmt: skip
    assert not cut_ones & {"spaces", "nan", "duplicate-keys", "escapes", "big-int", "float-form"}


def test_the_same_element_is_one_part_wherever_it_is() -> None:
    texts = _hostile()
    cut = split(texts["same-element-at-several-paths"])
    assert cut is not None
    # ten messages under "a" and "b.c"; under "d" each element is the list of the ten (one
    # part, twice)
    assert len(cut.parts) == 11 and len(cut.refs) == 22


def test_a_large_container_element_is_opened_so_its_own_elements_are_shared() -> None:
    cut = split(_hostile()["big-element-opened"])
    assert cut is not None and len(cut.parts) == 300


def test_small_states_and_states_without_parts_are_stored_whole() -> None:
    assert split(orjson.dumps({"m": _messages(2)}).decode()) is None  # under SPLIT_MIN_BYTES
    assert split(orjson.dumps({"s": "x" * 10_000}).decode()) is None  # no array
    assert split(orjson.dumps({"xs": list(range(3_000))}).decode()) is None  # small elements
    assert split("[" * 5000) is None  # not JSON


def test_two_parts_with_one_hash_are_never_confused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state_parts, "part_hash", lambda text: 7)
    assert split(_hostile()["messages"]) is None  # thirty texts, one hash: whole


def _rows(texts: dict[str, str]) -> list[dict[str, Any]]:
    rows = native_rows(runs=len(texts), steps=2)
    names = list(texts)
    for row in rows:
        run = int(row["run_id"].split("-")[1])
        row["run_id"] = f"run-{names[run]}"
        row["working_state"] = texts[names[run]]
    return rows


def _every_read(store: Store, run_id: str) -> list[str]:
    """The state of the run's step 0 through every read path, as text."""
    _, text = store.checkpoint_text(run_id, 0)
    out = [text, dumps(store.checkpoint(run_id, 0).working_state)]
    out.append(dumps(store.checkpoints(run_id)[0].working_state))
    out.append(str(store.audit_checkpoints(run_id)[1][0]))
    [(view,)] = store.sql(
        "SELECT CAST(working_state AS VARCHAR) FROM checkpoints "
        "WHERE run_id = ? AND step_index = 0",
        [run_id],
    )
    out.append(view)
    return out


def test_hostile_states_come_back_exactly_through_every_read(tmp_path: Path) -> None:
    texts = _hostile()
    src = write_native_sqlite(tmp_path / "h.sqlite", _rows(texts))
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(src))
        [(n_split,)] = store.sql("SELECT count(*) FROM split_states")
        assert n_split >= 2 * 9  # both steps of every compact state
        for name, text in texts.items():
            exact, parsed, in_run, audit, view = _every_read(store, f"run-{name}")
            assert exact == text == audit == view, name
            assert parsed == in_run == dumps(loads(text)), name
        # parts are stored once: both steps of every run and the repeats share them
        [(parts,)] = store.sql("SELECT count(*) FROM state_parts")
        [(distinct,)] = store.sql("SELECT count(DISTINCT part) FROM state_parts")
        assert parts == distinct
    # show --json is the same whichever way the state is stored
    result = CliRunner().invoke(main, ["show", "run-messages", "--step", "0", "--json",
                                      "--store", str(path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["checkpoint"]["working_state"] == orjson.loads(
        texts["messages"]
    )


@pytest.mark.parametrize("lookup", ["scan", "literal list"])
def test_a_part_colliding_with_a_stored_one_leaves_the_state_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lookup: str
) -> None:
    """Two texts under one hash, across imports: the later state is stored whole, whether
    the stored parts are found by a scan (few stored) or by a list of hashes (many)."""
    monkeypatch.setattr(state_write, "SCAN_ROWS_PER_HASH", 10**9 if lookup == "scan" else 0)
    first = {"a": orjson.dumps({"messages": _messages(20, "a")}).decode()}
    second = {"b": orjson.dumps({"messages": _messages(20, "b")}).decode()}
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        import_source(store, str(write_native_sqlite(tmp_path / "a.sqlite", _rows(first))))
        stored = store.sql("SELECT part_hash, part FROM state_parts")
        real = state_parts.part_hash
        taken = {part: h for h, part in stored}
        # every part of the second import gets the hash of a stored part with other text
        others = iter(sorted(taken.values()) * 10)
        monkeypatch.setattr(state_parts, "part_hash", lambda text: taken.get(text) or next(others))
        import_source(store, str(write_native_sqlite(tmp_path / "b.sqlite", _rows(second))))
        monkeypatch.setattr(state_parts, "part_hash", real)
        assert store.checkpoint_text("run-b", 0)[1] == second["b"]
        assert store.checkpoint_text("run-a", 1)[1] == first["a"]
        [(whole,)] = store.sql(
            "SELECT count(*) FROM checkpoint_rows WHERE run_id = 'run-b' "
            "AND working_state IS NOT NULL"
        )
        assert whole == 2


def test_a_wrong_part_in_memory_is_caught_by_the_state_hash(tmp_path: Path) -> None:
    """Parts read once stay in memory, by the store's file and their number; if one held
    another text (a store written under the same path since), the state hash tells, and
    the part is read from this store again."""
    from debugger.store import reads

    text = _hostile()["messages"]
    src = write_native_sqlite(tmp_path / "m.sqlite", _rows({"m": text}))
    reads.clear_part_cache()  # what other tests of this process read
    with Store.open(tmp_path / "s.duckdb") as store:
        import_source(store, str(src))
        assert store.checkpoint_text("run-m", 0)[1] == text  # its parts are in memory now
        poisoned = 0
        for h, part in list(reads._part_cache.items()):
            if "lorem" in part:
                reads._part_cache[h] = part.replace("lorem", "LOREM")
                poisoned += 1
        assert poisoned == 30
        assert store.checkpoint_text("run-m", 1)[1] == text
        assert dumps(store.checkpoints("run-m")[0].working_state) == dumps(loads(text))
        assert all("LOREM" not in p for p in reads._part_cache.values())


def test_a_new_store_under_the_same_path_is_not_read_from_memory(tmp_path: Path) -> None:
    """Two stores written one after the other at one path number their parts alike: the
    second's states come back as its own, not with the first's parts kept in memory."""
    path = tmp_path / "s.duckdb"
    texts = {}
    for word in ("first", "second"):
        msgs = [{"id": i, "content": f"{word} {i} " + "lorem ipsum " * 30} for i in range(12)]
        text = dumps({"messages": msgs})
        src = write_native_sqlite(tmp_path / f"{word}.sqlite", _rows({"m": text}))
        path.unlink(missing_ok=True)
        with Store.open(path) as store:
            import_source(store, str(src))
        with Store.open(path, read_only=True) as store:
            assert store.checkpoint_text("run-m", 0)[1] == text
            [(nums,)] = store.sql("SELECT refs FROM split_states LIMIT 1")
        texts[word] = (text, nums)
    assert texts["first"][1] == texts["second"][1]  # the same numbers, other parts
