"""Starting the sandbox child, reading its protocol pipe, and enforcing the wall-clock limit.

The child is ``python -m debugger.replay.child`` (wrapped in ``bwrap`` under kernel
isolation, see :mod:`debugger.replay.isolation`), in its own session, with hard limits set
before its ``exec``. Three descriptors connect it to the parent: its input (the replay's
JSON document, read-only), the protocol pipe it writes its messages on, and ``agent.log``
for its stdout and stderr. A reader thread validates the messages
(:class:`~debugger.replay.protocol.Reader`) and queues them, so the parent can stop waiting
at the deadline and kill the whole sandbox: the process group, and under kernel isolation
the PID namespace, which dies with its first process.

The parent's own files live in the output directory, which the child cannot write; the
child's writable directory is ``work/`` inside it.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from debugger.replay import cgroup
from debugger.replay import isolation as iso
from debugger.replay.protocol import ProtocolError, Reader
from debugger.replay.seccomp import no_unix_sockets

EventFn = Callable[[dict[str, Any]], None]
WORK_MB = 2048
"""What the child may keep in its work directory in all (RLIMIT_FSIZE bounds one file)."""
WORK_FILES = 100_000
"""Entries it may create there (empty files cost the disk inodes, not bytes)."""
WATCH_S = 0.5
"""How often the parent measures the work directory."""
EXIT_GRACE_S = 2.0
"""How long the child may take to exit after its last message before it is killed."""


@dataclass
class ChildResult:
    """What the child sent (validated), and how its process ended."""

    started: bool = False
    ready: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    setup_error: dict[str, Any] | None = None
    protocol_error: str | None = None
    """The parent's description of the first message outside the protocol."""
    returncode: int | None = None
    timed_out: bool = False
    work_exceeded: str | None = None
    """The parent's words for the work directory outgrowing WORK_MB or WORK_FILES."""
    oom_killed: bool = False
    """The kernel killed a process of the sandbox for its cgroup's memory limit."""
    stderr_tail: str = ""
    """The last lines bwrap or Python wrote before the child took over its output."""


@dataclass(frozen=True)
class Sandbox:
    """How to start the child: the isolation and what it may see."""

    isolation: str
    """kernel or hooks (``debugger.replay.isolation``)."""
    memory_mb: int
    """Address-space limit of the child."""
    env: dict[str, str]
    """The child's whole environment."""
    readable: list[Path] = field(default_factory=list)
    """What the kernel sandbox shows read-only besides the system."""
    hidden: list[Path] = field(default_factory=list)
    """What it masks where a readable path would show it (the store, the sources)."""
    module: str = "debugger.replay.child"
    """The child's entry point, run as ``python -m MODULE --input-fd N --protocol-fd N
    --log-fd N --isolation I``: it reads its JSON document from the input descriptor and
    speaks :mod:`debugger.replay.protocol` on the protocol descriptor. Another kind of agent
    (a LangGraph graph) has its own entry point speaking the same protocol."""
    protocol: str = "agent"
    """Which of the protocol's call schemas the child speaks (``protocol.PROTOCOLS``): a
    graph's calls also say where in the graph they were made."""


def work_dir(output_dir: Path) -> Path:
    """The child's writable directory (its working directory) inside the output directory."""
    return output_dir / "work"


def _argv(
    sandbox: Sandbox, output_dir: Path, fds: tuple[int, int, int], seccomp_fd: int | None
) -> list[str]:
    python = [sys.executable, "-m", sandbox.module, "--input-fd", str(fds[0]),
              "--protocol-fd", str(fds[1]), "--log-fd", str(fds[2]),
              "--isolation", sandbox.isolation]  # fmt: skip
    if sandbox.isolation == "hooks":
        return python
    return iso.bwrap_command(python, writable=work_dir(output_dir), readable=sandbox.readable,
                             hidden=sandbox.hidden, env=sandbox.env,
                             seccomp_fd=seccomp_fd)  # fmt: skip


def _seccomp_pipe(sandbox: Sandbox) -> int | None:
    """A pipe holding the seccomp program for bwrap to read, or None (hooks, other arch)."""
    program = no_unix_sockets() if sandbox.isolation == "kernel" else None
    if program is None:
        return None
    read_end, write_end = os.pipe()
    os.write(write_end, program)  # a few dozen bytes: the pipe's buffer takes them at once
    os.close(write_end)
    return read_end


