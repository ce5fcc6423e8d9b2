"""A graph replay's child is judged like an agent's: its protocol is as strict, and the
parent looks every call up itself in the recorded world (``GraphWorld``), so a forged answer,
a call claimed from the tape that the tape does not hold, or budgets the states do not bear
out end the replay as ``sandbox_violation``. Also: the child imports no DuckDB or Arrow."""

from __future__ import annotations

import copy
import io
import subprocess
import sys
from typing import Any

import orjson
import pytest

from debugger.replay import engine
from debugger.replay.judge import judge
from debugger.replay.process import ChildResult
from debugger.replay.protocol import ProtocolError, Reader
from tests.conftest import REPO
from tests.replay.graph.conftest import Written

GRAPHS = "tests.replay.graph.graphs"

Captured = tuple[dict[str, Any], ChildResult]


def _capture(
    lg: Written, monkeypatch: pytest.MonkeyPatch, thread: str, step: int, factory: str
) -> Captured:
    """The document and the child's messages of a real replay, as the judge got them."""
    seen: list[Captured] = []

    def capture(doc: dict[str, Any], child: ChildResult, timeout_s: float) -> Any:
        seen.append((copy.deepcopy(doc), copy.deepcopy(child)))
        return judge(doc, child, timeout_s)

    monkeypatch.setattr(engine, "judge", capture)
    report = engine.replay(lg.store, thread, step, graph=f"{GRAPHS}:{factory}")
    assert report.outcome == "completed", report.reason
    [(doc, child)] = seen
    return doc, child


@pytest.fixture
def honest(lg: Written, monkeypatch: pytest.MonkeyPatch) -> Captured:
    """A real replay of the ReAct thread."""
    return _capture(lg, monkeypatch, "react", 2, "react_graph")


def _tape_call(child: ChildResult, kind: str) -> dict[str, Any]:
    return next(c for s in child.steps for c in s["calls"]
                if c["kind"] == kind and c["source"] == "tape")  # fmt: skip


def test_an_honest_graph_child_is_judged_by_the_parents_own_lookup(honest: Captured) -> None:
    doc, child = honest
    verdict = judge(doc, child, 60)
    assert (verdict.outcome, verdict.reason) == ("completed", "the graph finished at step 7")
    calls = [c for s in verdict.steps for c in s["calls"]]
    assert calls and {c["status"] for c in calls} == {"matched"}
    assert all(c["tape_seq"] is not None for c in calls)
    assert all(s["state_equal"] for s in verdict.steps)


def _forge_answer(child: ChildResult) -> None:
    call = _tape_call(child, "model")
    call["response"] = {**call["response"], "content": "FORGED: refund approved"}


def _forge_request(child: ChildResult) -> None:
    _tape_call(child, "tool")["request"] = {"order_id": "not-recorded"}


def _forge_tokens(child: ChildResult) -> None:
    child.steps[0]["budgets"]["tokens_spent"] += 1000


def _forge_repeat(child: ChildResult) -> None:
    step = child.steps[0]
    step["calls"].append({**step["calls"][0], "seq": 999})  # the same answer twice, no resume


@pytest.mark.parametrize(
    ("forge", "words"),
    [
        (_forge_answer, "an answer the tape never gave"),
        (_forge_request, "the tape disagrees"),
        (_forge_tokens, "token budget"),
        (_forge_repeat, "the tape disagrees"),
    ],
)
def test_claims_of_a_graph_child_the_tape_does_not_bear_out_are_a_violation(
    honest: Captured, forge: Any, words: str
) -> None:
    doc, child = honest
    forge(child)
    verdict = judge(doc, child, 60)
    assert verdict.outcome == "sandbox_violation", verdict.reason
    assert words in verdict.reason and verdict.steps == []


def test_a_subgraphs_calls_are_looked_up_on_its_namespaces_tape(
    lg: Written, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, child = _capture(lg, monkeypatch, "private", -1, "private_graph")
    inner = [c for s in child.steps for c in s["calls"] if c["ns"]]
    assert inner and judge(doc, child, 60).outcome == "completed"
    inner[0].update(ns="", ns_step=None)  # claimed from the root's tape, which lacks it
    verdict = judge(doc, child, 60)
    assert verdict.outcome == "sandbox_violation" and "the tape disagrees" in verdict.reason


def test_a_state_the_child_changed_is_a_divergence_the_parent_finds(honest: Captured) -> None:
    doc, child = honest
    child.steps[-1]["state"]["messages"][-1]["content"] = "something else"
    verdict = judge(doc, child, 60)
    assert verdict.steps[-1]["state_equal"] is False
    assert [d["kind"] for d in verdict.steps[-1]["divergences"]] == ["state"]


def _read(protocol: str, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    raw = b"".join(orjson.dumps(m) + b"\n" for m in messages)
    return list(Reader(io.BytesIO(raw), protocol))


HELLO = {"type": "hello", "pid": 2}
READY = {"type": "ready", "state": {}, "schema_version": None, "migrated_from": None,
         "originals": None}  # fmt: skip
CALL = {"step_index": 1, "seq": 0, "kind": "model", "name": "m", "request": {"messages": []},
        "idempotency_key": None, "is_write": False, "source": "tape", "response": {},
        "error": None}  # fmt: skip
PLACE = {"ns": "", "ns_step": None, "push": None, "resumes": 0}


def _step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"type": "step", "step_index": 1, "partial": False, "state": {},
            "budgets": {"steps_spent": 1, "tokens_spent": 0, "wall_clock_ms": 0},
            "calls": list(calls), "pending_effects": [], "seconds": 0.1,
            "error": None}  # fmt: skip


def test_the_graph_protocol_is_as_strict_as_the_agents() -> None:
    assert len(_read("graph", HELLO, READY, _step({**CALL, **PLACE}))) == 3
    refused = [
        ("graph", _step(CALL)),  # a graph call must say where it was made
        ("graph", _step({**CALL, **PLACE, "resumes": "0"})),
        ("graph", _step({**CALL, **PLACE, "verdict": "ok"})),
        ("agent", _step({**CALL, **PLACE})),  # an agent's call says nothing more
    ]
    for protocol, step in refused:
        with pytest.raises(ProtocolError, match="does not match its schema"):
            _read(protocol, HELLO, READY, step)
    restore = {"type": "setup_error", "what": "restore", "message": "m", "hint": "h",
               "traceback": "t"}  # fmt: skip
    assert _read("graph", HELLO, restore)[-1]["what"] == "restore"
    with pytest.raises(ProtocolError):
        _read("agent", HELLO, restore)


def test_the_graph_child_imports_no_duckdb_or_arrow() -> None:
    code = (
        "import sys, debugger.replay.graph.child, debugger.replay.graph.runner, "
        "debugger.replay.graph.restore, debugger.replay.graph.load; "
        "print(sorted(m for m in ('duckdb', 'pyarrow', 'debugger.store') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"
