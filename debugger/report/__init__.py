"""The incident report: one self-contained, offline HTML file about a run (``stepscope
report``, the Timeline's button), and the incident facts the app's pages share with it.

- :func:`build_report`: the HTML document.
- :mod:`~debugger.report.incident`: why a run has its status, in words; where it stopped;
  a step attempted after its last checkpoint.
- :mod:`~debugger.report.split`: a split diff of two states (also the Diff page's).
"""

from __future__ import annotations

from debugger.report.build import build_report

__all__ = ["build_report"]
