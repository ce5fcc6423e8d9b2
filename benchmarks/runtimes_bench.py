"""Importing other runtimes' histories against reading the same data with the runtime's own API.

For each runtime, its committed test fixture (written by the real package,
tests/runtimes/<runtime>/data) is scaled up by copying it under new ids, then, alternated
within each round:

- ``stepscope``: ``loaders.import_source`` into a new on-disk store (decode, map, validate,
  insert, derive runs; the store closed);
- the runtime's own API, in the runtime's Python (a separate process, timed inside it):
  - ADK: ``DatabaseSessionService.list_sessions`` then ``get_session`` for every session
    (events parsed into ``Event`` objects, state merged);
  - Temporal: ``WorkflowHistory.from_json`` for every file (events parsed into protobuf);
  - OpenAI Agents: ``SQLiteSession(id, db).get_items()`` for every session;
  - pydantic-ai: every history file read and validated with ``ModelMessagesTypeAdapter``;
  - CrewAI: ``SQLiteFlowPersistence.load_state`` and ``load_pending_feedback`` for every
    flow (the API reads a flow's latest state only: it has no way to read the history).

The figure is events per second (an event is a checkpoint), except where the runtime's unit
differs from a checkpoint: session items (OpenAI Agents: a checkpoint is a turn of several
items), messages (pydantic-ai: a checkpoint is a model response and its requests), flows
(CrewAI). The runtimes' Pythons come from ``STEPSCOPE_<RUNTIME>_PYTHON`` (see each
runtime's docs page); a runtime without one is skipped. Medians of ``--repeat`` rounds (default 3).
Run ``python benchmarks/runtimes_bench.py`` (``--quick`` for a small run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from debugger.store import Store  # noqa: E402
from loaders import ImportOptions, import_source  # noqa: E402

DATA = HERE / "data"
FIXTURES = REPO / "tests" / "runtimes"

ADK_READ = """
import asyncio, json, sys, time
from google.adk.sessions import DatabaseSessionService
async def main():
    service = DatabaseSessionService("sqlite+aiosqlite:///" + sys.argv[1])
    start = time.perf_counter()
    listed = await service.list_sessions(app_name="refund_desk", user_id="u-42")
    events = 0
    for s in listed.sessions:
        got = await service.get_session(app_name=s.app_name, user_id=s.user_id, session_id=s.id)
        events += len(got.events)
    print(json.dumps({"seconds": time.perf_counter() - start, "events": events}))
    await service.close()
asyncio.run(main())
"""

TEMPORAL_READ = """
import json, sys, time
from pathlib import Path
from temporalio.client import WorkflowHistory
files = sorted(Path(sys.argv[1]).glob("*.json"))
start = time.perf_counter()
events = 0
for f in files:
    events += len(WorkflowHistory.from_json(f.stem, f.read_text()).events)
print(json.dumps({"seconds": time.perf_counter() - start, "events": events}))
"""


def scaled_adk(copies: int) -> Path:
    """The ADK fixture with every session copied ``copies`` times under new ids."""
    target = DATA / f"adk-x{copies}.sqlite"
    if target.exists():
        return target
    DATA.mkdir(exist_ok=True)
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(FIXTURES / "adk" / "data" / "adk.sqlite", tmp)
    con = sqlite3.connect(tmp)
    with con:
        sessions = con.execute("SELECT * FROM sessions").fetchall()
        events = con.execute("SELECT * FROM events").fetchall()
        for i in range(1, copies):
            con.executemany(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                [(s[0], s[1], f"{s[2]}-{i}", *s[3:]) for s in sessions],
            )
            con.executemany(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(f"{e[0]}-{i}", e[1], e[2], f"{e[3]}-{i}", *e[4:]) for e in events],
            )
    con.close()
    tmp.replace(target)
    return target


def scaled_temporal(copies: int) -> Path:
    """The Temporal histories copied ``copies`` times, each under a new workflow id."""
    target = DATA / f"temporal-x{copies}"
    if target.exists():
        return target
    tmp = DATA / f"temporal-x{copies}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in sorted((FIXTURES / "temporal" / "data" / "histories").glob("*.json")):
        history = json.loads(f.read_text())
        started = history["events"][0]["workflowExecutionStartedEventAttributes"]
        for i in range(copies):
            started["workflowId"] = f"{f.stem}-{i}"
            (tmp / f"{f.stem}-{i}.json").write_text(json.dumps(history))
    tmp.replace(target)
    return target


OAI_READ = """
import asyncio, json, sqlite3, sys, time
from agents import SQLiteSession
async def main():
    start = time.perf_counter()
    con = sqlite3.connect(sys.argv[1])
    ids = [r[0] for r in con.execute("SELECT session_id FROM agent_sessions")]
    con.close()
    items = 0
    for sid in ids:
        session = SQLiteSession(sid, sys.argv[1])
        items += len(await session.get_items())
        session.close()
    print(json.dumps({"seconds": time.perf_counter() - start, "events": items}))
