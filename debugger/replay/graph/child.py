"""The child's side of a graph replay: set up, run, report (``debugger.replay.child`` calls
:func:`run_graph` when the replay names a graph instead of an agent).

Setup imports the mocks module and the graph (``MODULE:ATTR`` on an in-memory saver),
installs the model and tool interceptors, and restores the starting checkpoint; a failure
there is a ``setup_error`` event (``what``: ``mocks``, ``graph`` or ``restore``), as for
an agent that cannot be imported. Then ``ready``, the step events, and ``end``.
"""

from __future__ import annotations

import traceback
from typing import Any

from debugger.replay.sandbox import load_mocks


def _setup(data: dict[str, Any], events: Any) -> tuple[Any, Any, Any] | None:
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
        events.emit("setup_error", what=what, message=f"{type(e).__name__}: {e}",
                    hint=_HINTS[what], traceback=traceback.format_exc(limit=-4))  # fmt: skip
        return None
    events.emit("ready", state=data["start"]["state"],
                schema_version=data["start"].get("schema_version"), migrated_from=None)  # fmt: skip
    return graph, ctx, config


_HINTS = {
    "mocks": "pass an importable module name with --mocks",
    "graph": "name a compiled graph, a StateGraph builder or a function returning one, "
    "importable from PYTHONPATH",
    "restore": "replay with the graph that wrote the run (its nodes, edges and state types)",
}


def run_graph(data: dict[str, Any], events: Any, runners: list[Any]) -> int:
    """Replay the graph ``data`` describes; the child's exit status."""
    from debugger.replay.graph.restore import pinned_ids
    from debugger.replay.graph.runner import GraphRunner

    setup = _setup(data, events)
    if setup is None:
        return 3
    graph, ctx, config = setup
    runner = GraphRunner(data, events, graph, ctx, config)
    runners.append(runner)
    ids = {(str(ns), int(step)): str(cid) for ns, step, cid in data["graph"].get("ids") or []}
    with pinned_ids(ids):
        outcome, reason = runner.run()
    events.emit("end", outcome=outcome, reason=reason, step_index=runner.step,
                budgets=runner.budgets)  # fmt: skip
    return 0
