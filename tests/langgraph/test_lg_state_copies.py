"""A ``Send`` that carries the whole state (the prebuilt ReAct agent's tool calls) is stored as
a reference to the checkpoint's working state, not as a second copy of every message.

Checked against LangGraph's own view: where the reference stands, the Send that
``get_state_history()`` shows carries exactly the messages of that checkpoint's values.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.langgraph.map import same_as_state
from tests.langgraph import react_heavy
from tests.langgraph.lg_import import SAVERS, open_saver
from tests.langgraph.patterns_model import cfg


@pytest.fixture(params=SAVERS)
def imported(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[list[Any], Path]]:
    """One small ReAct thread (4 rounds) written by each saver: the saver's own checkpoint
    tuples, and the store it was imported into."""
    source, opened = open_saver(request, tmp_path, "lgcopies")
    with opened as saver:
        (thread,) = react_heavy.build(saver, threads=1, turns=4, pad=40)
        tuples = list(saver.list(cfg(thread)))
        store = tmp_path / "s.duckdb"
        with Store.open(store) as st:
            import_source(st, source, ImportOptions())
    yield tuples, store


def test_a_send_carrying_the_state_is_a_reference(imported: tuple[list[Any], Path]) -> None:
    tuples, store = imported
    with Store.open(store, read_only=True) as st:
        stored = {c.checkpoint_id: c for c in st.checkpoints("react-heavy-0")}
    referenced = 0
    for tup in tuples:
        values = tup.checkpoint["channel_values"]
        ck = stored[tup.config["configurable"]["checkpoint_id"]]
        sends = ck.metadata["internal_channels"].get("__pregel_tasks") or []
        assert len(sends) == len(values.get("__pregel_tasks") or [])
        for send, lg_send in zip(sends, values.get("__pregel_tasks") or [], strict=True):
            # the reference stands where LangGraph's Send holds the checkpoint's messages
            assert lg_send.arg["state"]["messages"] == values["messages"]
            assert send["arg"]["state"]["messages"] == same_as_state("messages")
            assert (
                send["arg"]["state"]["remaining_steps"] == lg_send.arg["state"]["remaining_steps"]
            )
            assert send["arg"]["tool_call"] == lg_send.arg["tool_call"]
            assert [m["id"] for m in ck.working_state["messages"]] == [
                m.id for m in values["messages"]
            ]
            referenced += 1
    assert referenced == 3  # a tool call in every round but the last
