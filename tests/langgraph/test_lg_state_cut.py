"""The LangGraph walk cuts each large state as it writes it; the store takes that cut.

The store's own cut (:func:`debugger.store.state_parts.split`) parses a state again to find
its parts. The walk writes each state's text from its messages' text, so it hands the store
the cut at the places it put them (``debugger.contract.GIVEN_STATE_SPLIT``). These tests
hold that hand-off to the store's result: the same text, and for a real LangGraph database
on both savers the same stored skeletons, parts (in the same order), rows and ``show --json``
as when the store cuts every state itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from debugger.cli import main
from debugger.store import Store, state_parts
from debugger.store.state_parts import PART_MAX_CHARS, join, split
from loaders import import_source
from loaders.langgraph import flavour
from loaders.langgraph.decode import to_json
from loaders.langgraph.map import MessageMemo
from tests.langgraph import react_heavy
from tests.langgraph.lg_import import SAVERS, open_saver

PAD = "lorem ipsum dolor sit amet " * 12


def _msg(i: int, text: str = PAD, kind: str = "ai") -> dict[str, Any]:
    cls = "AIMessage" if kind == "ai" else "ToolMessage"
    return {"__type__": f"pydantic:langchain_core.messages.{kind}.{cls}", "id": f"m{i}",
            "type": kind, "content": f"{i} {text}"}  # fmt: skip


def _check(memo: MessageMemo, state: dict[str, Any]) -> bool:
    """Scan ``state``; its text is ``to_json``'s, and a cut is the store's. True: cut."""
    scan = memo.scan(state)
    text = to_json(state)
    assert scan.json == text
    if scan.cut is None:
        return False
    c = scan.cut
    parts = {h: p.decode() for h, p in zip(c.refs, c.parts, strict=True)}
    assert join(c.skeleton.decode(), c.cuts, c.refs, parts) == text.decode()
    assert split(text.decode()) == state_parts.Split(c.skeleton.decode(), c.cuts, c.refs, parts)
    return True


def test_a_cut_made_while_writing_is_the_stores_cut() -> None:
    memo = MessageMemo(flavour.CUT_RULE)
    msgs = [_msg(i, kind="ai" if i % 2 else "tool") for i in range(30)]
    assert not _check(memo, {"messages": msgs[:3]})  # short of SPLIT_MIN_BYTES
    grown: list[Any] = msgs[:3]
    for i in range(3, 30, 3):  # a message list that grows, sharing the objects
        grown = grown + msgs[i : i + 3]
        assert _check(memo, {"messages": grown, "remaining_steps": 24}) == (i >= 9)
    # trimmed (RemoveMessage), then an edit in the middle: read again from the start
    assert _check(memo, {"messages": grown[5:], "remaining_steps": 3})
    assert _check(memo, {"messages": [*grown[:4], _msg(99), *grown[5:]]})
    # non-ASCII before, inside and between the parts: offsets count characters
    uni = [_msg(i, "日本語 ü 🚀 👩‍👩‍👧 e\u0301 \u2028 " * 20) for i in range(12)]
    assert _check(memo, {"après 🚀": "ü" * 5, "messages": uni, "ключ": [1, "é"]})
    # short messages stay in the skeleton; other items of a list are cut by the same rule
    mixed = [_msg(0, "hi"), {"doc": "x" * 400}, "y" * 300, [1, 2], None, *msgs[:8]]
    assert _check(memo, {"messages": mixed, "other": [], "n": 1.5})
    # two lists, a message as a plain value
    assert _check(memo, {"a": msgs[:6], "b": msgs[3:12], "last": msgs[0]})


def test_what_the_walk_does_not_cut_the_store_still_does() -> None:
    """A value that is not a top-level list may hold parts, and an element the rule opens
    up holds them deeper: the walk hands no cut over, the text is still exact, and the
    store's cut finds the parts."""
    memo = MessageMemo(flavour.CUT_RULE)
    msgs = [_msg(i) for i in range(20)]
    for state in (
        {"messages": msgs[:2], "nested": {"docs": msgs[2:20]}},
        {"messages": [*msgs[:10], _msg(50, "z" * PART_MAX_CHARS)]},
    ):
        assert not _check(memo, state)
        assert split(to_json(state).decode()) is not None
    # small states and states without a part are not cut
    assert not _check(memo, {"messages": msgs[:3]})
    assert not _check(memo, {"messages": [_msg(i, "hi") for i in range(400)]})
    # keys that are not strings: to_json's own text, no cut
    assert not _check(memo, {1: msgs, "b": None})  # type: ignore[dict-item]
    # without a rule (the replay reads messages this way): the text alone
    assert MessageMemo().scan({"messages": msgs}).cut is None


def _stored(path: Path) -> dict[str, list[Any]]:
    with Store.open(path) as store:
        return {
            "split": store.sql("SELECT * FROM split_states ORDER BY ckpt_key"),
            "parts": store.sql("SELECT part_hash, part FROM state_parts ORDER BY rowid"),
            "rows": store.sql(
                "SELECT * EXCLUDE (source_id) FROM checkpoint_rows ORDER BY ckpt_key"
            ),
            "large": store.sql("SELECT * FROM large_states ORDER BY ckpt_key"),
            "steps": store.sql("SELECT run_id, step_index FROM checkpoint_rows ORDER BY ckpt_key"),
        }


def _import_counting(
    source: str, path: Path, monkeypatch: pytest.MonkeyPatch, walk_cuts: bool
) -> int:
    """Import ``source`` into a new store; returns how many states the store parsed to cut."""
    calls = [0]
    real: Callable[..., Any] = state_parts.split

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return real(*args)

    with monkeypatch.context() as m:
        m.setattr(state_parts, "split", counted)
        if not walk_cuts:
            m.setattr(flavour, "CUT_RULE", None)
        with Store.open(path) as store:
            report = import_source(store, source)
            assert report.total.quarantined == 0
    return calls[0]


@pytest.fixture(params=SAVERS)
def heavy(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A message-heavy ReAct agent's database (issue 16's benchmark, smaller)."""
    source, opened = open_saver(request, tmp_path, "lg_cut")
    with opened as saver:
        react_heavy.build(saver, threads=2, turns=25)
    return source


def test_the_walks_cut_stores_what_the_stores_own_cut_stores(
    heavy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = heavy
    given, own = tmp_path / "given.duckdb", tmp_path / "own.duckdb"
    assert _import_counting(source, given, monkeypatch, walk_cuts=True) == 0
    assert _import_counting(source, own, monkeypatch, walk_cuts=False) > 40
    a, b = _stored(given), _stored(own)
    assert len(a["split"]) > 40 and len(a["parts"]) > 40
    assert a == b
    # every state read back is the same text, and show --json says the same
    with Store.open(given) as sg, Store.open(own) as so:
        for run, step in a["steps"]:
            assert sg.checkpoint_text(run, step) == so.checkpoint_text(run, step)
    for run, step in a["steps"][::7]:
        args = ["show", run, "--step", str(step), "--json", "--store"]
        shown = [CliRunner().invoke(main, [*args, str(path)]) for path in (given, own)]
        assert shown[0].exit_code == 0, shown[0].output
        assert json.loads(shown[0].output) == json.loads(shown[1].output)
    # a second import of the same source adds nothing and changes nothing
    with Store.open(given) as store:
        again = import_source(store, source)
        assert again.total.imported == 0 and again.total.updated == 0
    assert _stored(given) == a
