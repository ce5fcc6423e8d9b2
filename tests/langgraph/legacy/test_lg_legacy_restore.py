"""A checkpoint an older LangGraph wrote, restored for a replay in today's LangGraph, is what
today's LangGraph makes of the same database.

The replay runs the application's graph with the LangGraph installed now, from a checkpoint
restored out of the store (:mod:`debugger.replay.graph.restore`). For a database LangGraph
0.2, 0.3, 0.4 or 0.6 wrote (``data/<version>/``), the reference is today's ``SqliteSaver``
reading a copy of that database with the same graph (it renames 0.2's channels and moves
the Sends of format ``v`` < 4 itself, given the graph): for every checkpoint of every
thread, the restored values and the nodes due next are the ones it reads, and at each head
the thread as it stands (its finished tasks' writes applied). A run of each version then
replays from the recording.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from debugger.replay import replay
from debugger.replay.graph.original import start_input
from debugger.replay.graph.restore import legacy_channels, replay_saver, restore
from debugger.replay.graph.revive import encode
from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph.legacy.generate import BUILDERS
from tests.langgraph.legacy.test_lg_legacy import HERE, VERSIONS
from tests.replay.graph.test_graph_restore import _new_ids_out


def _graphs() -> dict[str, Any]:
    """Today's graphs of the patterns, by thread (built on a throwaway saver)."""
    graphs: dict[str, Any] = {}
    for build in BUILDERS:
        graphs.update(build(InMemorySaver()))
    return graphs


@pytest.fixture(scope="module")
def graphs() -> dict[str, Any]:
    return _graphs()


@pytest.fixture
def today(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Path]]:
    """(version, today's SqliteSaver on a copy of that version's database, the store)."""
    version = request.param
    copy, store = tmp_path / "lg.sqlite", tmp_path / "s.duckdb"
    shutil.copy(HERE / "data" / version / "lg.sqlite", copy)
    with Store.open(store) as s:
        import_source(s, str(HERE / "data" / version / "lg.sqlite"), ImportOptions())
    con = sqlite3.connect(copy, check_same_thread=False)
    saver = SqliteSaver(con)
    saver.setup()  # adds the task_path column today's saver reads (on the copy)
    try:
        yield version, saver, store
    finally:
        con.close()


@pytest.mark.parametrize("today", VERSIONS, indirect=True)
def test_every_checkpoint_restores_as_langgraph_reads_it_today(
    today: tuple[str, Any, Path], graphs: dict[str, Any]
) -> None:
    check_restores(*today, graphs)


@pytest.mark.langgraph_legacy
@pytest.mark.postgres
@pytest.mark.parametrize("version", VERSIONS)
def test_an_older_versions_postgres_database_restores_as_langgraph_reads_it_today(
    version: str, tmp_path: Path, request: pytest.FixtureRequest, graphs: dict[str, Any]
) -> None:
    """The same through that version's PostgresSaver, where a checkpoint of format v < 4
    has its Sends as its parent's writes; today's PostgresSaver reads the database after."""
    from tests.langgraph.legacy.test_lg_legacy import _generate
    from tests.langgraph.patterns_model import postgres_saver

    url = request.getfixturevalue("pg_server").create_database("lglegacy_restore")
    _generate(version, tmp_path / "fresh", url)
    store = tmp_path / "s.duckdb"
    with Store.open(store) as s:
        import_source(s, url, ImportOptions())
    with postgres_saver(url) as saver:  # today's, on the older version's tables
        check_restores(version, saver, store, graphs)


