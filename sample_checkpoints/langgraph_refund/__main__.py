"""``python -m sample_checkpoints.langgraph_refund [DIR]``: write the sample's databases.

Two threads, both through the real LangGraph and its SqliteSaver:

- ``refund-A-7``: the gateway takes the refund and times out; the tools node fails, the
  run stops with the refund call unanswered (its outcome unknown): 4 checkpoints;
- ``refund-B-2``: the same conversation, refunded and answered: 7 checkpoints.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from sample_checkpoints.langgraph_refund import graph as desk


def write(directory: Path) -> Path:
    """Write ``refund-graph.sqlite`` and ``payments.sqlite`` in ``directory`` (new files)."""
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "refund-graph.sqlite"
    for p in (db, directory / "payments.sqlite"):
        p.unlink(missing_ok=True)
    os.environ["REFUND_PAYMENTS"] = str(directory / "payments.sqlite")
    con = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = desk.build().compile(checkpointer=SqliteSaver(con))
        for order in ("A-7", "B-2"):
            desk.TIMEOUT_ON.clear()
            if order == "A-7":
                desk.TIMEOUT_ON.add(order)
            ask = HumanMessage(content=f"Refund order {order}, charged twice", id=f"ask-{order}")
            config = {"configurable": {"thread_id": f"refund-{order}"}}
            with contextlib.suppress(desk.GatewayTimeout):
                graph.invoke({"messages": [ask]}, config)
    finally:
        con.close()
        desk.TIMEOUT_ON.clear()
    return db


if __name__ == "__main__":
    out = write(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    print(f"wrote {out} and {out.with_name('payments.sqlite')}")