asyncio.run(main())
"""

PYDANTIC_AI_READ = """
import json, sys, time
from pathlib import Path
from pydantic_ai.messages import ModelMessagesTypeAdapter
start = time.perf_counter()
messages = 0
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    doc = json.loads(f.read_bytes())
    history = doc["messages"] if isinstance(doc, dict) else doc
    messages += len(ModelMessagesTypeAdapter.validate_python(history))
print(json.dumps({"seconds": time.perf_counter() - start, "events": messages}))
"""

CREWAI_READ = """
import json, os, sqlite3, sys, time
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
from crewai.flow.persistence import SQLiteFlowPersistence
start = time.perf_counter()
p = SQLiteFlowPersistence(sys.argv[1])
con = sqlite3.connect(sys.argv[1])
flows = [r[0] for r in con.execute(
    "SELECT flow_uuid FROM flow_states UNION SELECT flow_uuid FROM pending_feedback")]
con.close()
for flow in flows:
    p.load_state(flow)
    p.load_pending_feedback(flow)
print(json.dumps({"seconds": time.perf_counter() - start, "events": len(flows)}))
"""


def _copied_db(name: str, source: Path, copies: int, tables: dict[str, str]) -> Path:
    """A SQLite fixture whose rows are copied ``copies`` times, the key column suffixed -i.

    ``tables`` maps a table to its key column (the session or flow id); an autoincrement
    ``id`` column is left to SQLite.
    """
    target = DATA / f"{name}-x{copies}.sqlite"
    if target.exists():
        return target
    DATA.mkdir(exist_ok=True)
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    con = sqlite3.connect(tmp)
    with con:
        for table, key in tables.items():
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})") if r[1] != "id"]
            rows = con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            at = cols.index(key)
            marks = ", ".join("?" for _ in cols)
            for i in range(1, copies):
                con.executemany(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})",
                    [(*r[:at], f"{r[at]}-{i}", *r[at + 1 :]) for r in rows],
                )
    con.close()
    tmp.replace(target)
    return target


def scaled_openai_agents(copies: int) -> Path:
    """The OpenAI Agents session fixture, every session copied under new ids."""
    return _copied_db("oai", FIXTURES / "openai_agents" / "data" / "sessions.sqlite", copies,
                      {"agent_sessions": "session_id", "agent_messages": "session_id"})  # fmt: skip


def scaled_crewai(copies: int) -> Path:
    """The CrewAI flow fixture, every flow copied under new ids."""
    return _copied_db("crewai", FIXTURES / "crewai" / "data" / "flows.sqlite", copies,
                      {"flow_states": "flow_uuid", "pending_feedback": "flow_uuid"})  # fmt: skip


def scaled_pydantic_ai(copies: int) -> Path:
    """The pydantic-ai histories, each file copied ``copies`` times under new names."""
    target = DATA / f"pydantic-ai-x{copies}"
    if target.exists():
        return target
    tmp = DATA / f"pydantic-ai-x{copies}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in sorted((FIXTURES / "pydantic_ai" / "data" / "histories").glob("*.json")):
        for i in range(copies):
            shutil.copyfile(f, tmp / f"{f.stem}-{i}.json")
    tmp.replace(target)
    return target


def _items(source: Path) -> int:
    con = sqlite3.connect(source)
    (n,) = con.execute("SELECT count(*) FROM agent_messages").fetchone()
    con.close()
    return int(n)


def _messages(source: Path) -> int:
    docs = (json.loads(f.read_bytes()) for f in source.glob("*.json"))
    return sum(len(d["messages"] if isinstance(d, dict) else d) for d in docs)


def _flows(source: Path) -> int:
    con = sqlite3.connect(source)
    (n,) = con.execute(
        "SELECT count(*) FROM (SELECT flow_uuid FROM flow_states "
        "UNION SELECT flow_uuid FROM pending_feedback)"
    ).fetchone()
    con.close()
    return int(n)


UNITS: dict[str, Callable[[Path], int]] = {
    "OpenAI Agents (SQLiteSession; items)": _items,
    "pydantic-ai (history JSON files; messages)": _messages,
    "CrewAI (SQLiteFlowPersistence; flows)": _flows,
}
"""Runtimes whose unit is not a checkpoint: how many units a source holds."""


def stepscope_rate(source: Path) -> tuple[float, int]:
    """Seconds to import into a new on-disk store, and checkpoints imported."""
    with tempfile.TemporaryDirectory(dir=DATA) as d:
        start = time.perf_counter()
        with Store.open(Path(d) / "store.duckdb") as store:
            report = import_source(store, str(source), ImportOptions())
        seconds = time.perf_counter() - start
    return seconds, report.tables["checkpoints"].imported


def api_rate(python: str, script: str, source: Path) -> tuple[float, int]:
    done = subprocess.run([python, "-c", script, str(source)], capture_output=True, text=True,
                          check=True)  # fmt: skip
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return float(out["seconds"]), int(out["events"])


def bench(name: str, source: Path, python: str, script: str, repeat: int) -> dict[str, float]:
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeat):
        s, n = stepscope_rate(source)
        n = UNITS[name](source) if name in UNITS else n
        ours.append(n / s)
        s, m = api_rate(python, script, source)
        theirs.append(m / s)
        assert n == m, (name, n, m)
    return {"events": n, "stepscope": statistics.median(ours), "api": statistics.median(theirs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=400, help="copies of each fixture")
    parser.add_argument("--quick", action="store_true", help="20 copies, one round")
    args = parser.parse_args()
    copies, repeat = (20, 1) if args.quick else (args.copies, args.repeat)
    cases: dict[str, tuple[str, Callable[[int], Path], str, str]] = {
        "ADK (DatabaseSessionService, SQLite)": ("STEPSCOPE_ADK_PYTHON", scaled_adk, ADK_READ,
                                                 "`get_session`, every session"),
        "Temporal (history JSON files)": ("STEPSCOPE_TEMPORAL_PYTHON", scaled_temporal,
                                          TEMPORAL_READ, "`WorkflowHistory.from_json`"),
        "OpenAI Agents (SQLiteSession; items)": (
            "STEPSCOPE_OPENAI_AGENTS_PYTHON", scaled_openai_agents, OAI_READ,
            "`get_items`, every session"),
        "pydantic-ai (history JSON files; messages)": (
            "STEPSCOPE_PYDANTIC_AI_PYTHON", scaled_pydantic_ai, PYDANTIC_AI_READ,
            "`ModelMessagesTypeAdapter`, every file"),
        "CrewAI (SQLiteFlowPersistence; flows)": (
            "STEPSCOPE_CREWAI_PYTHON", scaled_crewai, CREWAI_READ,
            "`load_state`, latest state of every flow"),
    }  # fmt: skip
    print("| runtime | events | Stepscope import | runtime's own read | **import / read** |")
    print("|---|---:|---:|---:|---:|")
    for name, (env, build, script, what) in cases.items():
        python = os.environ.get(env)
        if not python:
            print(f"| {name} | skipped: set {env} | | | |")
            continue
        r = bench(name, build(copies), python, script, repeat)
        print(f"| {name} | {r['events']:,} | {r['stepscope']:,.0f}/s | {r['api']:,.0f}/s "
              f"({what}) | **{r['stepscope'] / r['api']:.1f}x** |")  # fmt: skip


if __name__ == "__main__":
    main()
