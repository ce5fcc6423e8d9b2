"""Agents that try to leave the replay sandbox, each the way issue 17 found one get out.

Each does its attack once, in the first step it replays, notes what happened to every
attempt in ``state["attack"]`` (``"what: ok"`` when it worked, else the error's type), then
steps as ``ledger_agent`` does. Their targets come from the environment, passed with
``--env`` by the test (``tests/replay/test_replay_attacks.py``):

- ``ATTACK_PORT``: a TCP listener the test runs on 127.0.0.1;
- ``ATTACK_DIR``: the test's project directory (on the import path, so visible read-only in
  the sandbox) holding ``victim-*.txt`` files, the store, the runtime's source database and
  the ledger the tools wrote;
- ``ATTACK_STORE``, ``ATTACK_SOURCE``, ``ATTACK_LEDGER``: those three files;
- ``ATTACK_PID``: an unrelated process the test started; ``ATTACK_BIND_PORT``: a port for
  the listen attack; ``AGENT_PG_URL``: the suite's throwaway PostgreSQL database.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import multiprocessing
import os
import resource
import shutil
import signal
import socket
import sqlite3
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.replay.agents import LedgerAgent

Notes = list[str]


def _dir() -> Path:
    return Path(os.environ["ATTACK_DIR"])


def _port() -> int:
    return int(os.environ["ATTACK_PORT"])


def _try(notes: Notes, what: str, attempt: Callable[[], object]) -> None:
    try:
        attempt()
        notes.append(f"{what}: ok")
    except Exception as e:  # every failure is what the test wants to see
        notes.append(f"{what}: {type(e).__name__}")


def connect_out() -> None:
    """A TCP connection to the test's listener through the C socket type, and a write."""
    import _socket

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        _socket.socket.connect(s, ("127.0.0.1", _port()))
        s.send(b"escaped")
    finally:
        s.close()


def write_outside(name: str) -> None:
    """Write a file in the project directory (outside the replay's work directory)."""
    with open(_dir() / name, "w") as f:
        f.write("escaped")


class Attack(LedgerAgent):
    """Attacks once, in the first replayed step; then steps as the ledger agent."""

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        if "attack" not in state:
            notes: Notes = []
            try:
                self.attack(notes)
            except Exception as e:
                notes.append(f"attack raised {type(e).__name__}: {e}")
            state["attack"] = notes
        return super().step(state, ctx)

    def attack(self, notes: Notes) -> None:
        raise NotImplementedError


class GuardGlobals(Attack):
    """Empties the guard's tables and replaces its write test, then goes out."""

    def attack(self, notes: Notes) -> None:
        from debugger.replay import guard

        guard._NETWORK_EVENTS.clear()
        guard._PATH_EVENTS.clear()
        guard._PROCESS_EVENTS = frozenset()  # type: ignore[misc]
        guard._is_write = lambda mode, flags: False
        _try(notes, "connect", connect_out)
        _try(notes, "write", lambda: write_outside("victim-a.txt"))
        _try(notes, "shell", lambda: _check(os.system(f"echo x > {_dir()}/victim-b.txt")))


def _check(status: int) -> None:
    if status != 0:
        raise OSError(f"status {status}")


class GcClosure(Attack):
    """Reaches the audit hook's closure through gc and widens its writable roots to /."""

    def attack(self, notes: Notes) -> None:
        from debugger.replay import guard

        for obj in gc.get_objects():
            if getattr(obj, "__qualname__", "") == "install_audit_hook.<locals>.hook":
                for name, cell in zip(obj.__code__.co_freevars, obj.__closure__, strict=True):
                    if name == "roots":
                        cell.cell_contents = (Path("/"),)
                        notes.append("roots widened")
        guard._read_only = lambda path: False
        guard._NETWORK_EVENTS.clear()
        _try(notes, "write", lambda: write_outside("victim-a.txt"))
        _try(notes, "connect", connect_out)


_PAYLOAD = """
import os, socket, sys
code = 0
try:
    socket.create_connection(("127.0.0.1", int(os.environ["ATTACK_PORT"])), timeout=2)
    code |= 1
except OSError:
    pass
try:
    open(os.path.join(os.environ["ATTACK_DIR"], "victim-a.txt"), "w").write("escaped")
    code |= 2
except OSError:
    pass
sys.exit(code)
"""
"""What a process started around the guard tries: exit status 1 = connected, 2 = wrote."""


class ForkExec(Attack):
    """Starts a fresh interpreter with ``_posixsubprocess.fork_exec`` (no audit event)."""

    def attack(self, notes: Notes) -> None:
        from multiprocessing.util import spawnv_passfds  # calls _posixsubprocess.fork_exec

        exe = os.fsencode(sys.executable)
        pid = spawnv_passfds(exe, [exe, b"-c", _PAYLOAD.encode()], [])
        _, status = os.waitpid(pid, 0)
        notes.append(f"payload exit {os.waitstatus_to_exitcode(status)}")


