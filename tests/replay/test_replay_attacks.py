"""Every escape issue 17 found, as an agent (tests/replay/attacks.py), replayed under kernel
isolation: nothing outside changes, nothing connects, nothing is left running, and the
report names a violation or the outcome the parent itself observed.

The project directory (store, source database, ledger, victim files) is on the import
path, as an agent's own project would be, so the sandbox shows it read-only: every attack
really reaches its target and is refused by the kernel, not by the target being absent.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from debugger.replay import ReplayReport, replay
from debugger.store import Store
from tests.fixtures.replay import RecordedRuns, record_runs

ATTACKS = "tests.replay.attacks"
VICTIMS = [f"victim-{c}.txt" for c in "abcde"]


@dataclass
class Project:
    """The attacked project: its directory and what in it must never change."""

    root: Path
    store: Path
    source: Path
    ledger: Path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("project")
    runs = record_runs(root)
    for name in VICTIMS:
        (root / name).write_text("original")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))  # the agent's project: on its import path
        yield Project(root, runs.store_path, runs.source, runs.ledger)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on 127.0.0.1 that no replay may reach."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    yield s
    s.close()


def _files(project: Project) -> dict[str, str]:
    skip = (project.store, project.store.with_name(project.store.name + ".wal"))
    return {
        str(p.relative_to(project.root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(project.root.rglob("*"))
        if p.is_file() and p not in skip and "store.replays" not in p.parts
    } | {str(p): "link" for p in project.root.iterdir() if p.is_symlink()}


def _store_facts(project: Project) -> dict[str, Any]:
    """What of the store a replay must leave alone: everything but its own new run."""
    with Store.open(project.store, read_only=True) as store:
        return {
            "tables": store.sql("SELECT table_name FROM information_schema.tables ORDER BY 1"),
            "quarantine": store.sql("SELECT count(*) FROM quarantine"),
            "originals": store.sql(
                "SELECT run_id, checkpoint_id, metadata FROM checkpoints "
                "WHERE run_id NOT LIKE '%~replay-%' ORDER BY 1, 2"
            ),
            "runs": store.sql("SELECT run_id, status FROM runs WHERE replay_of IS NULL ORDER BY 1"),
        }


def _marked(mark: str) -> list[int]:
    """Processes on this machine whose environment carries ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


class Attacked:
    """Runs one attack replay and checks that it was contained."""

    def __init__(self, project: Project, listener: socket.socket) -> None:
        self.project = project
        self.listener = listener
        self.mark = uuid.uuid4().hex
        self.files = _files(project)
        self.store = _store_facts(project)
        self.env = {
            "ATTACK_PORT": str(listener.getsockname()[1]),
            "ATTACK_DIR": str(project.root),
            "ATTACK_STORE": str(project.store),
            "ATTACK_SOURCE": str(project.source),
            "ATTACK_LEDGER": str(project.ledger),
            "ATTACK_MARK": self.mark,
        }

    def replay(
        self, agent: str, wait_after: float = 0.0, timeout_s: float = 60, **env: str
    ) -> ReplayReport:
        self.env.update(env)
        report = replay(self.project.store, "ledger-done", 2, f"{ATTACKS}:{agent}",
                        mode="lenient", timeout_s=timeout_s,
                        env=[f"{k}={v}" for k, v in self.env.items()])  # fmt: skip
        time.sleep(wait_after)
        self.check(report)
        return report

    def check(self, report: ReplayReport) -> None:
        assert report.isolation == "kernel"
        assert _files(self.project) == self.files, "a file outside the replay changed"
        assert _store_facts(self.project) == self.store, "the store changed"
        with pytest.raises(BlockingIOError):
            self.listener.accept()  # nothing ever connected
        assert _marked(self.mark) == [], "a process of the replay is still running"
        assert "FORGED" not in orjson.dumps(report.to_dict()).decode()


@pytest.fixture
def attacked(project: Project, listener: socket.socket) -> Attacked:
    return Attacked(project, listener)


def notes(report: ReplayReport, project: Project) -> list[str]:
    """What the attack agent noted, from the replay's stored state."""
    with Store.open(project.store, read_only=True) as store:
        state = store.checkpoint(report.replay_run_id).working_state
    if os.environ.get("ATTACK_NOTES"):
        print(report.agent, report.outcome, report.reason, state["attack"], report.violations)
    return list(state["attack"])


def kinds(report: ReplayReport) -> set[str]:
    return {v.kind for v in report.violations}


