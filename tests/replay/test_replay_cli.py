"""``stepscope replay`` driven in-process: output, JSON, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import debugger.store as store_module
from debugger.cli import main
from debugger.store import Store
from tests.fixtures.replay import RecordedRuns

AGENT = "tests.replay.agents:ledger_agent"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


def test_replay_prints_the_comparison(recorded_runs: RecordedRuns) -> None:
    code, out, _ = _run("ledger-done", "--from", "1", "--agent", "tests.replay.agents:no_pay_agent",
                        "--store", str(recorded_runs.store_path))  # fmt: skip
    assert code == 0
    assert "diverged - step 3: the original made the write pay (key pay-A1)" in out
    assert "first divergence:" in out and "not repeated: pay key=pay-A1" in out


def test_replay_json_has_stable_keys(recorded_runs: RecordedRuns) -> None:
    code, out, _ = _run("ledger-done", "--from", "2", "--agent", "tests.replay.agents:no_pay_agent",
                        "--baseline", AGENT, "--json", "--store", str(recorded_runs.store_path),
                        "--max-steps", "5", "--timeout", "30", "--memory-mb", "1024")  # fmt: skip
    assert code == 0
    both = json.loads(out)
    doc, base = both["replay"], both["baseline"]
    assert doc["outcome"] == "diverged" and doc["missing_writes"][0]["idempotency_key"] == "pay-A1"
    assert base["agent"] == AGENT and base["outcome"] == "completed"
    assert [d["idempotency_key"] for d in base["duplicate_writes"]] == ["pay-A1"]
    assert doc["limits"] == {"timeout_s": 30.0, "max_steps": 5, "memory_mb": 1024}
    keys = {"replay_run_id", "first_divergence", "duplicate_writes", "missing_writes", "steps",
            "violations", "ledger", "budgets_start", "budgets_end"}  # fmt: skip
    assert keys <= set(doc)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--from", "0", "--agent", AGENT], "error: no run 'nope' in the store."),
        (["ledger-done", "--from", "77", "--agent", AGENT],
         "error: run 'ledger-done' has no step 77."),
        (["ledger-done", "--from", "0", "--agent", "no_such_module:agent"],
         "error: cannot import the agent no_such_module:agent: ModuleNotFoundError"),
        (["ledger-done", "--from", "0", "--agent", "tests.replay.agents:nothing"],
         "error: cannot import the agent tests.replay.agents:nothing: AttributeError"),
        (["ledger-done", "--from", "0", "--agent", "tests.replay.agents"],
         "error: agent 'tests.replay.agents' is not of the form module:attribute."),
        (["ledger-done", "--from", "0", "--agent", AGENT, "--mocks", "no.such.mocks"],
         "error: cannot import the mocks module no.such.mocks: ModuleNotFoundError"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    recorded_runs: RecordedRuns, args: list[str], message: str
) -> None:
    code, out, err = _run(*args, "--store", str(recorded_runs.store_path))
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1 and "Hint:" in err


def test_missing_store_is_one_line(tmp_path: Path) -> None:
    code, _, err = _run("r", "--from", "0", "--agent", AGENT, "--store", str(tmp_path / "x.duckdb"))
    assert (
        code == 2 and err.startswith("error: no store at") and not (tmp_path / "x.duckdb").exists()
    )


def test_a_store_held_by_the_app_is_one_line_with_a_hint(
    recorded_runs: RecordedRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)  # held throughout: no need to wait
    # another process holding the store, as `stepscope app` does (read-only)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; "
         f"c = duckdb.connect({str(recorded_runs.store_path)!r}, read_only=True); "
         "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        code, _, err = _run("ledger-done", "--from", "0", "--agent", AGENT,
                            "--store", str(recorded_runs.store_path))  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and err.count("\n") == 1
    assert "is held by another process or connection (the app" in err
    assert "Hint: stop `stepscope app`" in err


def test_without_bubblewrap_the_replay_refuses_to_start(
    recorded_runs: RecordedRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    before = sorted(recorded_runs.store_path.parent.rglob("*"))
    code, out, err = _run("ledger-done", "--from", "2", "--agent", AGENT,
                          "--store", str(recorded_runs.store_path))  # fmt: skip
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "error: kernel isolation needs bubblewrap (bwrap), which is not installed. Hint: "
        "install it (apt-get install bubblewrap, dnf install bubblewrap), or pass "
        "--isolation=hooks (isolation='hooks') for the weaker in-process guard."
    ]
    assert sorted(recorded_runs.store_path.parent.rglob("*")) == before  # nothing written


def test_on_another_system_the_replay_refuses_to_start(
    recorded_runs: RecordedRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    code, _, err = _run("ledger-done", "--from", "2", "--agent", AGENT,
                        "--store", str(recorded_runs.store_path))  # fmt: skip
    assert code == 2 and "kernel isolation needs Linux namespaces" in err
    assert "--isolation=hooks" in err


def test_hooks_mode_is_named_in_every_report(recorded_runs: RecordedRuns) -> None:
    code, out, _ = _run("ledger-done", "--from", "3", "--agent", AGENT, "--isolation", "hooks",
                        "--store", str(recorded_runs.store_path))  # fmt: skip
    assert code == 0 and "isolation: hooks only (in-process guard, the weaker mode" in out
    code, out, _ = _run("ledger-done", "--from", "3", "--agent", AGENT, "--json",
                        "--store", str(recorded_runs.store_path))  # fmt: skip
    report = json.loads(out)["replay"]
    assert report["isolation"] == "kernel"
    saved = json.loads((Path(report["output_dir"]) / "report.json").read_text())
    assert saved["isolation"] == "kernel"
    with Store.open(recorded_runs.store_path, read_only=True) as store:
        stored = store.checkpoint(report["replay_run_id"]).metadata["replay"]
    assert stored["isolation"] == "kernel"  # the stored run says it too


def test_an_env_name_that_is_not_set_is_bad_input(recorded_runs: RecordedRuns) -> None:
    code, _, err = _run("ledger-done", "--from", "3", "--agent", AGENT, "--env", "NOT_SET_X1",
                        "--store", str(recorded_runs.store_path))  # fmt: skip
    assert code == 2
    assert err.strip() == (
        "error: --env NOT_SET_X1: NOT_SET_X1 is not set in this environment. Hint: set it "
        "first, or pass --env NOT_SET_X1=VALUE."
    )


def test_without_user_namespaces_the_replay_says_so(
    recorded_runs: RecordedRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bwrap that fails the way it does where unprivileged user namespaces are disabled
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    out_dir = tmp_path / "out"
    code, _, err = _run("ledger-done", "--from", "2", "--agent", AGENT, "--output", str(out_dir),
                        "--store", str(recorded_runs.store_path))  # fmt: skip
    assert code == 2 and not out_dir.exists()
    assert err.startswith(
        "error: bubblewrap could not create the sandbox: bwrap: setting up uid map: "
        "Permission denied. Hint: unprivileged user namespaces may be disabled"
    )
    assert "--isolation=hooks" in err and len(err.strip().splitlines()) == 1
