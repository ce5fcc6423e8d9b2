"""The red team's attacks on the kernel sandbox (tests/replay/attacks_kernel.py): each is
contained, checked as issue 17's are (:class:`tests.replay.test_replay_attacks.Attacked`:
nothing outside changed, nothing connected, nothing left running)."""

from __future__ import annotations

import os
import resource
import socket
import time
from pathlib import Path

import pytest

from debugger.replay import ReplayReport, cgroup, process, replay
from debugger.replay.isolation import PROCESSES, environment
from debugger.replay.protocol import MAX_VIOLATIONS
from tests.replay import test_replay_attacks as issue17
from tests.replay.test_replay_attacks import Attacked, Project, notes

# issue 17's fixtures: the attacked project on the import path, the listener
project, listener, attacked = issue17.project, issue17.listener, issue17.attacked

KERNEL_ATTACKS = "tests.replay.attacks_kernel"


def _cgroups() -> bool:
    group = cgroup.create(8, 64)
    if group is not None:
        group.remove()
    return group is not None


needs_cgroup = pytest.mark.skipif(
    not _cgroups(), reason="no cgroup can be created here (docs/replay.md: not bounded then)"
)


def kernel_attack(
    attacked: Attacked, agent: str, memory_mb: int = 2048, **env: str
) -> ReplayReport:
    """Replays one of the red team's agents (``attacked.replay`` names issue 17's module)."""
    attacked.env.update(env)
    report = replay(attacked.project.store, "ledger-done", 2, f"{KERNEL_ATTACKS}:{agent}",
                    mode="lenient", timeout_s=60, memory_mb=memory_mb,
                    env=[f"{k}={v}" for k, v in attacked.env.items()])  # fmt: skip
    attacked.check(report)
    return report


def test_the_hosts_sysctls_are_read_only(attacked: Attacked, project: Project) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    report = kernel_attack(attacked, "host_sysctl")
    assert notes(report, project) == [
        "kernel/core_pattern: errno 30",
        "vm/overcommit_ratio: errno 30",
    ]  # EROFS
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


def test_the_kernel_keyring_is_out_of_reach(attacked: Attacked, project: Project) -> None:
    report = kernel_attack(attacked, "keyring")
    assert notes(report, project) == ["keyring errno 13"]


def test_a_unix_socket_through_io_uring(attacked: Attacked, project: Project) -> None:
    path = project.root / "ring.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(4)
        server.setblocking(False)
        try:
            report = kernel_attack(attacked, "io_uring_unix_socket", ATTACK_UNIX=str(path))
            with pytest.raises(BlockingIOError):
                server.accept()
        finally:
            path.unlink()
    assert notes(report, project) == ["io_uring unix connect: OSError"]


def test_a_message_huge_once_parsed_is_refused_unparsed(attacked: Attacked) -> None:
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = kernel_attack(attacked, "flood")
    assert report.outcome == "sandbox_violation"
    assert "memory" in report.reason
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - grew  # KiB
    assert grew < 200 * 1024, f"the parent grew by {grew // 1024} MB"


@needs_cgroup
def test_a_fork_bomb_is_bounded_by_the_kernel(attacked: Attacked, project: Project) -> None:
    report = kernel_attack(attacked, "fork_bomb")
    [found] = notes(report, project)
    assert int(found.removeprefix("forked ")) < PROCESSES, found
    # and the group goes: with the replay, or once its thousand processes are reaped
    deadline = time.monotonic() + 60
    left = [1]
    while left and time.monotonic() < deadline:
        cgroup.sweep()
        left = [g for parent, _ in cgroup._settings(1, 1) or []
                for g in parent.glob(f"stepscope-replay-{os.getpid()}-*")]  # fmt: skip
        time.sleep(0.2)
    assert not left


@needs_cgroup
def test_memory_outside_the_address_space_is_bounded(attacked: Attacked, project: Project) -> None:
    report = kernel_attack(attacked, "memfd_fill", memory_mb=512)
    # the sandbox's cgroup (512 MB + its two 256 MB tmpfs) is full before 1.5 GB: the
    # kernel kills the child, and the parent says why
    assert report.outcome == "memory_limit", report.reason
    assert "kernel stopped the replay at its memory limit (512 MB" in report.reason