def test_clearing_the_guards_globals(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("guard_globals")
    assert report.outcome == "completed"
    found = notes(report, project)
    assert "connect: ConnectionRefusedError" in found or "connect: OSError" in found
    assert "write: OSError" in found  # read-only file system
    assert "shell: OSError" in found


def test_widening_the_hooks_roots_through_gc(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("gc_closure")
    found = notes(report, project)
    assert "roots widened" in found and "write: OSError" in found
    assert "connect: ok" not in found


@pytest.mark.parametrize("agent", ["fork_exec", "multiprocessing_spawn"])
def test_a_fresh_interpreter_without_the_hooks(
    attacked: Attacked, project: Project, agent: str
) -> None:
    report = attacked.replay(agent)
    assert "payload exit 0" in notes(report, project)  # neither connected nor wrote


def test_ctypes_calls_into_libc(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("ctypes_libc")
    found = " ".join(notes(report, project))
    assert "libc open -1 write -1 errno 30" in found  # EROFS: the file is there, read-only
    assert "libc connect -1" in found


def test_removing_renaming_truncating_linking_outside(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("file_ops")
    found = notes(report, project)
    assert not [n for n in found if n.endswith(": ok") and not n.startswith("write through")]
    assert "file_write" in kinds(report)  # the hooks say what was tried
    assert any(v.detail.startswith("remove ") for v in report.violations)


def test_the_same_with_the_guard_emptied(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("bare_file_ops")
    found = notes(report, project)
    # the kernel refuses each (read-only file system; a hard link cannot cross mounts); the
    # write "through the link" only creates a new file in the work directory
    assert not [n for n in found if n.endswith(": ok") and not n.startswith("write through")]
    assert report.violations == []


def test_duckdb_on_the_store(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("store_writer")
    assert notes(report, project) == [n for n in notes(report, project) if not n.endswith("ok")]


def test_sqlite_uri_mode_trick_on_the_source(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("sqlite_uri_trick")
    assert notes(report, project) == ["source: WriteBlocked", "ledger: WriteBlocked"]
    assert [v.kind for v in report.violations] == ["file_write", "file_write"]


def test_killing_an_unrelated_process(attacked: Attacked, project: Project) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        report = attacked.replay("killer", ATTACK_PID=str(victim.pid))
        assert victim.poll() is None, "the replay killed a process outside it"
        assert "os.kill: ProcessBlocked" in notes(report, project)
        assert "signal" in kinds(report)
    finally:
        victim.kill()
        victim.wait()


def test_listening_for_an_inbound_connection(attacked: Attacked, project: Project) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    reached: list[bool] = []
    done = threading.Event()

    def knock() -> None:
        while not done.is_set():
            with socket.socket() as s, contextlib.suppress(OSError):
                s.settimeout(0.2)
                s.connect(("127.0.0.1", port))
                reached.append(True)
            time.sleep(0.05)

    thread = threading.Thread(target=knock)
    thread.start()
    try:
        report = attacked.replay("listener", ATTACK_BIND_PORT=str(port))
    finally:
        done.set()
        thread.join()
    assert reached == [] and "accept: TimeoutError" in notes(report, project)


def test_raising_the_memory_limit(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("raise_limit")
    found = notes(report, project)
    limit = report.limits["memory_mb"] * 1024 * 1024
    assert "raise AS: ValueError" in found and "raise NOFILE: ValueError" in found
    assert f"AS ({limit}, {limit})" in found


def test_a_forked_survivor_dies_with_the_replay(attacked: Attacked, project: Project) -> None:
    # the survivor connects out 2.5 s after its fork: wait past that, then check
    report = attacked.replay("survivor", wait_after=4.0)
    assert "forked" in notes(report, project)


def test_at_the_deadline_the_whole_sandbox_is_killed(attacked: Attacked) -> None:
    report = attacked.replay("hanging_forker", timeout_s=3, wait_after=1.0)
    assert report.outcome == "timeout"  # and check(): no process of it is left


def test_a_forged_end_message_is_a_violation(attacked: Attacked) -> None:
    report = attacked.replay("forged_end")
    assert report.outcome == "sandbox_violation"
    assert "cannot be trusted" in report.reason and report.steps == []


def test_a_well_formed_forged_end_is_worded_by_the_parent(attacked: Attacked) -> None:
    report = attacked.replay("forged_end_and_exit")
    assert (report.outcome, report.reason) == ("completed", "the agent finished at step 2")


def test_the_environment_is_cleared(
    attacked: Attacked, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter3")
    report = attacked.replay("env_reader")
    seen = {n.removeprefix("env ") for n in notes(report, project)}
    assert "PGPASSWORD" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    allowed = {"PATH", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
               "PYTHONNOUSERSITE", "HOME", "TMPDIR", "TEMP", "TMP", "LANG", "LC_ALL",
               "LC_CTYPE", "TZ", "PWD"}  # fmt: skip
    assert seen - allowed == set(attacked.env)


def test_the_store_sources_and_earlier_replays_are_not_visible(
    attacked: Attacked, project: Project
) -> None:
    attacked.replay("explained")  # an earlier replay, whose files the next must not see
    report = attacked.replay("looker")
    found = notes(report, project)
    assert "ATTACK_STORE 0" in found and "ATTACK_SOURCE 0" in found  # masked
    assert f"ATTACK_LEDGER {project.ledger.stat().st_size}" in found  # read-only, visible
    this = Path(report.output_dir).name
    assert f"replays ['{this}']" in found  # earlier replays' inputs are hidden


def test_a_unix_socket_in_a_visible_directory(attacked: Attacked, project: Project) -> None:
    path = project.root / "db.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(4)
        server.setblocking(False)
        try:
            report = attacked.replay("unix_socket", ATTACK_UNIX=str(path))
            with pytest.raises(BlockingIOError):
                server.accept()
        finally:
            path.unlink()
    # socket(AF_UNIX) refused by the seccomp filter; socketpair (asyncio's) still works
    assert notes(report, project) == ["unix connect: PermissionError", "libc socket -1",
                                      "socketpair: ok"]  # fmt: skip


def test_a_blocked_call_is_explained(attacked: Attacked, project: Project) -> None:
    report = attacked.replay("explained")
    assert [(v.kind, v.detail) for v in report.violations] == [("network", "connect 10.0.0.5:5432")]
    assert "connect: NetworkBlocked" in notes(report, project)


def test_a_psycopg_agent_cannot_reach_postgres_in_replay(
    attacked: Attacked, project: Project, pg_url: str
) -> None:
    import psycopg

    from tests.replay.attacks import write_pg_row

    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("CREATE TABLE IF NOT EXISTS replay_target (value TEXT)")
        con.execute("DELETE FROM replay_target")
    write_pg_row(pg_url, "outside")  # the same code, outside replay, reaches it
    report = attacked.replay("pg_writer", AGENT_PG_URL=pg_url)
    assert notes(report, project) == ["psycopg: OperationalError"]
    with psycopg.connect(pg_url) as con:
        rows = con.execute("SELECT value FROM replay_target").fetchall()
    assert rows == [("outside",)]


def test_hooks_mode_does_not_contain_a_survivor(
    recorded_runs: RecordedRuns, tmp_path: Path, listener: socket.socket
) -> None:
    """The weaker mode, shown: a forked survivor outlives the replay (and the check sees it)."""
    mark = uuid.uuid4().hex
    env = {"ATTACK_PORT": str(listener.getsockname()[1]), "ATTACK_DIR": str(tmp_path),
           "ATTACK_MARK": mark}  # fmt: skip
    report = replay(recorded_runs.store_path, "ledger-done", 2, f"{ATTACKS}:survivor",
                    mode="lenient", isolation="hooks",
                    env=[f"{k}={v}" for k, v in env.items()])  # fmt: skip
    survivors = _marked(mark)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert report.isolation == "hooks" and survivors


@pytest.mark.parametrize("agent", ["guard_globals", "ctypes_libc", "fork_exec"])
def test_the_attacks_are_real_under_hooks_alone_they_get_out(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    """The same agents under --isolation=hooks, on a scratch copy: they do reach the
    listener or write outside, so the kernel runs above are what contains them."""
    root = tmp_path / "scratch"
    root.mkdir()
    runs = record_runs(root)
    for name in VICTIMS:
        (root / name).write_text("original")
    monkeypatch.syspath_prepend(str(root))
    mark = uuid.uuid4().hex
    env = {"ATTACK_PORT": str(listener.getsockname()[1]), "ATTACK_DIR": str(root),
           "ATTACK_MARK": mark}  # fmt: skip
    report = replay(runs.store_path, "ledger-done", 2, f"{ATTACKS}:{agent}", mode="lenient",
                    isolation="hooks", env=[f"{k}={v}" for k, v in env.items()])  # fmt: skip
    for pid in _marked(mark):
        os.kill(pid, signal.SIGKILL)
    changed = [v for v in VICTIMS if (root / v).read_text() != "original"]
    try:
        connection, _ = listener.accept()
        connection.close()
        connected = True
    except BlockingIOError:
        connected = False
    assert report.isolation == "hooks" and (changed or connected), report.reason


def test_the_c_driver_reaches_postgres_under_hooks_alone(
    recorded_runs: RecordedRuns, pg_url: str
) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("CREATE TABLE IF NOT EXISTS replay_target (value TEXT)")
        con.execute("DELETE FROM replay_target")
    replay(recorded_runs.store_path, "ledger-done", 2, f"{ATTACKS}:pg_writer", mode="lenient",
           isolation="hooks", env=[f"AGENT_PG_URL={pg_url}"])  # fmt: skip
    with psycopg.connect(pg_url) as con:
        rows = con.execute("SELECT value FROM replay_target").fetchall()
    assert rows == [("from-replay",)]  # what --isolation=hooks does not stop
