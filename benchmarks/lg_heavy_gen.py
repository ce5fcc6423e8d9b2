"""A message-heavy LangGraph database of any size, written through the real saver.

Running a graph (``tests/langgraph/react_heavy.py``) writes ~150 checkpoints a second here;
a store benchmark wants far more. So this writes the checkpoints a ReAct agent's thread
leaves, directly through ``SqliteSaver.put`` (LangGraph's own serde and tables): each thread
starts from a human message and every round adds two checkpoints, one after the AI message
with its tool call, one after the tool's answer of ``PAD`` characters, so a thread's message
list grows to ``2 * ROUNDS`` messages (~100 KB of state), as in ``react_heavy``.

``python benchmarks/lg_heavy_gen.py OUT.sqlite --checkpoints N``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROUNDS = 99
PAD = 650
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def _ai(thread: int, i: int) -> Any:
    from langchain_core.messages import AIMessage

    tokens = 200 + 10 * i
    return AIMessage(
        content=f"step {i}",
        id=f"t{thread}-ai-{i}",
        tool_calls=[{"name": "search", "args": {"q": f"t{thread} q{i}"}, "id": f"t{thread}-c{i}"}],
        usage_metadata={"input_tokens": tokens - tokens // 5, "output_tokens": tokens // 5,
                        "total_tokens": tokens},
    )  # fmt: skip


def _tool(thread: int, i: int) -> Any:
    from langchain_core.messages import ToolMessage

    text = f"result for t{thread} q{i}: " + "lorem ipsum dolor sit amet " * (PAD // 27 + 1)
    return ToolMessage(content=text[:PAD], name="search", tool_call_id=f"t{thread}-c{i}",
                       id=f"t{thread}-tool-{i}")  # fmt: skip


def write(path: Path, checkpoints: int) -> int:
    """Write about ``checkpoints`` checkpoints (whole threads); returns how many."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.sqlite import SqliteSaver

    path.unlink(missing_ok=True)
    con = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(con)
    per_thread = 1 + 2 * ROUNDS
    threads = max(1, round(checkpoints / per_thread))
    written = 0
    for t in range(threads):
        cfg: Any = {"configurable": {"thread_id": f"heavy-{t:06d}", "checkpoint_ns": ""}}
        messages: list[Any] = [HumanMessage(content="research this", id=f"t{t}-h")]
        at = START + timedelta(minutes=t)
        for step in range(per_thread):
            if step:
                i = (step - 1) // 2
                messages = [*messages, _ai(t, i) if step % 2 else _tool(t, i)]
            ckpt = empty_checkpoint()
            ckpt["id"] = str(uuid6(clock_seq=step))
            ckpt["ts"] = (at + timedelta(seconds=step)).isoformat()
            ckpt["channel_values"] = {"messages": messages}
            ckpt["channel_versions"] = {"messages": step + 1}
            meta: Any = {"source": "loop" if step else "input", "step": step, "parents": {}}
            cfg = saver.put(cfg, ckpt, meta, {"messages": step + 1})
            written += 1
        con.commit()
    con.close()
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line: the output file and the number of checkpoints."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--checkpoints", type=int, default=2_000)
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    n = write(a.out, a.checkpoints)
    print(f"{n:,} checkpoints in {time.perf_counter() - t0:.0f} s, "
          f"{a.out.stat().st_size / 2**20:,.0f} MiB", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
