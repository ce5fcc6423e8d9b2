"""Write a LangGraph database with an older LangGraph, and what that version's API says of it.

Run with a Python that has the older ``langgraph`` and ``langgraph-checkpoint-sqlite`` (not
Stepscope's own environment: see docs/langgraph.md, "Databases of older LangGraph
versions"), from the repository's root::

    /work/venvs/langgraph0.2/bin/python tests/langgraph/legacy/generate.py OUT_DIR [PG_URL]

It runs the pattern graphs of ``tests/langgraph/patterns.py`` and ``patterns_tokens.py`` (the
same code the current version's tests run) on a ``SqliteSaver`` writing ``OUT_DIR/lg.sqlite``
(or, given a PostgreSQL URL, on that version's ``PostgresSaver`` there), and writes
``OUT_DIR/says.json``: for each thread, what that version's ``get_state`` and
``get_state_history`` report (``patterns.says``), the versions of the packages, and the
patterns the version cannot run (``parallel_questions`` answers an interrupt by its id, which
LangGraph 0.4 introduced) with the error it gave. On SQLite it also runs the functional-API
scenarios of ``tests/langgraph/functional.py`` into ``OUT_DIR/functional.sqlite`` and writes
what ``get_state_history`` says of each thread (``expect.expected``) to
``OUT_DIR/functional.json``.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.langgraph import functional as F
from tests.langgraph import patterns as P
from tests.langgraph import patterns_tokens as T
from tests.langgraph.expect import expected
from tests.langgraph.patterns_model import postgres_saver, sqlite_saver

BUILDERS = (
    P.breakpoint_before, P.breakpoint_after, P.two_questions, P.parallel_questions,
    P.join_crash, P.retried, P.recursion, T.subgraph_tokens, T.subgraph_private_tokens,
    T.send_tokens, T.trimmed, T.react_clean, T.react_keyed_crash, T.fork_edited_call,
    T.tool_answered_in_failed_step,
)  # fmt: skip
"""The patterns of ``tests/langgraph/test_lg_status.py``, in its order."""
PACKAGES = ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core")


def generate(out: Path, pg_url: str | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "lg.sqlite").unlink(missing_ok=True)
    threads: dict[str, object] = {}
    cannot: dict[str, str] = {}
    opened = postgres_saver(pg_url) if pg_url else sqlite_saver(out / "lg.sqlite")
    packages = (*PACKAGES, "langgraph-checkpoint-postgres") if pg_url else PACKAGES
    with opened as saver:
        for build in BUILDERS:
            try:
                graphs = build(saver)
            except (AttributeError, TypeError, ImportError) as e:  # an API the version lacks
                cannot[build.__name__] = f"{type(e).__name__}: {e}"
                continue
            threads.update({t: P.says(g, t) for t, g in graphs.items()})
    doc = {"versions": {p: version(p) for p in packages}, "cannot": cannot, "threads": threads}
    (out / "says.json").write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    if not pg_url:
        generate_functional(out)


def generate_functional(out: Path) -> None:
    """The functional API's scenarios on a ``SqliteSaver`` (``functional.sqlite``), and each
    thread's history as that version's LangGraph reports it (``functional.json``)."""
    (out / "functional.sqlite").unlink(missing_ok=True)
    histories = {}
    with sqlite_saver(out / "functional.sqlite") as saver:
        for build in F.FUNCTIONAL_SCENARIOS:
            histories.update({t: expected(g, t) for t, g in build(saver).items()})
    doc = {"versions": {p: version(p) for p in PACKAGES}, "threads": histories}
    text = json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"
    (out / "functional.json").write_text(text)


if __name__ == "__main__":
    generate(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
