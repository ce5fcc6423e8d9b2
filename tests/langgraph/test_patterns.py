"""The issue 16 pattern graphs really produce their pattern, on SqliteSaver and PostgresSaver.

Assertions are on LangGraph's own ``get_state`` / ``get_state_history`` only: they prove
the fixtures are real. What Stepscope makes of them is tested with the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.patterns_model import postgres_saver, sqlite_saver

Says = Callable[[Callable[[Any], dict[str, Any]]], dict[str, dict[str, Any]]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Says]:
    """Run a builder on a fresh database of each saver; returns ``says`` per thread."""

    def go(builder: Callable[[Any], dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if request.param == "sqlite":
            opened = sqlite_saver(tmp_path / "lg.sqlite")
        else:
            opened = postgres_saver(request.getfixturevalue("pg_server").create_database("lgp"))
        with opened as saver:
            return {t: P.says(g, t) for t, g in builder(saver).items()}

    yield go


def _tasks(head: dict[str, Any]) -> list[tuple[str, bool, list[Any]]]:
    return [(t["name"], t["error"] is not None, [i["value"] for i in t["interrupts"]])
            for t in head["tasks"]]  # fmt: skip


def _usage(head: dict[str, Any]) -> dict[str, int]:
    return {m["id"]: m["usage"]["total_tokens"] for m in head["messages"] if m["usage"]}


def test_static_breakpoints(run: Says) -> None:
    before = run(P.breakpoint_before)["bp-before"]["head"]
    assert before["next"] == ("b",) and _tasks(before) == [("b", False, [])]
    after = run(P.breakpoint_after)["bp-after"]["head"]
    assert after["next"] == ("c",) and after["step"] == 2


def test_two_questions_parked_on_the_second(run: Says) -> None:
    head = run(P.two_questions)["two-questions"]["head"]
    assert head["next"] == ("ask",)
    assert _tasks(head) == [("ask", False, [{"question": "confirm 42?"}])]


def test_parallel_questions_one_open(run: Says) -> None:
    head = run(P.parallel_questions)["parallel-questions"]["head"]
    assert head["next"] == ("right",)
    assert sorted(_tasks(head)) == [("left", False, []), ("right", False, [{"question": "right"}])]


def test_join_target_crash(run: Says) -> None:
    head = run(P.join_crash)["join-crash"]["head"]
    assert head["next"] == ("c",)
    assert head["tasks"][0]["error"] == "ValueError('c failed after the join')"


def test_retries(run: Says) -> None:
    threads = run(P.retried)
    assert threads["retry-ok"]["head"]["next"] == ()
    failed = threads["retry-failed"]["head"]
    assert _tasks(failed) == [("flaky", True, [])]
    assert "attempt 2" in failed["tasks"][0]["error"]


def test_recursion_limit_stops_without_a_write(run: Says) -> None:
    got = run(P.recursion)["recursion"]
    assert got["head"]["next"] == ("spin",) and got["head"]["step"] == 4
    assert _tasks(got["head"]) == [("spin", False, [])]


def test_subgraph_tokens(run: Says) -> None:
    head = run(T.subgraph_tokens)["subgraph-tokens"]["head"]
    assert _usage(head) == {"sub-ai-1": 100, "sub-ai-2": 200} and head["next"] == ()


def test_subgraph_private_tokens(run: Says) -> None:
    got = run(T.subgraph_private_tokens)["subgraph-private"]
    assert got["head"]["next"] == () and _usage(got["head"]) == {}
    assert all(not s["messages"] for s in got["history"])


def test_send_tokens(run: Says) -> None:
    head = run(T.send_tokens)["send-tokens"]["head"]
    assert _usage(head) == {"send-ai-a": 50, "send-ai-b": 60, "send-ai-c": 70}


def test_trimmed_messages(run: Says) -> None:
    got = run(T.trimmed)["trimmed"]
    assert _usage(got["head"]) == {"trim-ai-2": 200, "trim-ai-3": 300}
    most = max(sum(_usage(s).values()) for s in got["history"])
    assert most == 600


def test_react_clean(run: Says) -> None:
    head = run(T.react_clean)["react-clean"]["head"]
    assert head["next"] == () and _usage(head) == {"react-ai-1": 120, "react-ai-2": 180}
    assert [m["tool_call_id"] for m in head["messages"] if m["type"] == "tool"] == ["call-1"]


def test_react_keyed_crash(run: Says) -> None:
    got = run(T.react_keyed_crash)["react-keyed-crash"]
    assert got["head"]["next"] == ("tools",) and _tasks(got["head"]) == [("tools", True, [])]
    assert got["head"]["messages"][-1]["tool_calls"] == ["call-refund"]


def test_fork_edited_call_runs(run: Says) -> None:
    got = run(T.fork_edited_call)["fork-edited"]
    assert [s["source"] for s in got["history"]][:3] == ["loop", "loop", "update"]
    assert [m["tool_call_id"] for m in got["head"]["messages"] if m["type"] == "tool"] == ["call-f"]


def test_fork_edited_call_executes_the_edit(tmp_path: Path) -> None:
    with sqlite_saver(tmp_path / "lg.sqlite") as saver:
        graph = T.fork_edited_call(saver)["fork-edited"]
        msgs = graph.get_state({"configurable": {"thread_id": "fork-edited"}}).values["messages"]
    assert msgs[1].tool_calls[0]["args"] == {"order": "B-9"}
    assert msgs[2].content == "order B-9 shipped"


def test_tool_answered_in_failed_step(run: Says) -> None:
    head = run(T.tool_answered_in_failed_step)["failed-step-tool"]["head"]
    assert head["next"] == ("boom",)
    assert sorted(_tasks(head)) == [("boom", True, []), ("tools", False, [])]


def test_live_run_steps(tmp_path: Path) -> None:
    with sqlite_saver(tmp_path / "lg.sqlite") as saver:
        live = T.Live(saver)
        live.start()
        cfg = {"configurable": {"thread_id": "live"}}
        live.step()
        assert live.graph.get_state(cfg).metadata["step"] == 1
        live.step()
        assert live.graph.get_state(cfg).metadata["step"] == 2
        live.finish()
        head = P.says(live.graph, "live")["head"]
    assert live.error is not None and head["next"] == ("n3",)
    assert _tasks(head) == [("n3", True, [])]
