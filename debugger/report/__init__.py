"""The incident report: one self-contained, offline HTML file about a run (``stepscope
report``, the Timeline's button), and the incident facts the app's pages share with it.

- :func:`build_report`: the HTML document (imported on first use: it needs the audit and
  the diff, which the Runs page's module does not).
- :mod:`~debugger.report.incident`: why a run has its status, in words; where it stopped;
  a step attempted after its last checkpoint.
- :mod:`~debugger.report.split`: a split diff of two states (also the Diff page's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debugger.report.build import build_report


def __getattr__(name: str) -> Any:
    if name == "build_report":
        from debugger.report.build import build_report

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["build_report"]
