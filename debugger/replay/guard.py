"""The in-process guard: the layer that *explains* what a replayed agent tried.

Under kernel isolation (:mod:`debugger.replay.isolation`) the kernel is what keeps the
agent in (no network, read-only filesystem, its own processes); this guard makes a refused
attempt a violation that names what was tried (``connect 10.0.0.5:5432``, ``remove PATH``),
so the report says why the agent failed. Under ``--isolation=hooks`` it is all there is,
and code that goes around Python (a C driver, ctypes, a fresh interpreter, code that edits
this module) is not stopped: docs/replay.md says so.

Installed in the child process before the agent is imported, so module-level code of the
agent is covered too. Two layers:

- ``socket.socket.connect`` / ``connect_ex``, ``socket.create_connection`` and
  ``socket.getaddrinfo`` are replaced, so every library that goes through Python's socket
  module (urllib, http.client, requests, httpx, asyncio) fails with a clear error;
- an audit hook (PEP 578) refuses the network events of the socket module's C level
  (``socket.connect``, ``sendto``, name resolution), new processes (``subprocess.Popen``,
  ``os.system``, ``os.exec*``, ``os.posix_spawn``, ``os.fork``), signals to other processes
  (``os.kill``), and changes to files outside the writable directories or on a read-only
  mount (``open`` for writing, ``remove``, ``rename``, ``truncate``, ``symlink``, ``link``,
  ``mkdir``, ``chmod``, ``sqlite3.connect`` unless every ``mode=`` is ``ro``).

Every refusal is recorded as a violation and raised to the agent as
:class:`NetworkBlocked`, :class:`WriteBlocked` or :class:`ProcessBlocked`, which are
OSErrors, so code that handles a failed connection behaves as it would offline.
"""

from __future__ import annotations

import os
import resource
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs

from debugger.errors import SandboxViolation

Recorder = Callable[[str, str], None]
"""Called as ``record(kind, detail)`` for each refused attempt."""


class NetworkBlocked(SandboxViolation, ConnectionRefusedError):
    """A network connection attempted inside the replay sandbox."""


class WriteBlocked(SandboxViolation, PermissionError):
    """A file write outside the replay's output directory."""


class ProcessBlocked(SandboxViolation, PermissionError):
    """A new process (subprocess, os.system, exec) started inside the replay sandbox."""


def format_address(value: Any) -> str:
    """A socket address as people write it: ``10.0.0.5:5432``, ``[::1]:80``, a Unix path."""
    if isinstance(value, tuple) and len(value) >= 2:
        host = str(value[0])
        return f"[{host}]:{value[1]}" if ":" in host else f"{host}:{value[1]}"
    return os.fsdecode(value) if isinstance(value, str | bytes) else repr(value)


_NETWORK_EVENTS: dict[str, Callable[[tuple[Any, ...]], str]] = {
    "socket.connect": lambda a: f"connect {format_address(a[1])}",
    "socket.sendto": lambda a: f"send to {format_address(a[1])}",
    "socket.sendmsg": lambda a: f"send to {format_address(a[1])}",
    "socket.getaddrinfo": lambda a: f"resolve {a[0]!r}:{a[1]!r}",
    "socket.gethostbyname": lambda a: f"resolve {a[0]!r}",
    "socket.gethostbyaddr": lambda a: f"resolve {a[0]!r}",
}
"""Audit events of the socket module that reach out, and how to describe each."""
_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.startfile",
        "os.fork",
        "os.forkpty",
    }
)
"""A child process would be outside every guard here, so starting one is refused."""

