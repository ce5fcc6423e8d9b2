"""Replaying a LangGraph ReAct run, against running the same graph with ``graph.invoke``.

A prebuilt ReAct agent (``create_react_agent``) with a scripted chat model and one tool runs
for ``--steps`` supersteps (tool rounds, then a final answer) on LangGraph's SqliteSaver; the
database is imported into a fresh store. Then, in the same run, alternated:

- *invoke*: ``graph.invoke`` of the same agent with the same scripted model and the real tool,
  on LangGraph's InMemorySaver, outside any sandbox: the peer;
- *replay*: ``debugger.replay.replay(..., graph=...)`` from the input checkpoint (sandboxed
  child, the checkpoint restored, every model and tool call answered from the recording,
  each state encoded and compared, the replay stored as a run).

Per step, *in the loop* is a superstep inside the child as it reports it; *end to end* is
``(T(all steps) - T(0 steps)) / steps``, ``T(0)`` replaying from the last checkpoint (the
graph is done at once), which is also the *fixed cost* (process start, graph import,
restore, store reads, importing the replay). Medians of ``--repeat``.

    python benchmarks/graph_replay_bench.py            # a 40-step run, 3 repeats
    python benchmarks/graph_replay_bench.py --quick    # 10 steps, once
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.langgraph.patterns_model import ScriptedModel

GRAPH = "graph_replay_bench:replay_graph"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order} shipped"


def _script(rounds: int) -> list[AIMessage]:
    usage = {"input_tokens": 80, "output_tokens": 20, "total_tokens": 100}
    calls = [AIMessage(content="", id=f"ai-{i}", usage_metadata=usage,  # type: ignore[arg-type]
                       tool_calls=[{"name": "lookup", "args": {"order": f"A-{i}"},
                                    "id": f"call-{i}"}]) for i in range(rounds)]  # fmt: skip
    final = AIMessage(content="All shipped.", id=f"ai-{rounds}", usage_metadata=usage)  # type: ignore[arg-type]
    return [*calls, final]


def agent(rounds: int, checkpointer: Any) -> Any:
    """The ReAct agent with a fresh scripted model."""
    return create_react_agent(ScriptedModel(script=_script(rounds)), [lookup],
                              checkpointer=checkpointer)  # fmt: skip


def replay_graph() -> Any:
    """What the replay imports: the same agent (its model is never called in a replay)."""
    return create_react_agent(ScriptedModel(script=[]), [lookup])


def _input() -> dict[str, Any]:
    return {"messages": [HumanMessage(content="ship?", id="human-1")]}


def write_run(base: Path, rounds: int) -> Path:
    """The run on SqliteSaver, imported into ``base/store.duckdb``."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from debugger.store import Store
    from loaders import ImportOptions, import_source

    db = base / "react.sqlite"
    con = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = agent(rounds, SqliteSaver(con))
        graph.invoke(_input(), {"configurable": {"thread_id": "react"},
                                "recursion_limit": 4 * rounds + 10})  # fmt: skip
    finally:
        con.close()
    store = base / "store.duckdb"
    with Store.open(store) as s:
        import_source(s, str(db), ImportOptions())
    return store


def time_invoke(rounds: int) -> float:
    """Seconds of ``graph.invoke`` for the whole run, on InMemorySaver."""
    from langgraph.checkpoint.memory import InMemorySaver

    graph = agent(rounds, InMemorySaver())
    started = time.perf_counter()
    graph.invoke(_input(), {"configurable": {"thread_id": "t"}, "recursion_limit": 4 * rounds + 10})
    return time.perf_counter() - started


def time_replay(store: Path, from_step: int) -> tuple[float, list[float], str]:
    """Seconds of the whole replay, the in-loop seconds of each step, and the outcome."""
    from debugger.replay import replay

    started = time.perf_counter()
    report = replay(store, "react", from_step, graph=GRAPH, timeout_s=600)
    seconds = time.perf_counter() - started
    return seconds, [s.seconds or 0.0 for s in report.steps], report.outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="supersteps of the run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    steps, repeat = (10, 1) if args.quick else (args.steps, args.repeat)
    rounds = max(1, (steps - 2) // 2)  # a round is 2 supersteps; start and the answer 2 more
    with tempfile.TemporaryDirectory() as tmp:
        store = write_run(Path(tmp), rounds)
        total = 2 * rounds + 2
        invoke, whole, fixed, loop = [], [], [], []
        for _ in range(repeat):
            invoke.append(time_invoke(rounds))
            t_all, per_step, outcome = time_replay(store, -1)
            assert outcome == "completed" and len(per_step) == total, (outcome, len(per_step))
            whole.append(t_all)
            loop.append(statistics.median(per_step))
            t_none, _, _ = time_replay(store, total - 1)
            fixed.append(t_none)
    inv = statistics.median(invoke) / total * 1000
    in_loop = statistics.median(loop) * 1000
    end_to_end = (statistics.median(whole) - statistics.median(fixed)) / total * 1000
    print(f"{total} supersteps, medians of {repeat}\n")
    print(
        "| graph.invoke step ms | replay step, in the loop ms | ratio | replay step, end to end"
        " ms | fixed cost s | whole replay s |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {inv:.2f} | {in_loop:.2f} | {in_loop / inv:.1f}x | {end_to_end:.2f} | "
        f"{statistics.median(fixed):.2f} | {statistics.median(whole):.2f} |"
    )


if __name__ == "__main__":
    main()