def run_child(
    input_path: Path,
    output_dir: Path,
    timeout_s: float,
    sandbox: Sandbox,
    on_event: EventFn | None = None,
) -> ChildResult:
    """Run the child to its end or to the deadline, whichever comes first."""
    result = ChildResult()
    work_dir(output_dir).mkdir(exist_ok=True)
    read_end, write_end = os.pipe()
    seccomp = _seccomp_pipe(sandbox)
    cpu = math.ceil(timeout_s) + 1
    # every task and page of the sandbox, its tmpfs included (RLIMIT_AS is per process)
    group = cgroup.create(iso.PROCESSES, sandbox.memory_mb + 2 * iso.TMP_MB)

    def prepare() -> None:  # between fork and exec
        if group is not None:
            group.join()
        iso.set_limits(sandbox.memory_mb, cpu)

    with (
        input_path.open("rb") as data,
        (output_dir / "agent.log").open("ab") as log,
        (output_dir / "child.stderr").open("wb") as err,
    ):
        fds = (data.fileno(), write_end, log.fileno())
        extra = () if seccomp is None else (seccomp,)
        try:
            proc = subprocess.Popen(
                _argv(sandbox, output_dir, fds, seccomp), stdin=subprocess.DEVNULL, stdout=err,
                stderr=err, cwd=work_dir(output_dir), env=sandbox.env, pass_fds=fds + extra,
                start_new_session=True,
                preexec_fn=prepare,
            )  # fmt: skip
        except BaseException:
            os.close(read_end)
            if group is not None:
                group.remove(0)
            raise
        finally:
            os.close(write_end)
            if seccomp is not None:
                os.close(seccomp)
        stream = os.fdopen(read_end, "rb")
        deadline = time.monotonic() + timeout_s
        stop = threading.Event()
        threading.Thread(target=_watch, args=(work_dir(output_dir), proc, result, stop),
                         daemon=True).start()  # fmt: skip
        try:
            events = _start_reader(stream, sandbox.protocol)
            _collect(events, result, deadline, on_event)
            if not result.timed_out and result.protocol_error is None:
                # after its last word the child must exit, and say nothing more: anything
                # that follows was not written by the loop (a forged message)
                grace = time.monotonic() + max(0.05, min(EXIT_GRACE_S, deadline - time.monotonic()))
                _drain(events, result, grace)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.01, grace - time.monotonic()))
        finally:
            stop.set()
            _kill(proc)
            result.returncode = proc.wait()
            stream.close()
            if group is not None:
                result.oom_killed = group.oom_killed()
                group.remove()
            if result.work_exceeded is None:  # once more, after the end: it cannot finish first
                _over(work_dir(output_dir), result)
    result.stderr_tail = (output_dir / "child.stderr").read_text(errors="replace")[-2000:]
    return result


def work_usage(path: Path, max_entries: int) -> tuple[int, int]:
    """Bytes on disk and entries below ``path`` (the count stops soon past ``max_entries``)."""
    size = count = 0
    stack = [str(path)]
    while stack and count <= max_entries:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                count += 1
                try:
                    size += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                except OSError:
                    continue
    return size, count


def _watch(
    work: Path, proc: subprocess.Popen[bytes], result: ChildResult, stop: threading.Event
) -> None:
    """Kill the sandbox when its work directory outgrows its bounds: the disk under it is
    the user's, and no kernel limit of the sandbox counts it."""
    while not stop.wait(WATCH_S):
        if _over(work, result):
            _kill(proc)
            return


def _over(work: Path, result: ChildResult) -> bool:
    size, count = work_usage(work, WORK_FILES)
    if size > WORK_MB << 20 or count > WORK_FILES:
        result.work_exceeded = (f"it filled its work directory past {WORK_MB} MB or "
                                f"{WORK_FILES} files")  # fmt: skip
    return result.work_exceeded is not None


def _reader(
    stream: IO[bytes], protocol: str, sink: queue.Queue[dict[str, Any] | str | None]
) -> None:
    try:
        for message in Reader(stream, protocol):
            sink.put(message)
    except ProtocolError as e:
        sink.put(str(e))
    sink.put(None)


def _start_reader(stream: IO[bytes], protocol: str) -> queue.Queue[dict[str, Any] | str | None]:
    events: queue.Queue[dict[str, Any] | str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(stream, protocol, events), daemon=True).start()
    return events


def _collect(
    events: queue.Queue[dict[str, Any] | str | None],
    result: ChildResult,
    deadline: float,
    on_event: EventFn | None,
) -> None:
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            result.timed_out = True
            return
        try:
            event = events.get(timeout=min(remaining, 0.25))
        except queue.Empty:
            continue
        if event is None:
            return
        if isinstance(event, str):
            result.protocol_error = event
            return
        _file(event, result)
        if on_event is not None:
            on_event(event)
        if event["type"] in ("end", "setup_error"):
            return


def _drain(
    events: queue.Queue[dict[str, Any] | str | None], result: ChildResult, until: float
) -> None:
    """Wait for the pipe to close; a message after the last one is a protocol error."""
    while (remaining := until - time.monotonic()) > 0:
        try:
            event = events.get(timeout=remaining)
        except queue.Empty:
            return
        if event is None:
            return
        result.protocol_error = (
            event if isinstance(event, str) else f"a {event['type']} message came after the end"
        )
        return


def _file(event: dict[str, Any], result: ChildResult) -> None:
    kind = event["type"]
    if kind == "hello":
        result.started = True
    elif kind == "ready":
        result.ready = event
    elif kind == "step":
        result.steps.append(event)
    elif kind == "violation":
        result.violations.append(event)
    elif kind == "end":
        result.end = event
    elif kind == "setup_error":
        result.setup_error = event


def _kill(proc: subprocess.Popen[bytes]) -> None:
    # The child runs in its own session: its process group holds it (and bwrap); under
    # kernel isolation the PID namespace takes every process the agent started with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