_PATH_EVENTS: dict[str, tuple[int, ...]] = {
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.truncate": (0,),
    "os.symlink": (1,),
    "os.link": (0, 1),
    "os.mkdir": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
}
"""Audit events that change the filesystem without ``open``, and which arguments are paths
(a hard link's source counts: writing through it would change the outside file)."""
_SIGNAL_EVENTS = frozenset({"os.kill", "os.killpg"})

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def limit_memory(megabytes: int) -> None:
    """Cap the child's address space (RLIMIT_AS): a runaway agent gets a MemoryError."""
    limit = megabytes * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def block_network(record: Recorder) -> None:
    """Make every connection attempt through the socket module fail and be recorded."""

    def refuse(what: str) -> NoReturn:
        record("network", what)
        raise NetworkBlocked(
            f"network access is blocked in the replay sandbox ({what})",
            "answer this call from the tape or a mocks module",
        )

    def connect(self: socket.socket, to: Any) -> None:
        refuse(f"connect {format_address(to)}")

    def connect_ex(self: socket.socket, to: Any) -> int:
        refuse(f"connect {format_address(to)}")

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        refuse(f"connect {format_address(address)}")

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        refuse(f"resolve {host!r}:{port!r}")

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.create_connection = create_connection
    socket.getaddrinfo = getaddrinfo


def _is_write(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _inside(path: Any, roots: tuple[Path, ...]) -> bool:
    if isinstance(path, int):  # an already open descriptor: its opening was checked
        return True
    try:
        p = Path(os.fsdecode(path)).resolve()
    except (TypeError, ValueError, OSError):
        return False
    return any(p == r or r in p.parents for r in roots) and not _read_only(p)


def _read_only(path: Path) -> bool:
    """True when ``path`` lies on a read-only mount (a kernel sandbox's bound directories)."""
    for p in (path, *path.parents):
        try:
            return bool(os.statvfs(p).f_flag & os.ST_RDONLY)
        except OSError:
            continue
    return False


def install_audit_hook(record: Recorder, writable: list[Path]) -> None:
    """Refuse network events and writes outside ``writable`` at the audit-hook level.

    An audit hook cannot be removed, which is what a sandbox wants; it is installed only
    in the replay's own child process.
    """
    roots = tuple(p.resolve() for p in writable)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _NETWORK_EVENTS:
            what = _NETWORK_EVENTS[event](args)
            record("network", what)
            raise NetworkBlocked(f"network access is blocked in the replay sandbox ({what})")
        if event in _PROCESS_EVENTS:
            record("process", f"{event} {args[0]!r}"[:300])
            raise ProcessBlocked(f"starting a process is blocked in the replay sandbox ({event})")
        if event == "open" and _is_write(args[1], args[2]) and not _inside(args[0], roots):
            record("file_write", f"open {args[0]!s} for writing")
            raise WriteBlocked(f"writing {args[0]!s} is blocked in the replay sandbox")
        if event in _PATH_EVENTS:
            outside = [args[i] for i in _PATH_EVENTS[event] if not _inside(args[i], roots)]
            if outside:
                what = f"{event.split('.')[-1]} {' '.join(os.fsdecode(p) for p in outside)}"
                record("file_write", what[:300])
                raise WriteBlocked(f"{what} is blocked in the replay sandbox")
        if event in _SIGNAL_EVENTS and args[0] not in (0, os.getpid()):
            record("signal", f"{event.split('.')[-1]} {args[0]} signal {args[1]}")
            raise ProcessBlocked(f"signalling process {args[0]} is blocked in the replay sandbox")
        if event == "sqlite3.connect":
            _check_sqlite(args[0], roots, record)

    sys.addaudithook(hook)


def _check_sqlite(database: Any, roots: tuple[Path, ...], record: Recorder) -> None:
    name = os.fsdecode(database) if not isinstance(database, int) else ""
    path, _, query = name.removeprefix("file:").partition("?")
    modes = parse_qs(query).get("mode") or []
    # every mode given must be read-only (a substring test let "mode=rw&x=mode=ro" through)
    if name in ("", ":memory:") or (modes and all(m in ("ro", "memory") for m in modes)):
        return
    if not _inside(path, roots):
        record("file_write", f"sqlite3.connect({name}) (writable)")
        raise WriteBlocked(
            f"opening {name} writable is blocked in the replay sandbox",
            "open it read-only (file:PATH?mode=ro) or mock the tool that uses it",
        )
