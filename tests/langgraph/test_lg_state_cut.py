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
from typing import Annotated, Any, TypedDict

import pytest
from click.testing import CliRunner
from langgraph.graph.message import add_messages

from debugger.cli import main
from debugger.store import Store, json_depth, state_parts
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
    assert c.depth == json_depth.depth(text)
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
    # the depth handed over is the text's, in a part or in the skeleton
    deep: Any = "leaf"
    for _ in range(json_depth.MAX_DEPTH + 10):
        deep = {"d": deep}
    assert _check(memo, {"messages": [*msgs[:12], {**_msg(40), "kwargs": deep}]})
    assert _check(memo, {"messages": msgs[:12], "deep": [[[1]]], "n": [deep]})
    # a window of the last messages (it loses items at its front, so it is read again each
    # time, from the pieces kept per message): the same message at every position
    window = [_msg(100 + i, kind="ai" if i % 3 else "tool") for i in range(40)]
    for end in range(12, 41, 4):
        assert _check(memo, {"messages": window[end - 12 : end], "step": end})


def test_what_the_walk_does_not_cut_the_store_still_does() -> None:
    """A value that is not a top-level list may hold parts, and an element the rule opens
    up holds them deeper: the walk hands no cut over, the text is still exact, and the
    store's cut finds the parts."""
    memo = MessageMemo(flavour.CUT_RULE)
    msgs = [_msg(i) for i in range(20)]
    big = _msg(50, "z" * PART_MAX_CHARS)
    for state in (
        {"messages": msgs[:2], "nested": {"docs": msgs[2:20]}},
        {"messages": [*msgs[:10], big]},
        {"messages": [*msgs[1:10], big]},  # read again: the message the rule opens, kept
        {"messages": [big, *msgs[:10]]},
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
    source: str, path: Path, monkeypatch: pytest.MonkeyPatch, walk_cuts: bool, bad: int = 0
) -> tuple[int, int]:
    """Import ``source`` into a new store (``bad`` checkpoints quarantined); returns how many
    states the store parsed to cut them, and how many texts it parsed for their depth."""
    calls = [0, 0]
    real_split: Callable[..., Any] = state_parts.split
    real_depth: Callable[..., Any] = json_depth.of_array

    def split_counted(*args: Any) -> Any:
        calls[0] += 1
        return real_split(*args)

    def depth_counted(texts: Any) -> Any:
        calls[1] += len(texts)
        return real_depth(texts)

    with monkeypatch.context() as m:
        m.setattr(state_parts, "split", split_counted)
        m.setattr(json_depth, "of_array", depth_counted)
        if not walk_cuts:
            m.setattr(flavour, "CUT_RULE", None)
        with Store.open(path) as store:
            report = import_source(store, source)
            assert report.tables["checkpoints"].quarantined == bad
    return calls[0], calls[1]


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
    # the store parses no state of the walk's to cut it or to measure its depth
    assert _import_counting(source, given, monkeypatch, walk_cuts=True) == (0, 0)
    parsed, measured = _import_counting(source, own, monkeypatch, walk_cuts=False)
    assert parsed > 40 and measured > 0
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


class _Chat(TypedDict):
    messages: Annotated[list[Any], add_messages]


@pytest.fixture(params=SAVERS)
def too_deep(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A graph whose answer nests deeper than the store takes, among long messages."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, StateGraph

    deep: Any = "leaf"
    for _ in range(json_depth.MAX_DEPTH + 30):
        deep = {"d": deep}

    def answer(_: _Chat) -> dict[str, Any]:
        return {"messages": [AIMessage(content="deep", id="deep", additional_kwargs=deep)]}

    source, opened = open_saver(request, tmp_path, "lg_deep")
    g: Any = StateGraph(_Chat)
    g.add_node("answer", answer)
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    with opened as saver:
        asked = [HumanMessage(content=f"{i} {PAD}", id=f"h{i}") for i in range(12)]
        config = {"configurable": {"thread_id": "t"}}
        g.compile(checkpointer=saver).invoke({"messages": asked}, config)
    return source


def test_a_state_too_deep_is_refused_by_the_depth_its_cut_hands_over(
    too_deep: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given, own = tmp_path / "given.duckdb", tmp_path / "own.duckdb"
    # the state's depth came with its cut (the model call's response on the tape is measured)
    measured = _import_counting(too_deep, given, monkeypatch, walk_cuts=True, bad=1)[1]
    assert measured < _import_counting(too_deep, own, monkeypatch, walk_cuts=False, bad=1)[1]
    for path in (given, own):
        with Store.open(path) as store:
            [(reason,)] = store.sql(
                "SELECT reason FROM quarantine WHERE source_table = 'checkpoints'"
            )
            assert reason == f"working_state is nested deeper than {json_depth.MAX_DEPTH} levels"
    assert _stored(given) == _stored(own)
