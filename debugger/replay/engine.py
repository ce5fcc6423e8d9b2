"""The replay engine: load, run the sandboxed child, compare, store the replay as a run.

The store is opened for writing only twice and briefly (to read the original and reserve the
replay's id, then to import the result), never while the agent runs, so a long replay does
not lock out the app or an import for its whole length.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from debugger.contract import BUDGETS
from debugger.errors import MigrationError, ReplayError, StoreError
from debugger.replay import compare
from debugger.replay import isolation as iso
from debugger.replay.inputs import (
    ReplayInputs,
    child_input,
    default_output_root,
    load_inputs,
    next_replay_id,
    slug,
)
from debugger.replay.judge import Verdict, judge
from debugger.replay.output import import_replay, save_report, write_sqlite
from debugger.replay.process import ChildResult, Sandbox, run_child, work_dir
from debugger.replay.report import ReplayReport
from debugger.store import Store

MODES = ("strict", "lenient")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_STEPS = 200
DEFAULT_MEMORY_MB = 2048
GRAPH_CHILD = "debugger.replay.graph.child"
"""The child entry point of a LangGraph graph replay."""
GRAPH_IMPORTS = ("loaders", "langgraph", "langchain_core")
"""What a graph's child imports besides the graph's own module, shown in the sandbox."""


class ReplaySetupError(ReplayError):
    """The replay cannot start: the agent, the mocks or a migration is at fault (bad input)."""

    title = "Cannot set up the replay"
    exit_code = 2


@dataclass(frozen=True)
class Progress:
    """Where a running replay is, for progress bars."""

    step_index: int
    """The step just finished (or the starting step)."""
    steps_done: int
    """Steps replayed so far."""
    steps_expected: int | None
    """Steps the original recorded after the starting step, if known."""
    message: str
    """One line about the last event."""


ProgressFn = Callable[[Progress], None]


def replay(
    store: Store | str | os.PathLike[str],
    run_id: str,
    from_step: int,
    agent: str | None = None,
    mocks: str | None = None,
    mode: str = "strict",
    *,
    graph: str | None = None,
    writes: Sequence[str] = (),
    resume: Sequence[Any] = (),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_steps: int = DEFAULT_MAX_STEPS,
    memory_mb: int = DEFAULT_MEMORY_MB,
    migrations: str | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
    isolation: str = iso.DEFAULT_ISOLATION,
    env: Sequence[str] = (),
) -> ReplayReport:
    """Replay ``run_id`` from ``from_step`` with ``agent`` in the sandbox, and compare.

    Args:
        store: a writable :class:`Store` or the path of a store file.
        run_id: the original run.
        from_step: the checkpoint to start from (its budgets are carried on, never reset).
        agent: ``module:attribute`` of an object with ``step(state, ctx)`` and ``is_done``.
        graph: instead of ``agent``, ``module:attribute`` of a LangGraph graph (compiled, a
            builder, or a function returning either) for a run LangGraph wrote.
        writes: graph replays: tool names that write (besides marks and the name rule).
        resume: graph replays: answers for interrupts the recording cannot answer, in order.
        mocks: module answering calls the tape cannot (a value or callable per tool name).
        mode: ``strict`` stops at the first divergence; ``lenient`` goes on with mocks, or
            with an error returned to the agent where none fits.
        timeout_s: wall-clock limit of the whole child process.
        max_steps: at most this many steps are replayed.
        memory_mb: address-space limit of the child process.
        migrations: state-schema migrations module (default: ``<agent's package>.migrations``).
        output_dir: where the replay's files go (default ``<store>.replays/<replay id>/``).
        progress: called after each event of the child.
        isolation: ``kernel`` (bubblewrap namespaces; the default, refused where it is not
            available) or ``hooks`` (the weaker in-process guard only).
        env: variables the child gets besides the allow-list: ``NAME`` (copied from this
            environment) or ``NAME=VALUE``.

    Returns:
        The report; the replay is also stored as run ``<run_id>~replay-<n>``.

    Raises:
        NotFound: no such run or step.
        ReplaySetupError: the agent or mocks cannot be imported, or the state cannot migrate.
        IsolationUnavailable: kernel isolation asked for and not available here.
        StoreError: the store cannot be written (held by the app, or opened read-only).
    """
    agent = _target(agent, graph)
    _check_args(agent, mode, timeout_s, max_steps, memory_mb)
    iso.check_available(isolation)
    iso.environment([], "/", env)  # a bad --env is refused before anything is written
    started = time.perf_counter()
    with writable(store) as s:
        inputs = load_inputs(s, run_id, from_step)
        if graph:  # a LangGraph run: its tape, writes and checkpoints are read differently
            from debugger.replay.graph import original

            graph_input = original.child_graph_input(s, inputs, writes, resume)
            whole_tape = s.tool_calls(run_id)  # the original's writes are read off it
            inputs = original.with_in_flight(inputs, whole_tape)
        replay_id = next_replay_id(s, run_id)
        root = Path(output_dir) if output_dir else default_output_root(s.path) / slug(replay_id)
        hidden = iso.hidden_paths(s.path, s.sources()["location"].tolist(),
                                  default_output_root(s.path))  # fmt: skip
    out = _fresh_dir(root)
    modules = [agent, mocks, migrations, *(GRAPH_IMPORTS if graph else ())]
    sandbox = _sandbox(isolation, memory_mb, out, env, hidden, modules, bool(graph))
    settings = {"agent": agent, "mocks": mocks, "mode": mode, "max_steps": max_steps,
                "memory_mb": memory_mb, "migrations": migrations,
                "timeout_s": timeout_s}  # fmt: skip
    doc = child_input(inputs, replay_id, settings, out)
    if graph:
        doc["graph"] = graph_input
    document = orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS, default=repr)
    input_path = out / "input.json"
    input_path.write_bytes(document)
    child = run_child(input_path, out, timeout_s, sandbox, _on_event(inputs, progress))
    _raise_setup_error(child, out, agent, mocks, isolation)
    # judged on the document exactly as the child read it
    verdict = judge(orjson.loads(document), child, timeout_s)
    child.steps = verdict.steps
    trusted = verdict.outcome != "sandbox_violation"
    ready = (child.ready or {}) if trusted else {}
    if graph:  # the original's writes, classified as the judged calls were
        calls = [c for ev in child.steps for c in ev["calls"]]
        inputs = original.with_original_writes(inputs, whole_tape, calls, writes)
    report = _report(inputs, child, replay_id, settings, ready, out, verdict, isolation)
    write_sqlite(out / "replay.sqlite", inputs, child, report, ready)
    report = _with_seconds(report, time.perf_counter() - started)
    save_report(report, out)
    with writable(store, saved=out / "replay.sqlite") as s:
        import_replay(s, out / "replay.sqlite")
    return report


def _target(agent: str | None, graph: str | None) -> str:
    if bool(agent) == bool(graph):
        raise ReplaySetupError(
            "name exactly one of an agent and a graph",
            "pass --agent MODULE:ATTR for a step(state, ctx) agent, or --graph MODULE:ATTR "
            "for a LangGraph run",
        )
    return str(agent or graph)


def _check_args(agent: str, mode: str, timeout_s: float, max_steps: int, memory_mb: int) -> None:
    module, _, attr = agent.partition(":")
    if not module or not attr:
        raise ReplaySetupError(
            f"agent {agent!r} is not of the form module:attribute",
            "name it like sample_checkpoints.refund_desk.agent:fixed_agent",
        )
    if mode not in MODES:
        raise ReplaySetupError(f"unknown mode {mode!r}", "use strict or lenient")
    if timeout_s <= 0 or max_steps < 1 or memory_mb < 64:
        raise ReplaySetupError(
            "limits must be positive (timeout > 0 s, max steps >= 1, memory >= 64 MB)",
            "raise the limit you passed",
        )


@contextmanager
def writable(store: Store | str | os.PathLike[str], saved: Path | None = None) -> Iterator[Store]:
    """The store for writing: the given one, or the path opened briefly.

    Raises:
        StoreError: read-only, or held by another process or connection (with a hint).
    """
    if isinstance(store, Store):
        if store.read_only:
            raise StoreError(
                "the store is open read-only, and a replay stores its result as a run",
                "pass the store's path instead (close this connection first), or open it "
                "with read_only=False",
            )
        yield store
        return
    if str(store) != ":memory:" and not Path(store).exists():
        raise StoreError(
            f"no store at {store}", "import a source first with `stepscope import SOURCE`"
        )
    later = f"; the replay is saved in {saved}, import it later with `stepscope import {saved}`"
    try:
        opened = Store.open(store, read_only=False)
    except StoreError as e:
        cause = str(e.__cause__ or e).lower()
        if "lock" in cause or "different configuration" in cause or "already attached" in cause:
            raise StoreError(
                f"the store {store} is held by another process or connection (the app, a "
                f"notebook or an import) and a replay must write its result into it"
                f"{later if saved else ''}",
                "stop `stepscope app` or close the notebook's connection and run the replay "
                "again, or start it from the app's Replay page",
            ) from e
        raise
    with opened as s:
        yield s


def _sandbox(
    isolation: str,
    memory_mb: int,
    out: Path,
    env: Sequence[str],
    hidden: list[Path],
    modules: list[str | None],
    graph: bool = False,
) -> Sandbox:
    """What the child may see and hold: its environment, its view, its limits (a graph's
    child is its own entry point, speaking the protocol with graph calls)."""
    home = "/tmp" if isolation == "kernel" else str(work_dir(out))
    path = iso.import_path()
    environment = iso.environment(path, home, env)
    readable = iso.readable_roots([*path, *iso.module_roots(["debugger", "orjson", *modules])])
    if not graph:
        return Sandbox(isolation, memory_mb, environment, readable, hidden)
    return Sandbox(isolation, memory_mb, environment, readable, hidden,
                   module=GRAPH_CHILD, protocol="graph")  # fmt: skip


def _fresh_dir(root: Path) -> Path:
    """A new, empty output directory (a leftover of an unstored attempt is set aside)."""
    path, n = root, 1
    while path.exists():
        n += 1
        path = root.with_name(f"{root.name}.{n}")
    path.mkdir(parents=True)
    return path.resolve()


def _on_event(
    inputs: ReplayInputs, progress: ProgressFn | None
) -> Callable[[dict[str, Any]], None]:
    last = inputs.original_last_step
    expected = None if last is None else max(0, last - inputs.start.step_index)
    done = [0]

    def handle(event: dict[str, Any]) -> None:
        if event["type"] == "step" and not event["partial"]:
            done[0] += 1
        if progress is not None:
            step = int(event.get("step_index", inputs.start.step_index))
            progress(Progress(step, done[0], expected, _describe(event)))

    return handle


def _describe(event: dict[str, Any]) -> str:
    # progress only: the verdict is the parent's, made once the child has ended
    kind = event["type"]
    if kind == "step":
        what = "did not finish" if event["partial"] else "replayed"
        return f"step {event['step_index']} {what}"
    if kind == "violation":
        return f"sandbox violation: {event['kind']}"
    if kind == "end":
        return "the agent stopped; judging the replay"
    return str(kind)


def _raise_setup_error(
    child: ChildResult, out: Path, agent: str, mocks: str | None, isolation: str
) -> None:
    err = child.setup_error
    if err is None:
        if not child.started and not child.timed_out and child.protocol_error is None:
            tail = child.stderr_tail.strip().splitlines()[-1:] or ["no output"]
            shutil.rmtree(out, ignore_errors=True)
            if isolation == "kernel" and tail[0].startswith("bwrap:"):
                raise iso.unavailable_from(tail[0])
            raise ReplayError(
                f"the replay's child process failed before the agent ran: {tail[0]}",
                "check that Stepscope is installed in this Python environment",
            )
        return
    shutil.rmtree(out, ignore_errors=True)
    message = str(err["message"])
    if err["what"] == "agent":
        raise ReplaySetupError(f"cannot import the agent {agent}: {message}",
                               "check the module:attribute name and that the module is on "
                               "PYTHONPATH")  # fmt: skip
    if err["what"] in ("graph", "restore"):
        what = "load the graph" if err["what"] == "graph" else "restore the checkpoint in"
        raise ReplaySetupError(f"cannot {what} {agent}: {message}", str(err.get("hint") or ""))
    if err["what"] == "mocks":
        raise ReplaySetupError(f"cannot import the mocks module {mocks}: {message}",
                               "pass an importable module name with --mocks")  # fmt: skip
    raise MigrationError(f"cannot migrate the starting state: {message}",
                         err.get("hint") or "pass --migrations MODULE, or replay with the "
                         "agent version that wrote the run")  # fmt: skip


def _report(
    inputs: ReplayInputs,
    child: ChildResult,
    replay_id: str,
    settings: dict[str, Any],
    ready: dict[str, Any],
    out: Path,
    verdict: Verdict,
    isolation: str,
) -> ReplayReport:
    outcome, reason = verdict.outcome, verdict.reason
    divergences = compare.divergences(child)
    writes = compare.ledger(child)
    b = inputs.start.budgets
    start_budgets = {name: getattr(b, name) for name in BUDGETS}
    full = [ev for ev in child.steps if not ev["partial"]]
    errors = [ev.get("error") for ev in child.steps if ev.get("error")]
    return ReplayReport(
        replay_run_id=replay_id,
        run_id=inputs.run.run_id,
        from_step=inputs.start.step_index,
        agent=settings["agent"],
        mocks=settings["mocks"],
        mode=settings["mode"],
        outcome=outcome,
        reason=reason,
        last_step=int(full[-1]["step_index"]) if full else inputs.start.step_index,
        steps=compare.aligned_steps(inputs, child, replay_id),
        first_divergence=divergences[0] if divergences else None,
        divergences=divergences,
        duplicate_writes=compare.duplicate_writes(writes, inputs.effects),
        missing_writes=compare.missing_writes(writes, inputs.effects, inputs.start.step_index),
        ledger=writes,
        unmatched_original_calls=compare.unmatched_calls(inputs, child),
        violations=compare.violations(child),
        budgets_start=start_budgets,
        budgets_end=dict(full[-1]["budgets"]) if full else start_budgets,
        limits={
            "timeout_s": settings["timeout_s"],
            "max_steps": settings["max_steps"],
            "memory_mb": settings["memory_mb"],
        },
        output_dir=str(out),
        seconds=0.0,
        migrated_from=ready.get("migrated_from"),
        agent_error=errors[-1] if errors else None,
        isolation=isolation,
    )


def _with_seconds(report: ReplayReport, seconds: float) -> ReplayReport:
    from dataclasses import replace

    return replace(report, seconds=round(seconds, 3))
