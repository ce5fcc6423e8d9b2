"""Sandboxed replay of a run from one of its checkpoints, compared with the original.

Notebook use (``debugger.replay`` is this package, and calling it runs a replay)::

    from debugger.replay import replay
    report = replay("stepscope.duckdb", "crash-at-step-7", 6,
                    "sample_checkpoints.refund_desk.agent:fixed_agent")
    report.first_divergence, report.duplicate_writes

    import debugger
    debugger.replay("stepscope.duckdb", "crash-at-step-7", 6, "...:fixed_agent")  # the same

The engine is imported on first use: the sandbox child imports this package too, and must
start without loading the store (DuckDB, pandas).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debugger.replay.engine import Progress, ReplaySetupError, replay
    from debugger.replay.report import ReplayReport

__all__ = ["Progress", "ReplayReport", "ReplaySetupError", "replay"]

_LAZY = {
    "replay": "debugger.replay.engine",
    "Progress": "debugger.replay.engine",
    "ReplaySetupError": "debugger.replay.engine",
    "ReplayReport": "debugger.replay.report",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


class _CallablePackage(types.ModuleType):
    """Lets ``debugger.replay(...)`` run a replay while ``debugger.replay`` stays a package."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from debugger.replay.engine import replay as run

        return run(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