def check_restores(version: str, saver: Any, store: Path, graphs: dict[str, Any]) -> None:
    """Every checkpoint of every pattern thread in ``store``, restored, is what today's
    LangGraph reads through ``saver`` (and each head as the thread stands)."""
    checked = 0
    with Store.open(store, read_only=True) as s:
        for thread, graph in graphs.items():
            on_db = graph.copy(update={"checkpointer": saver})
            for c in s.checkpoints(thread):
                at = {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": c.checkpoint_id}
                want = on_db.get_state({"configurable": at})
                if want.created_at is None:
                    continue  # a thread this version could not run (say.json's "cannot")
                mine_saver = replay_saver()
                mine = graph.copy(update={"checkpointer": mine_saver})
                got = mine.get_state(restore(mine, mine_saver, "replay", start_input(c)))
                where = f"{version} {thread} step {c.step_index}"
                assert sorted(got.next) == sorted(want.next), where
                assert got.values == want.values, where
                assert encode(got.values) == encode(want.values), where
                checked += 1
            # the head as the thread stands (finished tasks' writes applied): a resume's start
            head = on_db.get_state({"configurable": {"thread_id": thread}})
            if head.created_at is not None:
                assert c.checkpoint_id == head.config["configurable"]["checkpoint_id"]
                live = mine.get_state({"configurable": {"thread_id": "replay"}})
                assert sorted(live.next) == sorted(head.next), f"{version} {thread} head"
                known = {m.get("id") for m in (c.working_state or {}).get("messages") or []}
                assert _new_ids_out(encode(live.values), known) == _new_ids_out(
                    encode(head.values), known
                ), f"{version} {thread} head"
    assert checked >= 50


def test_langgraph_0_2_channels_are_renamed_and_start_their_nodes(graphs: dict[str, Any]) -> None:
    """``start:X``, ``branch:A:cond:X`` and a plain edge's node channel become
    ``branch:to:X`` and start ``X``; START's input, joins and unknown names stay."""
    graph = graphs["failed-step-tool"]  # model -> tools and model -> boom, plain edges
    internal = {"__start__": {"messages": []}, "start:model": "__start__",
                "branch:model:route:tools": "model", "model": "model",
                "join:a+b:c": ["a"], "gone:channel": 1}  # fmt: skip
    renamed, woken = legacy_channels(graph, internal)
    assert renamed == {"__start__": {"messages": []}, "branch:to:model": "__start__",
                       "branch:to:tools": "model", "branch:to:boom": "model",
                       "join:a+b:c": ["a"], "gone:channel": 1}  # fmt: skip
    assert woken == ["model", "tools", "boom"]
    # a name that looks like an edge into a node the graph does not have is left alone
    assert legacy_channels(graph, {"start:nowhere": 1}) == ({"start:nowhere": 1}, [])


@pytest.mark.parametrize("version", VERSIONS)
def test_an_older_versions_react_run_replays_from_the_recording(
    version: str, tmp_path: Path
) -> None:
    """The prebuilt ReAct agent's run, replayed today from its tool step (a ``Send`` in
    ``pending_sends`` for LangGraph 0.4, 0.2's channel names): every step as recorded."""
    store = tmp_path / "s.duckdb"
    with Store.open(store) as s:
        import_source(s, str(HERE / "data" / version / "lg.sqlite"), ImportOptions())
    report = replay(store, "react-clean", 1, graph="tests.replay.graph.graphs:react_graph")
    assert report.outcome == "completed", report.reason
    assert report.divergences == [] and report.violations == []
    assert [s.step_index for s in report.steps] == [2, 3]
    assert all(s.state_equal and s.calls == s.calls_from_tape == 1 for s in report.steps)


@pytest.mark.parametrize("version", ["0.2", "0.6"])
def test_an_older_versions_entrypoint_replays_from_its_input(version: str, tmp_path: Path) -> None:
    """The functional agent's input checkpoint names no node in the file (no task paths
    before LangGraph 1.0): the restore takes the node the input starts from the graph."""
    store = tmp_path / "s.duckdb"
    with Store.open(store) as s:
        import_source(s, str(HERE / "data" / version / "functional.sqlite"), ImportOptions())
        assert s.checkpoint("func-agent", -1).metadata["next"] == ["__start__"]
    graph = "tests.replay.graph.graphs:functional_react_graph"
    report = replay(store, "func-agent", -1, graph=graph)
    assert report.outcome == "completed", report.reason
    assert report.divergences == [] and report.violations == []
    [step] = report.steps
    assert step.step_index == 0 and step.state_equal and step.calls == step.calls_from_tape == 5
