"""The red team's attacks on the kernel sandbox (tests/replay/attacks_kernel.py): each is
contained, checked as issue 17's are (:class:`tests.replay.test_replay_attacks.Attacked`:
nothing outside changed, nothing connected, nothing left running)."""

from __future__ import annotations

import resource
import socket
from pathlib import Path

import pytest

from debugger.replay import ReplayReport, replay
from tests.replay.test_replay_attacks import (  # noqa: F401 (fixtures)
    Attacked,
    Project,
    attacked,
    listener,
    notes,
    project,
)

KERNEL_ATTACKS = "tests.replay.attacks_kernel"


def kernel_attack(attacked: Attacked, agent: str, **env: str) -> ReplayReport:
    """Replays one of the red team's agents (``attacked.replay`` names issue 17's module)."""
    attacked.env.update(env)
    report = replay(attacked.project.store, "ledger-done", 2, f"{KERNEL_ATTACKS}:{agent}",
                    mode="lenient", timeout_s=60,
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
