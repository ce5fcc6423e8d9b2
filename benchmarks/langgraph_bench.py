"""LangGraph import speed against LangGraph's own readers, and Postgres against SQLite.

1. A real graph writes one thread of N checkpoints (default 2,000) whose state is a window of
   LangChain messages (AI messages with tool calls and usage, tool messages; ~20 KB of
   state), through SqliteSaver and through PostgresSaver. On the same database, in the same
   run, we time:
   - ``stepscope``: ``loaders.import_source`` into a new on-disk store (decode, map, validate,
     insert, derive runs; the store is closed, so its data is on disk);
   - ``get_state_history``: iterating ``graph.get_state_history(config)``;
   - ``Saver.list``: iterating ``saver.list(config)``.
   Target: Stepscope's import >= 5x the checkpoints/s of ``get_state_history`` on both savers.
2. Native import: the same synthetic native rows (benchmarks/synth.py, ~2 KB states) in a
   SQLite file and in a Postgres table (JSON columns as jsonb), each imported into a new
   store. Target: Postgres rows/s >= 0.5 x SQLite rows/s.
3. The Postgres read path alone (no store): the server-side cursor the reader uses, against
   psycopg's binary COPY and ADBC, to justify the choice.
4. Message-heavy ReAct agent (tests/langgraph/react_heavy.py: the prebuilt agent, 10
   threads, ~2,000 checkpoints, states of ~85 KB with up to ~200 messages), on SqliteSaver
   and PostgresSaver: ``stepscope import`` run as a command (a new process, its start
   included) against iterating ``get_state_history()`` over the same threads in this
   process, alternated within each round. Target: the command >= 5x on both savers.

Postgres: ``STEPSCOPE_BENCH_PG_URL`` (a user that may create databases), else a throwaway
server from the ``pgserver`` wheel (tests/fixtures/pg.py). Every figure is the median of
``--repeat`` runs (default 5); the three LangGraph readers take turns within each round.
Run ``python benchmarks/langgraph_bench.py`` (``--quick`` for a small run; ``--only heavy``
or ``--only thread`` for one part).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import psycopg  # noqa: E402
import synth  # noqa: E402

from debugger.store import Store  # noqa: E402
from loaders import import_source  # noqa: E402

JSON_COLUMNS = {"working_state", "pending_effects", "tool_versions", "metadata"}
TEXT = (
    "The customer asks where the refund for order A-17 is; the carrier says the parcel was "
    "returned on Tuesday and the warehouse confirmed receipt, so the refund can be issued. "
)


class Chat(TypedDict):
    messages: list[Any]
    turn: int


def _messages(turn: int, window: int) -> list[Any]:
    from langchain_core.messages import AIMessage, ToolMessage

    call = {"name": "lookup_order", "args": {"order": f"A-{turn}", "verbose": True},
            "id": f"call-{turn}"}  # fmt: skip
    return [
        AIMessage(content=TEXT * 2, id=f"ai-{turn}", tool_calls=[call],
                  usage_metadata={"input_tokens": 900 + turn, "output_tokens": 60,
                                  "total_tokens": 960 + turn},
                  response_metadata={"model_name": "bench-model-1", "finish_reason": "stop"}),
        ToolMessage(content=TEXT, id=f"tool-{turn}", tool_call_id=f"call-{turn}"),
    ]  # fmt: skip


def chat_graph(saver: Any, steps: int, window: int) -> Any:
    """A one-node loop whose state keeps the last ``window`` messages."""
    from langgraph.graph import END, START, StateGraph

    def agent(s: Chat) -> dict[str, Any]:
        turn = s["turn"] + 1
        return {"messages": (s["messages"] + _messages(turn, window))[-window:], "turn": turn}

    g: Any = StateGraph(Chat)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "agent" if s["turn"] < steps else END)
    return g.compile(checkpointer=saver)


def write_thread(saver: Any, steps: int, window: int) -> Any:
    graph = chat_graph(saver, steps, window)
    cfg = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    graph.invoke({"messages": [], "turn": 0}, cfg)
    return graph


def median_rate(n: int, fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return n / statistics.median(times)


def stepscope_import(source: str) -> int:
    with tempfile.TemporaryDirectory() as d, Store.open(Path(d) / "s.duckdb") as store:
        report = import_source(store, source)
        assert report.total.quarantined == 0, report.quarantine_reasons
        return report.total.imported


@contextmanager
def postgres() -> Iterator[Any]:
    """A database URL factory on the bench server."""
    given = os.environ.get("STEPSCOPE_BENCH_PG_URL")
    if given:
        from tests.fixtures.pg import PgServer

        yield PgServer(admin_url=given)
        return
    from tests.fixtures.pg import start_server

    base = Path(tempfile.mkdtemp(prefix="stepscope-bench-pg-"))
    server, stop = start_server(base)
    try:
        yield server
    finally:
        stop()
        shutil.rmtree(base, ignore_errors=True)


def bench_langgraph(server: Any, steps: int, window: int, repeat: int) -> list[dict[str, Any]]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    rows = []
    cfg = {"configurable": {"thread_id": "bench"}}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "lg.sqlite"
        con = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(con)
        graph = write_thread(saver, steps, window)
        rows.append(_measure("SqliteSaver", str(path), graph, saver, cfg, repeat))
        con.close()
    url = server.create_database("bench_lg")
    with PostgresSaver.from_conn_string(url) as pg_saver:
        pg_saver.setup()
        graph = write_thread(pg_saver, steps, window)
        rows.append(_measure("PostgresSaver", url, graph, pg_saver, cfg, repeat))
    return rows


def _measure(name: str, source: str, graph: Any, saver: Any, cfg: Any, repeat: int) -> Any:
    n = sum(1 for _ in saver.list(cfg))
    state = graph.get_state(cfg).values
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    size = len(JsonPlusSerializer().dumps_typed(state)[1])
    # alternated, one of each per round: a shared machine's speed drifts within minutes,
    # and the ratio should compare the three under the same conditions
    ways: dict[str, Callable[[], Any]] = {
        "ours": lambda: stepscope_import(source),
        "history": lambda: sum(1 for _ in graph.get_state_history(cfg)),
        "list": lambda: sum(1 for _ in saver.list(cfg)),
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    for _ in range(repeat):
        for key, fn in ways.items():
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    rates = {k: n / statistics.median(v) for k, v in times.items()}
    return {"saver": name, "n": n, "state_kb": size / 1024, **rates}


def write_native_pg(url: str, spec: synth.Spec) -> None:
    cols = ", ".join(f"{c} {'jsonb' if c in JSON_COLUMNS else _pg_type(c)}" for c in synth.COLUMNS)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE TABLE checkpoints ({cols})")
        with con.cursor().copy(f"COPY checkpoints ({', '.join(synth.COLUMNS)}) FROM STDIN") as cp:
            for chunk in synth.rows(spec):
                for row in chunk:
                    cp.write_row(row)
        con.execute("ANALYZE checkpoints")


def _pg_type(column: str) -> str:
    if column == "created_at":
        return "timestamptz"
    if column in ("run_id", "model_version"):
        return "text"
    return "bigint"


def bench_native(server: Any, spec: synth.Spec, repeat: int) -> dict[str, float]:
    """SQLite and Postgres imports of the same rows, alternated so both see the same load."""
    url = server.create_database("bench_native")
    write_native_pg(url, spec)
    times: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "native.sqlite"
        synth.write(spec, path, None)
        for _ in range(repeat):
            for name, source in (("sqlite", str(path)), ("postgres", url)):
                t = time.perf_counter()
                stepscope_import(source)
                times[name].append(time.perf_counter() - t)
    rates = {k: spec.total / statistics.median(v) for k, v in times.items()}
    return {**rates, **bench_reads(url, spec.total, repeat)}


def bench_reads(url: str, n: int, repeat: int) -> dict[str, float]:
    from loaders.postgres import PostgresReader

    def cursor() -> None:
        with PostgresReader(url) as r:
            for _ in r.scan("checkpoints"):
                pass

    def copy_binary() -> None:
        # values are left undecoded (no set_types): a lower bound of COPY's cost
        sql = "COPY (SELECT * FROM checkpoints) TO STDOUT (FORMAT BINARY)"
        with psycopg.connect(url) as con, con.cursor() as cur, cur.copy(sql) as cp:
            for _ in cp.rows():
                pass

    def adbc() -> None:
        import adbc_driver_postgresql.dbapi as dbapi

        with dbapi.connect(url) as con, con.cursor() as cur:
            cur.execute("SELECT * FROM checkpoints")
            reader = cur.fetch_record_batch()
            for _ in reader:
                pass

    out = {"read_cursor": median_rate(n, cursor, repeat),
           "read_copy_binary": median_rate(n, copy_binary, repeat)}  # fmt: skip
    with suppress(ImportError):
        out["read_adbc"] = median_rate(n, adbc, repeat)
    return out


def _child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli_import(source: str) -> float:
    """``stepscope import SOURCE`` in a new process, as a user runs it; returns its CPU time
    (all threads, user + system)."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    before = _child_cpu()
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(
            [sys.executable, "-m", "debugger.cli", "import", source, "--quiet",
             "--store", str(Path(d) / "s.duckdb")],
            check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return _child_cpu() - before


def history_cpu(saver: Any, ids: list[str]) -> float:
    """CPU time of iterating ``get_state_history`` over the threads, in this process."""
    from tests.langgraph import react_heavy

    before = time.process_time()
    react_heavy.history(saver, ids)
    return time.process_time() - before


def bench_heavy(server: Any, repeat: int, threads: int, turns: int) -> list[dict[str, Any]]:
    """The react_heavy database on both savers: the command against get_state_history."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.langgraph import react_heavy

    rows = []
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "heavy.sqlite"
        con = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(con)
        ids = react_heavy.build(saver, threads, turns)
        rows.append(_heavy_row("SqliteSaver", str(path), saver, ids, repeat))
        con.close()
    url = server.create_database("bench_heavy")
    with PostgresSaver.from_conn_string(url) as pg_saver:
        pg_saver.setup()
        ids = react_heavy.build(pg_saver, threads, turns)
        rows.append(_heavy_row("PostgresSaver", url, pg_saver, ids, repeat))
    return rows


def _heavy_row(name: str, source: str, saver: Any, ids: list[str], repeat: int) -> Any:
    from tests.langgraph import react_heavy

    n = react_heavy.history(saver, ids)
    cfg = {"configurable": {"thread_id": ids[-1]}}
    values = saver.get_tuple(cfg).checkpoint["channel_values"]
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    size = len(JsonPlusSerializer().dumps_typed(values)[1])
    times: dict[str, list[float]] = {"cli": [], "history": []}
    cpu: dict[str, list[float]] = {"cli": [], "history": []}
    for _ in range(repeat):
        for key, fn in (("cli", lambda: cli_import(source)),
                        ("history", lambda: history_cpu(saver, ids))):  # fmt: skip
            t = time.perf_counter()
            cpu[key].append(fn())
            times[key].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"saver": name, "n": n, "state_kb": size / 1024, "threads": len(ids),
            "cli_s": med["cli"], "history_s": med["history"],
            "cli_cpu": statistics.median(cpu["cli"]),
            "history_cpu": statistics.median(cpu["history"]),
            "ratios": sorted(h / c for h, c in zip(times["history"], times["cli"],
                                                   strict=True))}  # fmt: skip


def report_heavy(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| saver | checkpoints | last state | `stepscope import` (command) | `get_state_history` "
        "| **history / import** | per round | CPU: import, history | CPU ratio |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        rounds = ", ".join(f"{x:.1f}" for x in r["ratios"])
        lines.append(
            f"| {r['saver']} | {r['n']:,} ({r['threads']} threads) | {r['state_kb']:.0f} KiB "
            f"| {r['cli_s']:.2f} s | {r['history_s']:.2f} s "
            f"| **{r['history_s'] / r['cli_s']:.1f}x** | {rounds} "
            f"| {r['cli_cpu']:.2f} s, {r['history_cpu']:.2f} s "
            f"| {r['history_cpu'] / r['cli_cpu']:.1f}x |"
        )
    return "\n".join(lines)


def report(lg: list[dict[str, Any]], native: dict[str, float]) -> str:
    lines = [
        "| saver | checkpoints | state | Stepscope import | get_state_history | Saver.list "
        "| import / history | import / list |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in lg:
        lines.append(
            f"| {r['saver']} | {r['n']:,} | {r['state_kb']:.1f} KiB | {r['ours']:,.0f}/s "
            f"| {r['history']:,.0f}/s | {r['list']:,.0f}/s | {r['ours'] / r['history']:.1f}x "
            f"| {r['ours'] / r['list']:.1f}x |"
        )
    ratio = native["postgres"] / native["sqlite"]
    lines += [
        "",
        "| native import | rows/s |",
        "|---|---:|",
        f"| SQLite | {native['sqlite']:,.0f} |",
        f"| Postgres | {native['postgres']:,.0f} |",
        f"| Postgres / SQLite | {ratio:.2f} |",
        "",
        "| Postgres read path (no store) | rows/s |",
        "|---|---:|",
        f"| server-side cursor + Arrow batches (used) | {native['read_cursor']:,.0f} |",
        f"| psycopg binary COPY (values not decoded) | {native['read_copy_binary']:,.0f} |",
    ]
    if "read_adbc" in native:
        lines.append(f"| ADBC (Arrow batches) | {native['read_adbc']:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (200 checkpoints)")
    parser.add_argument("--steps", type=int, default=None, help="checkpoints in the thread")
    parser.add_argument("--window", type=int, default=36, help="messages kept in the state")
    parser.add_argument("--repeat", type=int, default=None, help="timed repetitions")
    parser.add_argument("--only", choices=["thread", "heavy"], default=None,
                        help="one part: one thread + native, or the ReAct database")  # fmt: skip
    args = parser.parse_args(argv)
    steps = args.steps or (200 if args.quick else 2000)
    repeat = args.repeat or (1 if args.quick else 5)
    spec = synth.Spec(runs=100 if args.quick else 400, steps=50, state_bytes=2048)
    load = os.getloadavg()[0]
    out = []
    with postgres() as server:
        if args.only != "heavy":
            lg = bench_langgraph(server, steps, args.window, repeat)
            native = bench_native(server, spec, repeat)
            out.append(report(lg, native))
        if args.only != "thread":
            threads, turns = (3, 20) if args.quick else (10, 99)
            out.append(report_heavy(bench_heavy(server, repeat, threads, turns)))
    print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on "
          f"{os.cpu_count()} cores; medians of {repeat} runs\n")  # fmt: skip
    print("\n\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
