"""``stepscope replay --graph`` driven in-process: JSON with a baseline, writes, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from debugger.cli import main
from debugger.replay.graph.world import is_write, reads_by_name
from tests.fixtures.replay import RecordedRuns
from tests.replay.graph.conftest import Written

DESK = "sample_checkpoints.langgraph_refund.graph"
MOCKS = "sample_checkpoints.langgraph_refund.replay_mocks"
GRAPHS = "tests.replay.graph.graphs"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_fix_and_its_baseline_in_one_json_document(lg: Written) -> None:
    code, out, _ = _run("refund-A-7", "--from", "3", "--graph", f"{DESK}:fixed_graph",
                        "--baseline", f"{DESK}:graph", "--mocks", MOCKS, "--json",
                        "--env", "REFUND_PAYMENTS", "--store", str(lg.store))  # fmt: skip
    assert code == 0
    both = json.loads(out)
    fix, base = both["replay"], both["baseline"]
    assert fix["agent"] == f"{DESK}:fixed_graph" and base["agent"] == f"{DESK}:graph"
    assert fix["outcome"] == "diverged" and fix["duplicate_writes"] == [], fix["reason"]
    assert fix["first_divergence"]["kind"] == "missing_call"
    assert [(d["tool"], d["idempotency_key"]) for d in base["duplicate_writes"]] == [
        ("issue_refund", "refund-A-7")]  # fmt: skip


@pytest.mark.parametrize(
    "how",
    [[f"{GRAPHS}:react_graph", "--writes", "lookup"], [f"{GRAPHS}:react_marked_graph"]],
    ids=["--writes", "metadata"],
)
def test_writes_and_marks_name_more_write_tools(lg: Written, how: list[str]) -> None:
    code, out, _ = _run("react", "--from", "2", "--graph", *how,
                        "--json", "--store", str(lg.store))  # fmt: skip
    assert code == 0
    doc = json.loads(out)["replay"]
    assert doc["outcome"] == "completed"
    assert [w["name"] for w in doc["ledger"]] == ["lookup"] * 2
    assert [d["tool"] for d in doc["duplicate_writes"]] == ["lookup"] * 2


def test_the_write_rule() -> None:
    assert [reads_by_name(n) for n in ("get_order", "lookup", "find_refund", "search_docs",
                                       "list_orders", "read_file", "issue_refund", "getter")] == [
        True, True, True, True, True, True, False, False]  # fmt: skip
    assert is_write("issue_refund") and not is_write("lookup_order")
    assert is_write("lookup_order", writes=["lookup_order"])
    assert not is_write("issue_refund", mark=False) and is_write("get_x", mark=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--graph", f"{DESK}:graph", "--agent", "tests.replay.agents:ledger_agent"],
            "error: name exactly one of an agent and a graph.",
        ),
        ([], "error: name exactly one of an agent and a graph."),
        (
            ["--graph", "no_such_module:graph"],
            "error: cannot load the graph no_such_module:graph: ModuleNotFoundError",
        ),
        (["--graph", f"{DESK}:TOOLS"], "is a list, not a LangGraph graph"),
        (["--graph", f"{DESK}:graph", "--resume", "yes"], "'yes' is not JSON"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(lg: Written, args: list[str], message: str) -> None:
    code, out, err = _run("refund-A-7", "--from", "3", *args, "--store", str(lg.store))
    assert code == 2, out
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_native_run_is_not_replayed_as_a_graph(
    recorded_runs: RecordedRuns, tmp_path: Path
) -> None:
    store = tmp_path / "s.duckdb"
    shutil.copy(recorded_runs.store_path, store)
    code, _, err = _run("ledger-done", "--from", "1", "--graph", f"{DESK}:graph",
                        "--store", str(store))  # fmt: skip
    assert code == 2
    assert "error: run ledger-done was not imported from a LangGraph checkpointer" in err
    assert "replay it with --agent MODULE:ATTR" in err
