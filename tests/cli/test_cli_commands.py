"""The foundation commands (import, runs, show, app) driven in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.native import (
    effect_rows,
    native_rows,
    stepscope,
    stepscope_json,
    tool_call_rows,
    write_native_sqlite,
)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return write_native_sqlite(tmp_path / "n.sqlite", native_rows(), effect_rows(),
                               tool_call_rows())  # fmt: skip


def test_import_prints_counts_per_table_and_the_sum(source: Path) -> None:
    result = stepscope("import", source)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"sqlite (native) {source}"
    assert lines[1].split() == ["checkpoints", "read", "15", "imported", "15", "already",
                                "present", "0", "quarantined", "0"]  # fmt: skip
    assert lines[2].split()[:5] == ["effects", "read", "5", "imported", "5"]
    assert lines[3].split()[:5] == ["tool_calls", "read", "30", "imported", "30"]
    assert lines[4].startswith("read 50 rows = 50 imported + 0 already present + 0 quarantined")
    assert Path("stepscope.duckdb").exists()  # the default store, in the working directory


def test_json_outputs_are_one_document_with_stable_keys(source: Path) -> None:
    report = stepscope_json("import", source)
    assert list(report) == ["source_id", "kind", "flavour", "location", "tables",
                            "quarantine_reasons", "runs_touched", "seconds", "filtered",
                            "total"]  # fmt: skip
    runs = stepscope_json("runs")
    assert list(runs) == ["runs"]
    assert list(runs["runs"][0]) == [
        "run_id", "agent", "status", "status_reason", "first_step", "last_step",
        "checkpoint_count", "first_at", "last_at", "budgets", "limits", "model_versions",
        "schema_versions", "last_error", "pending_count", "replay_of", "replay_from_step",
    ]  # fmt: skip
    shown = stepscope_json("show", "run-1")
    assert list(shown) == ["run", "timeline"]
    assert [t["step_index"] for t in shown["timeline"]] == [0, 1, 2, 3, 4]
    assert shown["timeline"][4]["open_effects"] == 1
    ckpt = stepscope_json("show", "run-1", "--step", "4")["checkpoint"]
    by_id = stepscope_json("show", "run-1", "--checkpoint", ckpt["checkpoint_id"])
    assert by_id["checkpoint"] == ckpt


def test_store_comes_from_the_environment(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSCOPE_STORE", str(tmp_path / "env.duckdb"))
    assert stepscope("import", source).exit_code == 0
    assert (tmp_path / "env.duckdb").exists()
    assert not Path("stepscope.duckdb").exists()
    assert len(stepscope_json("runs")["runs"]) == 3
    result = stepscope("runs", "--store", tmp_path / "other.duckdb")
    assert result.exit_code == 2 and "no store at" in result.stderr


def test_runs_filters_and_text(source: Path) -> None:
    stepscope_json("import", source)

    def ids(*args: str) -> list[str]:
        return [r["run_id"] for r in stepscope_json("runs", *args)["runs"]]

    assert ids("--status", "completed") == ["run-0"]
    assert sorted(ids("--status", "crashed, completed")) == ["run-0", "run-1", "run-2"]
    assert ids("--agent", "nobody") == []
    assert ids("--text", "IN FLIGHT") == ["run-1"]
    text = stepscope("runs", "--status", "completed").stdout.splitlines()
    assert text[0].split() == ["run", "status", "steps", "tokens", "reason"]
    assert text[1].split()[:4] == ["run-0", "completed", "0-4", "480"]
    assert stepscope("runs", "--agent", "nobody").stdout == "no runs\n"


def test_show_text_output(source: Path) -> None:
    stepscope_json("import", source)
    run = stepscope("show", "run-1").stdout
    assert "status            crashed" in run
    assert "stopped with 1 effect(s) in flight" in run
    assert "step_index" in run and "pending_effects" in run
    one = stepscope("show", "run-1", "--step", "2").stdout
    assert one.startswith("run_id           run-1\n")
    state = json.loads(one.split("working_state:\n", 1)[1])
    assert state == json.loads(native_rows()[7]["working_state"])


def test_version() -> None:
    result = stepscope("--version")
    assert result.exit_code == 0 and result.stdout.startswith("stepscope, version ")


def test_app_needs_a_store(tmp_path: Path) -> None:
    result = stepscope("app", "--store", tmp_path / "none.duckdb")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: no store at") and result.stderr.count("\n") == 1


def test_app_runs_streamlit_on_the_store(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit.web.cli

    import debugger.ui.serve

    stepscope_json("import", source)
    seen: dict[str, Any] = {}

    def fake_streamlit(args: list[str], **kwargs: Any) -> None:
        seen.update(args=args, cwd=os.getcwd(), store=os.environ["STEPSCOPE_STORE"], **kwargs)

    # the server itself is exercised by the app's browser test; here, what is started
    monkeypatch.setattr(os, "environ", os.environ.copy())  # launch_app sets STEPSCOPE_STORE
    monkeypatch.setattr(streamlit.web.cli, "main", fake_streamlit)
    monkeypatch.setattr(
        debugger.ui.serve, "warm", lambda store, ready=None: seen.update(warmed=store)
    )
    # serve() has Streamlit skip its component scan for the rest of the (app's) process:
    # put the scanner back after this test
    from streamlit.components.v2 import manifest_scanner

    monkeypatch.setattr(manifest_scanner, "scan_component_manifests",
                        manifest_scanner.scan_component_manifests)  # fmt: skip
    assert stepscope("app", "--port", "8765", "--no-browser").exit_code == 0
    args = seen["args"]
    assert args[:2] == ["run", str(debugger.ui.serve.SERVED)] and Path(args[1]).exists()
    assert args[args.index("--server.headless") + 1] == "true"
    assert args[args.index("--server.port") + 1] == "8765"
    assert seen["store"] == seen["warmed"] == str(tmp_path / "stepscope.duckdb")
    assert (Path(seen["cwd"]) / ".streamlit" / "config.toml").exists()
    assert seen["standalone_mode"] is False


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["show", "run-0", "--step", "abc"], ["'abc' is not a valid integer", "show --help"]),
        (["show"], ["Missing argument 'RUN'"]),
        (["import", "x.sqlite", "--flavor", "guess"], ["--flavor", "guess"]),
        (["import", "x.sqlite", "--batch-rows", "5"], ["--batch-rows"]),
        (["nosuch"], ["No such command 'nosuch'", "stepscope --help"]),
        (["runs", "--status", "bogus"], ["unknown status 'bogus'"]),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args: list[str], words: list[str]) -> None:
    result = stepscope(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "Hint: " in result.stderr
    for word in words:
        assert word in result.stderr


def test_help_still_exits_0() -> None:
    for args in (["--help"], ["import", "--help"], ["runs", "-h"]):
        result = stepscope(*args)
        assert result.exit_code == 0 and "Usage: stepscope" in result.stdout


class _Tty:
    def __init__(self, tty: bool = True) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"DISPLAY": ":0"}, True), ({"DISPLAY": ":0", "CI": "1"}, False), ({}, False)],
)
def test_a_browser_opens_only_with_a_terminal_a_display_and_not_in_ci(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: bool
) -> None:
    import webbrowser

    from debugger.ui import serve

    for name in ("CI", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(serve.sys, "platform", "linux")
    monkeypatch.setattr(serve.sys, "stdin", _Tty())
    monkeypatch.setattr(serve.sys, "stdout", _Tty())
    monkeypatch.setattr(webbrowser, "get", lambda: object())
    assert serve.can_open_browser() is expected
    monkeypatch.setattr(serve.sys, "stdin", _Tty(tty=False))
    assert serve.can_open_browser() is False
