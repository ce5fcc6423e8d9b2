"""A control group per replay: the kernel's bound on the whole sandbox's processes and memory.

Resource limits are per process, and two of them do not hold for a sandbox: RLIMIT_NPROC
is not enforced for root (a fork bomb then takes the host's PIDs), and RLIMIT_AS counts an
address space, not memory that belongs to none (``memfd_create``, System V shared memory,
files on a tmpfs, or simply many processes each under the limit). A cgroup counts every
task and every page charged to the sandbox, whatever made them.

The group is created next to the parent's own (cgroup v1: its ``pids`` and ``memory``
hierarchies; v2: where the parent's cgroup delegates both controllers), the child joins
it between fork and exec (:meth:`Group.join`), so everything it starts is in it, and the
parent removes it once the sandbox is dead. Where no such cgroup can be made (a user
without a delegated cgroup), :func:`create` returns None: the per-process limits remain,
and docs/replay.md says what is then not bounded.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
_names = itertools.count()
_LEFTOVER: set[Path] = set()
"""This process's groups whose last tasks were still going when their replay ended."""
_OPTIONAL = ("memory.swappiness", "memory.swap.max")
"""Kept out of swap where the kernel allows it to be said; the limit holds without."""


@dataclass(frozen=True)
class Group:
    """The cgroup directories of one replay (one in v2, one per hierarchy in v1)."""

    dirs: tuple[Path, ...]

    def join(self) -> None:
        """Move the calling process into the group (runs between fork and exec: only
        ``os`` calls)."""
        for d in self.dirs:
            fd = os.open(d / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def oom_killed(self) -> bool:
        """Whether the kernel killed a task of the group for its memory limit."""
        for d in self.dirs:
            for name in ("memory.events", "memory.oom_control"):  # v2, v1
                with contextlib.suppress(OSError, ValueError):
                    for line in (d / name).read_text().splitlines():
                        key, _, count = line.partition(" ")
                        if key == "oom_kill" and int(count) > 0:
                            return True
        return False

    def remove(self, wait_s: float = 10.0) -> None:
        """Remove the group once its last task has exited (a killed namespace's processes
        take a moment to go: a thousand of them, seconds on a loaded machine)."""
        deadline = time.monotonic() + wait_s
        for d in self.dirs:
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:  # the next replay, or the exit, retries
                        _LEFTOVER.add(d)
                        break
                    time.sleep(0.02)


def _own(controller: str) -> str | None:
    """The parent's cgroup path in the hierarchy holding ``controller`` ("" = v2)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if controller in names.split(","):
                return path
    return None


def _settings(max_tasks: int, memory_bytes: int) -> list[tuple[Path, dict[str, str]]] | None:
    """Where to create the group, and what to write in it, or None."""
    pids, memory = _own("pids"), _own("memory")
    if pids is not None and memory is not None:  # v1
        return [
            (ROOT / "pids" / pids.lstrip("/"), {"pids.max": str(max_tasks)}),
            (ROOT / "memory" / memory.lstrip("/"),
             {"memory.limit_in_bytes": str(memory_bytes), "memory.swappiness": "0"}),
        ]  # fmt: skip
    v2 = _own("")
    if v2 is None:
        return None
    parent = ROOT / v2.lstrip("/")
    try:
        delegated = (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if not {"pids", "memory"} <= set(delegated):
        return None
    return [(parent, {"pids.max": str(max_tasks), "memory.max": str(memory_bytes),
                      "memory.swap.max": "0"})]  # fmt: skip


def create(max_tasks: int, memory_mb: int) -> Group | None:
    """A new group bounding tasks (processes and threads) and memory, or None when this
    process cannot create one here."""
    settings = _settings(max_tasks, memory_mb * 1024 * 1024)
    if settings is None:
        return None
    sweep()
    for parent, _ in settings:
        _sweep(parent)
    name = f"stepscope-replay-{os.getpid()}-{next(_names)}"
    made: list[Path] = []
    try:
        for parent, values in settings:
            d = parent / name
            d.mkdir()
            made.append(d)
            for key, value in values.items():
                if key in _OPTIONAL:
                    with contextlib.suppress(OSError):
                        (d / key).write_text(value)
                else:
                    (d / key).write_text(value)
    except OSError:
        Group(tuple(made)).remove(0)
        return None
    return Group(tuple(made))


def _sweep(parent: Path) -> None:
    """Remove the empty groups an earlier replay's process left behind when it died."""
    for d in parent.glob("stepscope-replay-*-*"):
        pid = d.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                d.rmdir()


@atexit.register
def sweep() -> None:
    """Remove this process's leftover groups that are empty by now."""
    for d in list(_LEFTOVER):
        try:
            d.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        _LEFTOVER.discard(d)
