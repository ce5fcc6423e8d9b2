"""The child of a graph replay: ``python -m debugger.replay.graph.child --input-fd N
--protocol-fd N --log-fd N --isolation kernel|hooks`` (the ``Sandbox.module`` of a replay
that names a graph), started exactly like a native agent's child and in the same sandbox.

It shares the native child's start (:func:`debugger.replay.child.open_child`: the document,
the log, the in-process hooks, ``hello``), then imports the mocks module and the graph
(``MODULE:ATTR`` on an in-memory saver), installs the model and tool interceptors, and
restores the starting checkpoint; a failure there is a ``setup_error`` (``what``: ``mocks``,
``graph`` or ``restore``). Then ``ready``, the ``step`` messages, and ``end``, in the
protocol's ``graph`` schemas (:mod:`debugger.replay.protocol`): data only, judged by the
parent.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from debugger.errors import StepscopeError
from debugger.replay.child import open_child
from debugger.replay.protocol import Writer, clip
from debugger.replay.sandbox import load_mocks

_HINTS = {
    "mocks": "pass an importable module name with --mocks",
    "graph": "name a compiled graph, a StateGraph builder or a function returning one, "
    "importable from PYTHONPATH",
    "restore": "replay with the graph that wrote the run (its nodes, edges and state types)",
}


def _setup(data: dict[str, Any], out: Writer) -> tuple[Any, Any, Any] | None:
    from debugger.replay.graph.load import load_graph
    from debugger.replay.graph.restore import replay_saver, restore
    from debugger.replay.graph.runner import build_context

    g = data["graph"]
    what = "mocks"
    try:
        mocks = load_mocks(data.get("mocks"))
        what = "graph"
        ctx = build_context(data, mocks)
        saver = replay_saver()
        graph = load_graph(str(data["agent"]), saver)
        what = "restore"
        config = restore(graph, saver, str(g["thread_id"]), g["start"])
    except Exception as e:
        message = f"{type(e).__name__}: {e.message if isinstance(e, StepscopeError) else e}"
        out.send("setup_error", what=what, message=clip(message), hint=_HINTS[what],
                 traceback=clip(traceback.format_exc(limit=-4)))  # fmt: skip
        return None
    out.send("ready", state=data["start"]["state"],
             schema_version=data["start"].get("schema_version"), migrated_from=None,
             originals=None)  # fmt: skip
    return graph, ctx, config


def main(argv: list[str]) -> int:
    """Replay the graph whose document arrives on ``--input-fd``."""
    from debugger.replay.graph.restore import pinned_ids
    from debugger.replay.graph.runner import GraphRunner

    data, out, runners = open_child(argv)
    setup = _setup(data, out)
    if setup is None:
        return 3
    graph, ctx, config = setup
    runner = GraphRunner(data, out, graph, ctx, config)
    runners.append(runner)
    ids = {(str(ns), int(step)): str(cid) for ns, step, cid in data["graph"].get("ids") or []}
    with pinned_ids(ids):
        why, step, detail = runner.run()
    out.send("end", why=why, step_index=step, detail=None if detail is None else clip(detail))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