def test_credentials_next_to_the_code_are_masked(
    attacked: Attacked, project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {".env": "DATABASE_URL=postgres://prod", ".pgpass": "prod:5432:*:app:hunter2",
               ".ssh/id_ed25519": "PRIVATE KEY",
               ".aws/credentials": "aws_secret_access_key=x"}  # fmt: skip
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    (home / ".pgpass").write_text("prod:5432:*:app:hunter2")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.syspath_prepend(str(home))  # a notebook started in the home directory
    for name, text in secrets.items():
        (project.root / name).parent.mkdir(exist_ok=True)
        (project.root / name).write_text(text)
    try:
        report = kernel_attack(Attacked(project, attacked.listener), "secret_reader",
                               ATTACK_HOME=str(home))  # fmt: skip
    finally:
        for name in secrets:
            (project.root / name).unlink()
        for d in (".ssh", ".aws"):
            (project.root / d).rmdir()
    found = notes(report, project)
    # a masked file is /dev/null on a nodev mount: not readable; a masked directory is empty
    assert found == [".env: PermissionError", ".pgpass: PermissionError",
                     ".ssh/id_ed25519: FileNotFoundError", ".aws/credentials: FileNotFoundError",
                     "home: FileNotFoundError"]  # fmt: skip


def test_inside_the_sandbox(
    attacked: Attacked, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Strong negatives: nothing of the parent is inherited (the log, as stdout and stderr,
    and the protocol pipe only), the sandbox's first process cannot be killed from inside
    and the parent is not visible, no /sys, and no user namespace of its own (which, made,
    gave no write: the mounts it copies stay read-only, but every capability in it)."""
    monkeypatch.setenv("PGPASSWORD", "hunter2")  # bwrap itself (the sandbox's init) lacks it too
    passed = [f"{k}={v}" for k, v in attacked.env.items()]
    report = kernel_attack(attacked, "inside")
    assert notes(report, project) == [
        "fds ['agent.log', 'agent.log', 'null', 'pipe']",
        "processes 2",  # bwrap's init and the child
        "kill 1: 0, alive True",  # a namespace's init ignores signals it has no handler for
        "kill parent: 0",  # its parent is that init: the replay's parent is not visible
        "reopen for writing -1 errno 30",  # /proc/self/fd/N reopens on the read-only mount
        "/dev/tty -1 errno 6",  # ENXIO: a new session, no terminal (no TIOCSTI)
        f"init env {sorted(environment([], '/tmp', passed))}",  # bwrap's: the same as the child's
        "/sys: FileNotFoundError",
        "/sys/fs/cgroup: FileNotFoundError",
        "thread: ok",
        "unshare -1",  # EPERM: no user namespace of its own (seccomp)
    ]
    assert report.outcome == "completed"


def test_a_flood_of_small_messages_is_cut_short(attacked: Attacked) -> None:
    # each is valid, but 300 000 of them kept the parent busy long after the deadline
    # (judging, the report, the import) and filled report.json
    report = kernel_attack(attacked, "many_small")
    assert report.outcome == "sandbox_violation"
    assert f"more than {MAX_VIOLATIONS} refusals" in report.reason


@pytest.mark.parametrize(("files", "file_mb"), [(8, 64), (3000, 0)])
def test_filling_the_disk_through_the_work_directory(
    attacked: Attacked, monkeypatch: pytest.MonkeyPatch, files: int, file_mb: int
) -> None:
    # the bounds, lowered for the test: 512 MB (8 files of 64 MB, each under the file-size
    # limit) or 3000 empty files (inodes) must not fit
    monkeypatch.setattr(process, "WORK_MB", 256)
    monkeypatch.setattr(process, "WORK_FILES", 1000)
    report = kernel_attack(attacked, "disk_fill", ATTACK_FILES=str(files),
                           ATTACK_FILE_MB=str(file_mb))  # fmt: skip
    assert report.outcome == "sandbox_violation"
    assert "it filled its work directory past 256 MB or 1000 files" in report.reason


def test_the_childs_text_cannot_drive_the_terminal(attacked: Attacked) -> None:
    report = kernel_attack(attacked, "terminal_escapes")
    text = "\n".join(report.summary_lines())
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert "sandbox violation at step 2: network: ?[2J?]0;owned??[1Acompleted verdict" in text
