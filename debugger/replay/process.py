"""Starting the sandbox child, reading its events, and enforcing the wall-clock limit.

The child is a fresh interpreter (``python -m debugger.replay.child``) in its own process
group, with its working directory, temporary directory and only writable place set to the
replay's output directory. Events arrive one JSON line at a time on its stdout; a reader
thread queues them so the parent can stop waiting at the deadline and kill the group.
"""

from __future__ import annotations

import contextlib
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

import orjson

EventFn = Callable[[dict[str, Any]], None]


@dataclass
class ChildResult:
    """What the child reported, and how it ended."""

    started: bool = False
    steps: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    setup_error: dict[str, Any] | None = None
    returncode: int | None = None
    timed_out: bool = False
    stderr_tail: str = ""


def child_env(output_dir: Path) -> dict[str, str]:
    """The child's environment: the parent's import path, no bytecode, temp files inside."""
    tmp = output_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    paths = [str(Path(p or os.getcwd()).resolve()) for p in sys.path]
    skip = ("site-packages", "dist-packages", ".zip", "lib-dynload")
    extra = [p for p in dict.fromkeys(paths) if not any(s in p for s in skip)]
    extra = [p for p in extra if not p.startswith(os.path.join(sys.base_prefix, "lib"))]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP", "PYTHONHOME")}
    env.update(
        PYTHONPATH=os.pathsep.join(extra),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        TMPDIR=str(tmp),
        TEMP=str(tmp),
        TMP=str(tmp),
    )
    return env


def _reader(stream: IO[bytes], sink: queue.Queue[dict[str, Any] | None]) -> None:
    for line in stream:
        try:
            sink.put(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    sink.put(None)


def run_child(
    input_path: Path, output_dir: Path, timeout_s: float, on_event: EventFn | None = None
) -> ChildResult:
    """Run the child to its end or to the deadline, whichever comes first."""
    result = ChildResult()
    stderr_path = output_dir / "child.stderr"
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "debugger.replay.child", str(input_path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
            cwd=output_dir, env=child_env(output_dir), start_new_session=True,
        )  # fmt: skip
        try:
            _collect(proc, result, time.monotonic() + timeout_s, on_event)
        finally:
            if proc.poll() is None:
                _kill(proc)
            result.returncode = proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()
    result.stderr_tail = stderr_path.read_text(errors="replace")[-2000:]
    return result


def _collect(
    proc: subprocess.Popen[bytes], result: ChildResult, deadline: float, on_event: EventFn | None
) -> None:
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=_reader, args=(proc.stdout, events), daemon=True).start()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            result.timed_out = True
            _kill(proc)
            return
        try:
            event = events.get(timeout=min(remaining, 0.25))
        except queue.Empty:
            continue
        if event is None:
            return
        _file(event, result)
        if on_event is not None:
            on_event(event)


def _file(event: dict[str, Any], result: ChildResult) -> None:
    kind = event.get("event")
    if kind == "started":
        result.started = True
    elif kind == "step":
        result.steps.append(event)
    elif kind == "violation":
        result.violations.append(event)
    elif kind == "end":
        result.end = event
    elif kind == "setup_error":
        result.setup_error = event


def _kill(proc: subprocess.Popen[bytes]) -> None:
    # The child runs in its own session: its process group holds it and anything it forked.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
