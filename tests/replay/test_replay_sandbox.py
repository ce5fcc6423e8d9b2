"""The sandbox holds: no network, no writes outside the output, limits stop runaway agents."""

from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from debugger.replay import replay
from debugger.store import Store
from tests.fixtures.replay import RecordedRuns

AGENTS = "tests.replay.agents"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[socket.socket]:
    """A real listening socket on 127.0.0.1."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.3)
    yield s
    s.close()


def test_network_is_blocked_and_recorded(
    recorded_runs: RecordedRuns, server: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_TEST_PORT", str(server.getsockname()[1]))
    report = replay(recorded_runs.store_path, "ledger-done", 3, f"{AGENTS}:network_agent",
                    mode="lenient", env=["REPLAY_TEST_PORT"])  # fmt: skip
    with pytest.raises(TimeoutError):
        server.accept()  # nothing ever connected
    network = [v for v in report.violations if v.kind == "network"]
    assert len(network) >= 2 and all(v.step_index == 4 for v in network[:2])
    assert "127.0.0.1" in network[0].detail
    assert report.outcome == "completed"  # the agent saw a failed connection and went on
    state_diff = [r for d in report.divergences for r in d.diff]
    assert any("NetworkBlocked" in str(r["new"]) for r in state_diff)


def test_an_endless_agent_is_stopped_by_the_step_limit(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:endless_agent",
                    mode="lenient", max_steps=7)  # fmt: skip
    assert report.outcome == "step_limit"
    assert report.reason == "stopped by the replay's step limit (7 steps)"
    assert report.last_step == 7 and len(report.steps) == 7


def test_a_hanging_agent_is_stopped_by_the_wall_clock_limit(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:sleeper_agent",
                    timeout_s=1.5)  # fmt: skip
    assert report.outcome == "timeout"
    assert report.reason == "stopped by the wall-clock limit of 1.5 s"
    assert report.steps == [] and report.last_step == 0
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        run = store.run(report.replay_run_id)
    assert run.status == "failed" and "wall-clock limit" in (run.last_error or "")


def test_a_hungry_agent_is_stopped_by_the_memory_limit(recorded_runs: RecordedRuns) -> None:
    report = replay(recorded_runs.store_path, "ledger-done", 0, f"{AGENTS}:hungry_agent",
                    memory_mb=400)  # fmt: skip
    assert report.outcome == "memory_limit"
    assert "out of memory (limit 400 MB)" in report.reason


def _snapshot(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(p == s or s in p.parents for s in skip):
            files[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return files


@pytest.mark.parametrize("isolation", ["kernel", "hooks"])
def test_no_write_outside_the_replays_own_output(
    recorded_runs: RecordedRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    # on the import path, so the kernel sandbox shows it (read-only): the write is tried
    monkeypatch.syspath_prepend(str(tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    store = work / "store.duckdb"
    shutil.copy(recorded_runs.store_path, store)
    outside = tmp_path / "escaped.txt"
    monkeypatch.setenv("REPLAY_TEST_PATH", str(outside))
    watched = [recorded_runs.source.parent, work, REPO / "sample_checkpoints" / "data"]
    before = {r: _snapshot(r, (recorded_runs.store_path.parent / "store.replays",))
              for r in watched}  # fmt: skip
    report = replay(store, "ledger-crash", 2, f"{AGENTS}:file_writer_agent",
                    mocks="tests.replay.mocks_crash", mode="lenient",
                    env=["REPLAY_TEST_PATH"], isolation=isolation)  # fmt: skip
    assert not outside.exists() and report.isolation == isolation
    assert [(v.step_index, v.kind) for v in report.violations] == [
        (step, kind) for step in (3, 4, 5) for kind in ("file_write", "process")
    ]
    assert report.duplicate_writes and report.duplicate_writes[0].idempotency_key == "pay-B2"
    output = Path(report.output_dir)
    assert output.parent == work / "store.replays"
    for root in watched:
        after = _snapshot(root, (recorded_runs.store_path.parent / "store.replays",))
        changed = {p for p in set(before[root]) | set(after)
                   if before[root].get(p) != after.get(p)}  # fmt: skip
        allowed = {str(store), str(store) + ".wal"}
        assert {p for p in changed if p not in allowed and not p.startswith(str(output))} == set()
    assert _snapshot(recorded_runs.ledger.parent)[str(recorded_runs.ledger)]


def test_the_sandbox_child_starts_without_the_store_libraries() -> None:
    code = (
        "import sys, debugger.replay.child; "
        "print(sorted({'duckdb', 'pandas', 'streamlit'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