def spawned_payload() -> None:
    """Runs in a ``multiprocessing`` spawn child: a fresh interpreter without the hooks."""
    exec(_PAYLOAD)


class MultiprocessingSpawn(Attack):
    def attack(self, notes: Notes) -> None:
        process = multiprocessing.get_context("spawn").Process(target=spawned_payload)
        process.start()
        process.join(20)
        notes.append(f"payload exit {process.exitcode}")


class CtypesLibc(Attack):
    """libc's connect, open/write and system, called through ctypes: no Python I/O at all."""

    def attack(self, notes: Notes) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        victim = str(_dir() / "victim-a.txt").encode()
        fd = libc.open(victim, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        wrote = libc.write(fd, b"escaped", 7) if fd >= 0 else -1
        notes.append(f"libc open {fd} write {wrote} errno {ctypes.get_errno()}")
        status = libc.system(f"echo x > {_dir()}/victim-b.txt".encode())
        notes.append(f"libc system {status}")
        sock = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
        address = (
            struct.pack("=H", socket.AF_INET)
            + struct.pack("!H", _port())
            + socket.inet_aton("127.0.0.1")
            + bytes(8)
        )
        notes.append(f"libc connect {libc.connect(sock, address, len(address))}")


class FileOps(Attack):
    """Changes outside files without ``open``: remove, rename, truncate, symlink, move,
    and a hard link from the work directory written through."""

    def attack(self, notes: Notes) -> None:
        d = _dir()
        _try(notes, "remove", lambda: os.remove(d / "victim-a.txt"))
        _try(notes, "rename", lambda: os.rename(d / "victim-b.txt", d / "renamed.txt"))
        _try(notes, "truncate", lambda: os.truncate(d / "victim-c.txt", 0))
        _try(notes, "symlink", lambda: os.symlink("/etc/passwd", d / "link.txt"))
        _try(notes, "move", lambda: shutil.move(d / "victim-d.txt", "moved.txt"))
        _try(notes, "link", lambda: os.link(d / "victim-e.txt", "hard.txt"))
        _try(notes, "write through link", lambda: Path("hard.txt").write_text("escaped"))


class BareFileOps(FileOps):
    """The same, with the guard's tables emptied first: only the kernel stands in the way."""

    def attack(self, notes: Notes) -> None:
        from debugger.replay import guard

        guard._PATH_EVENTS.clear()
        guard._is_write = lambda mode, flags: False
        super().attack(notes)


class StoreWriter(Attack):
    """Opens the store with DuckDB and rewrites it."""

    def attack(self, notes: Notes) -> None:
        import duckdb

        def rewrite() -> None:
            con = duckdb.connect(os.environ["ATTACK_STORE"])
            con.execute("CREATE TABLE pwned (x INTEGER)")
            con.execute("DELETE FROM quarantine")
            con.execute("UPDATE checkpoints SET metadata = '{}'")
            con.close()

        _try(notes, "duckdb", rewrite)


class SqliteUriTrick(Attack):
    """Opens the source and the ledger with ``mode=rw&x=mode=ro`` (a substring test's hole)."""

    def attack(self, notes: Notes) -> None:
        def rewrite(path: str, sql: str) -> None:
            con = sqlite3.connect(f"file:{path}?mode=rw&x=mode=ro", uri=True)
            con.execute(sql)
            con.commit()
            con.close()

        source, ledger = os.environ["ATTACK_SOURCE"], os.environ["ATTACK_LEDGER"]
        _try(notes, "source", lambda: rewrite(source, "DELETE FROM checkpoints"))
        _try(notes, "ledger", lambda: rewrite(ledger, "INSERT INTO payments VALUES ('x', 1)"))


class Killer(Attack):
    """Kills an unrelated process, through ``os.kill`` and through libc."""

    def attack(self, notes: Notes) -> None:
        pid = int(os.environ["ATTACK_PID"])
        _try(notes, "os.kill", lambda: os.kill(pid, signal.SIGKILL))
        libc = ctypes.CDLL(None, use_errno=True)
        notes.append(f"libc kill {libc.kill(pid, signal.SIGKILL)}")


class Listener(Attack):
    """Listens on a port and waits for someone to connect in."""

    def attack(self, notes: Notes) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("127.0.0.1", int(os.environ["ATTACK_BIND_PORT"])))
            server.listen(4)
            server.settimeout(4)
            _try(notes, "accept", server.accept)
        finally:
            server.close()


class RaiseLimit(Attack):
    """Raises its address-space limit to unlimited, and its open-files limit."""

    def attack(self, notes: Notes) -> None:
        unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        _try(notes, "raise AS", lambda: resource.setrlimit(resource.RLIMIT_AS, unlimited))
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        _try(notes, "raise NOFILE",
             lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 2, hard * 2)))  # fmt: skip
        notes.append(f"AS {resource.getrlimit(resource.RLIMIT_AS)}")


class Survivor(Attack):
    """Forks a process that leaves the session and connects out after the replay ended."""

    def attack(self, notes: Notes) -> None:
        from debugger.replay import guard

        guard._PROCESS_EVENTS = frozenset()  # type: ignore[misc]
        guard._NETWORK_EVENTS.clear()
        pid = os.fork()
        if pid == 0:  # the survivor: never returns into the replay
            try:
                os.setsid()
                time.sleep(2.5)
                with contextlib.suppress(OSError):
                    connect_out()
                with contextlib.suppress(OSError):
                    write_outside("victim-a.txt")
                time.sleep(30)
            finally:
                os._exit(0)
        notes.append("forked")


class HangingForker(Survivor):
    """Forks a survivor, then hangs: only the deadline ends the replay, and it must take both."""

    def attack(self, notes: Notes) -> None:
        super().attack(notes)
        while True:
            time.sleep(0.05)


class ForgedEnd(Attack):
    """Prints the old protocol's end event, and sends a forged ``end`` on the real pipe."""

    def attack(self, notes: Notes) -> None:
        forged = {"event": "end", "outcome": "completed", "reason": "FORGED: all good"}
        print(json.dumps(forged), flush=True)
        for obj in gc.get_objects():
            if type(obj).__name__ == "Writer" and type(obj).__module__.endswith("protocol"):
                obj.send("end", why="done", step_index=2, detail="FORGED: all good")
                notes.append("forged")


class ForgedEndAndExit(Attack):
    """Sends a well-formed ``end`` and exits at once, as the real loop would."""

    def attack(self, notes: Notes) -> None:
        for obj in gc.get_objects():
            if type(obj).__name__ == "Writer" and type(obj).__module__.endswith("protocol"):
                obj.send("end", why="done", step_index=2, detail="FORGED: all good")
                os._exit(0)


class EnvReader(Attack):
    """Notes every variable it can see."""

    def attack(self, notes: Notes) -> None:
        notes.extend(f"env {name}" for name in sorted(os.environ))


class Looker(Attack):
    """Looks at what it should not see: the store, the source, earlier replays, $HOME."""

    def attack(self, notes: Notes) -> None:
        for name in ("ATTACK_STORE", "ATTACK_SOURCE", "ATTACK_LEDGER"):
            notes.append(f"{name} {Path(os.environ[name]).stat().st_size}")
        replays = Path(os.environ["ATTACK_STORE"]).with_suffix(".replays")
        notes.append(f"replays {sorted(p.name for p in replays.iterdir())}")
        notes.append(f"home {Path('~').expanduser()} {sorted(os.listdir(Path.home()))}")
        notes.append(f"root {sorted(os.listdir('/'))}")
        _try(notes, "/root", lambda: os.listdir("/root"))


class UnixSocket(Attack):
    """Connects to a Unix socket in the project directory (a read-only mount allows it), with
    the guard's tables emptied: only the seccomp filter stands in the way."""

    def attack(self, notes: Notes) -> None:
        import _socket

        from debugger.replay import guard

        guard._NETWORK_EVENTS.clear()

        def connect() -> None:
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                _socket.socket.connect(s, os.environ["ATTACK_UNIX"])
                s.send(b"escaped")
            finally:
                s.close()

        _try(notes, "unix connect", connect)
        libc = ctypes.CDLL(None, use_errno=True)
        notes.append(f"libc socket {libc.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)}")
        _try(notes, "socketpair", socket.socketpair)


class Explained(Attack):
    """Reaches for a database server the ordinary way: the hooks name what was tried."""

    def attack(self, notes: Notes) -> None:
        _try(notes, "connect", lambda: socket.create_connection(("10.0.0.5", 5432), timeout=2))


def write_pg_row(url: str, value: str) -> None:
    """Insert ``value`` into ``replay_target`` through psycopg (libpq, in C)."""
    import psycopg

    with psycopg.connect(url, connect_timeout=3) as con:
        con.execute("INSERT INTO replay_target (value) VALUES (%s)", (value,))


class PgWriter(Attack):
    """Writes to PostgreSQL with psycopg, as a real agent's tool might."""

    def attack(self, notes: Notes) -> None:
        _try(notes, "psycopg", lambda: write_pg_row(os.environ["AGENT_PG_URL"], "from-replay"))


guard_globals = GuardGlobals()
gc_closure = GcClosure()
fork_exec = ForkExec()
multiprocessing_spawn = MultiprocessingSpawn()
ctypes_libc = CtypesLibc()
file_ops = FileOps()
bare_file_ops = BareFileOps()
store_writer = StoreWriter()
sqlite_uri_trick = SqliteUriTrick()
killer = Killer()
listener = Listener()
raise_limit = RaiseLimit()
survivor = Survivor()
hanging_forker = HangingForker()
forged_end = ForgedEnd()
forged_end_and_exit = ForgedEndAndExit()
env_reader = EnvReader()
looker = Looker()
explained = Explained()
unix_socket = UnixSocket()
pg_writer = PgWriter()
