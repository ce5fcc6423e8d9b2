"""The OpenAI Agents SDK flavour against what the SDK's own API says about the same data.

``data/`` was written by ``generate.py`` with openai-agents and a scripted model; its
``expected.json`` is what ``session.get_items()``, ``get_turn_usage()``,
``get_conversation_by_turns()`` and ``RunState.from_string`` returned. Each test runs on the
committed files and, with ``STEPSCOPE_OPENAI_AGENTS_PYTHON`` set, on freshly generated ones
(tests/runtimes/fixture_data.py).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import debugger
from debugger.audit import audit_run
from debugger.errors import SourceError
from debugger.model import ImportReport
from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.importer import check_source
from tests.fixtures.native import native_rows, stepscope, write_native_parquet, write_native_sqlite
from tests.runtimes.fixture_data import data_dir, sources

RT = "openai_agents"
SOURCES = ("sessions.sqlite", "advanced.sqlite", "runstate")
COMMITTED = Path(__file__).resolve().parent / "data"
TOOL_ERRORS = ("An error occurred while running the tool. Please try again.",
               "An error occurred while running the tool.")  # fmt: skip
"""The SDK's default text for a tool that raised: up to 0.24 (the committed data), and
from 0.25 (what the pinned version regenerates)."""


@dataclass
class Imported:
    data: Path
    store: Path
    reports: dict[str, ImportReport]
    expected: dict[str, Any]


@pytest.fixture(scope="module", params=sources(RT))
def oai(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    """The three sources imported into one store."""
    tmp = tmp_path_factory.mktemp("oai")
    data = data_dir(RT, request.param, tmp)
    store = tmp / "store.duckdb"
    with Store.open(store) as s:
        reports = {src: import_source(s, str(data / src)) for src in SOURCES}
    expected = json.loads((data / "expected.json").read_text(encoding="utf-8"))
    return Imported(data, store, reports, expected)


def sessions(imp: Imported) -> dict[str, dict[str, Any]]:
    """Every run id of a session (branch) with what the SDK said about it."""
    plain = {k: v for k, v in imp.expected["sessions.sqlite"].items() if "items" in v}
    adv = {k: v for k, v in imp.expected["advanced.sqlite"].items() if isinstance(v, dict)}
    return {**plain, **adv}


def test_auto_detected_and_counted(oai: Imported) -> None:
    for src in SOURCES:
        assert check_source(str(oai.data / src)) == "openai-agents"
        r = oai.reports[src]
        assert r.flavour == "openai-agents"
        t = r.total
        assert t.read == t.imported > 0 and t.quarantined == 0


def test_head_state_is_what_get_items_returns(oai: Imported) -> None:
    with debugger.open(oai.store) as s:
        for run_id, said in sessions(oai).items():
            assert s.checkpoint(run_id).working_state == {"items": said["items"]}, run_id


def test_steps_are_the_sdk_turns(oai: Imported) -> None:
    adv = oai.expected["advanced.sqlite"]
    with debugger.open(oai.store) as s:
        for run_id in ("support-7", "support-7@retry"):
            turns = adv[run_id]["turns"]
            cps = s.checkpoints(run_id)
            assert [c.step_index for c in cps] == sorted(int(t) for t in turns)
            sizes = [len(c.working_state["items"]) for c in cps]
            per_turn = [len(turns[str(c.step_index)]) for c in cps]
            assert [b - a for a, b in zip([0, *sizes], sizes, strict=False)] == per_turn
            assert [c.parent_id for c in cps] == [None, *[c.checkpoint_id for c in cps[:-1]]]
        # a plain session has no structure table: turns are counted from the user messages
        said = oai.expected["sessions.sqlite"]["refund-ok"]["items"]
        users = sum(1 for i in said if i.get("role") == "user")
        assert [c.step_index for c in s.checkpoints("refund-ok")] == list(range(1, users + 1))


def test_tokens_are_the_turn_usage(oai: Imported) -> None:
    adv = oai.expected["advanced.sqlite"]
    with debugger.open(oai.store) as s:
        spent = 0
        usage = {u["user_turn_number"]: u["total_tokens"] for u in adv["support-7"]["turn_usage"]}
        for c in s.checkpoints("support-7"):
            spent += usage[c.step_index]
            assert c.budgets.tokens_spent == spent
            assert c.metadata["usage"]["total_tokens"] == usage[c.step_index]
            assert c.budgets.steps_spent == c.step_index
        assert spent == adv["support-7"]["session_usage"]["total_tokens"]
        assert s.run("support-7").budgets.tokens_spent == spent
        # the branch copies turn 1 from main (and its usage), then spends its own
        branch = {u["user_turn_number"]: u["total_tokens"]
                  for u in adv["support-7@retry"]["turn_usage"]}  # fmt: skip
        head = s.checkpoint("support-7@retry")
        assert head.budgets.tokens_spent == usage[1] + branch[head.step_index]
        # a plain SQLiteSession records no usage at all
        assert s.run("refund-ok").budgets.tokens_spent == 0


def test_statuses(oai: Imported) -> None:
    with debugger.open(oai.store) as s:
        status = {r.run_id: r.status for r in s.run_records()}
        pending = s.checkpoint("approval").pending_effects
    assert status["refund-ok"] == status["tool-error"] == status["support-7"] == "completed"
    assert status["support-7@retry"] == "completed"
    # the session alone cannot tell an approval pause from a crash: a call in flight
    assert status["approval"] == "crashed"
    assert [(p["tool"], p["tool_call_id"], p["idempotency_key"]) for p in pending] == [
        ("approved_refund", "call_ap_2", "refund-A-17")
    ]
    # the model raised after the tool answered: nothing says the run ended
    assert oai.expected["sessions.sqlite"]["model-error raised"] == "model overloaded"
    assert status["model-error"] in ("in_progress", "crashed")
    # the RunState saved at the pause says it: parked on the approval
    assert status["approval-paused"] == "parked"


def test_run_state_is_what_from_string_reads(oai: Imported) -> None:
    said = oai.expected["sessions.sqlite"]["runstate/approval-paused.json"]
    with debugger.open(oai.store) as s:
        head = s.checkpoint("approval-paused")
        run = s.run("approval-paused")
    assert head.step_index == said["current_turn"]
    major, minor = said["schema_version"].split(".")
    assert head.schema_version == int(major) * 1000 + int(minor)
    assert head.metadata["openai_agents"]["schema_version"] == said["schema_version"]
    assert head.budgets.tokens_spent == said["total_tokens"]
    assert run.limits == {"steps": said["max_turns"]}
    asked = [(i["name"], i["call_id"], json.loads(i["arguments"])) for i in said["interruptions"]]
    assert [(p["tool"], p["tool_call_id"], p["args"]) for p in head.pending_effects] == asked
    assert [i["id"] for i in head.metadata["interrupts"]] == [a[1] for a in asked]
    # the state is the input (the session's history) and what the run generated
    session_items = oai.expected["sessions.sqlite"]["approval"]["items"]
    assert head.working_state["items"] == session_items


def _calls(items: list[dict[str, Any]]) -> list[tuple[str, str, Any, Any]]:
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    return [
        (i["call_id"], i["name"], json.loads(i["arguments"]), outputs.get(i["call_id"]))
        for i in items
        if i.get("type") == "function_call"
    ]


def test_tape_holds_every_call_with_its_output(oai: Imported) -> None:
    with debugger.open(oai.store) as s:
        for run_id, said in sessions(oai).items():
            tape = s.tool_calls(run_id)
            tools = [(t.name, t.request, t.response) for t in tape if t.kind == "tool"]
            assert tools == [(n, a, o) for _, n, a, o in _calls(said["items"])], run_id
            models = [t for t in tape if t.kind == "model"]
            outputs = [i for i in said["items"] if i.get("type") == "function_call"
                       or i.get("role") == "assistant"]  # fmt: skip
            assert [o for t in models for o in t.response] == outputs
            assert [t.seq for t in tape] == list(range(len(tape)))
        errors = [t for t in s.tool_calls("tool-error") if t.error]
        said = sessions(oai)["tool-error"]["items"]
        [(text)] = [o for _, n, _, o in _calls(said) if n == "carrier_status"]
        assert text in TOOL_ERRORS
        assert [(t.name, t.error) for t in errors] == [("carrier_status", text)]
        listed = [e["output"] for c in s.checkpoints("tool-error")
                  for e in c.metadata.get("tool_errors", [])]  # fmt: skip
        assert listed == [text]
        refund = [t for t in s.tool_calls("refund-ok") if t.name == "issue_refund"]
        assert refund[0].idempotency_key == "refund-A-17" and refund[0].step_index == 2


def test_audit_is_runtime_aware(oai: Imported) -> None:
    with Store.open(oai.store, read_only=True) as s:
        done = audit_run(s, "refund-ok")
        paused = audit_run(s, "approval-paused")
        crashed = audit_run(s, "approval")
    assert done.verdict == "completed"
    gaps = {f.rule_id: f for f in done.findings if f.rule_id.startswith("missing-")}
    assert set(gaps) == {"missing-schema-version", "missing-run-metadata"}
    assert all(f.severity == "warning" and "OpenAI Agents" in f.hint for f in gaps.values())
    assert paused.verdict == "resumable_after_checks"
    assert any("RunState.from_string" in r and "call_ap_2" in r for r in paused.reasons)
    # a call without output at the head: check its key, never repeat it blindly
    assert crashed.verdict == "resumable_after_checks"
    assert any("refund-A-17" in r for r in crashed.reasons)


def test_insisting_on_the_flavour(tmp_path: Path) -> None:
    native = write_native_sqlite(tmp_path / "native.sqlite", native_rows(1, 2))
    result = stepscope("import", str(native), "--flavor", "openai-agents",
                       "--store", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert result.exit_code == 2
    assert "openai-agents" in result.stderr and "Hint" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    parquet = write_native_parquet(tmp_path / "x.parquet", native_rows(1, 2))
    with Store.open(tmp_path / "t.duckdb") as s, pytest.raises(SourceError) as err:
        import_source(s, str(parquet), ImportOptions(flavour="openai-agents"))
    assert "reads an agent-session SQLite file or RunState JSON files" in err.value.message


def test_branch_shares_a_bad_message_once_and_orphans_are_a_run(tmp_path: Path) -> None:
    db = tmp_path / "advanced.sqlite"
    shutil.copyfile(COMMITTED / "advanced.sqlite", db)
    con = sqlite3.connect(db)
    with con:
        # a bad message in turn 1, which the branch copied from main (both list it)
        bad = con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('support-7', '{no')"
        ).lastrowid
        for branch in ("main", "retry"):
            con.execute(
                "INSERT INTO message_structure (session_id, message_id, branch_id, message_type,"
                " sequence_number, user_turn_number) VALUES ('support-7', ?, ?, 'user', 0, 1)",
                (bad, branch),
            )
        # a message no branch lists (a plain SQLiteSession wrote it)
        con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('support-7', ?)",
            (json.dumps({"role": "user", "content": "hello?"}),),
        )
    con.close()
    with Store.open(tmp_path / "s.duckdb") as s:
        report = import_source(s, str(db))
        assert report.total.quarantined == 1
        (reason,) = report.quarantine_reasons
        assert reason.startswith(f"agent_messages row {bad}: message_data is not JSON")
        orphan = s.checkpoint("support-7@orphaned")
        assert orphan.working_state == {"items": [{"role": "user", "content": "hello?"}]}
        assert (
            s.checkpoint("support-7").working_state["items"]
            == json.loads((COMMITTED / "expected.json").read_text())["advanced.sqlite"][
                "support-7"
            ]["items"]
        )


def test_the_sdks_error_texts_of_every_version_and_nothing_else_are_errors() -> None:
    from loaders.openai_agents.items import is_tool_error

    assert all(is_tool_error(t) for t in TOOL_ERRORS)
    assert is_tool_error(f"{TOOL_ERRORS[0]} Error: carrier API timed out")  # 0.2
    # a custom failure_error_function's text, a result, and outputs that are not text
    for other in (
        "orders database unreachable",
        "An error occurred",
        "An error occurred Error: boom",
        f"Note: {TOOL_ERRORS[0]} Error: x",
        "",
        None,
        3,
        [{"type": "input_text", "text": TOOL_ERRORS[0]}],
        {"error": TOOL_ERRORS[1]},
    ):
        assert not is_tool_error(other)


DATA_0_2 = Path(__file__).resolve().parent / "data_0.2"
"""Sessions openai-agents 0.2.11 wrote (``generate_0_2.py``, by hand: no venv in CI)."""


def test_sessions_openai_agents_0_2_wrote_read_as_its_api_says(tmp_path: Path) -> None:
    """0.2 stored a raising tool's output with the exception's text after the SDK's, and
    saved nothing of a run whose model raised (``get_items`` is empty: no run)."""
    store = tmp_path / "store.duckdb"
    with Store.open(store) as s:
        report = import_source(s, str(DATA_0_2 / "sessions.sqlite"))
    said = json.loads((DATA_0_2 / "expected.json").read_text(encoding="utf-8"))
    assert said["versions"]["openai-agents"].startswith("0.2.")
    said = said["sessions.sqlite"]
    assert report.flavour == "openai-agents" and report.total.quarantined == 0
    assert said["model-error"]["items"] == [] and said["model-error raised"] == "model overloaded"
    with debugger.open(store) as s:
        assert {r.run_id: r.status for r in s.run_records()} == {
            "refund-ok": "completed", "tool-error": "completed"}  # fmt: skip
        for run in ("refund-ok", "tool-error"):
            assert s.checkpoint(run).working_state == {"items": said[run]["items"]}
        calls = [(c.kind, c.name, c.error) for c in s.tool_calls("tool-error")]
        [output] = [i["output"] for i in said["tool-error"]["items"] if "output" in i]
        assert output.endswith(" Error: carrier API timed out")
        assert calls == [("model", "model", None), ("tool", "carrier_status", output),
                         ("model", "model", None)]  # fmt: skip
        refunds = [c for c in s.tool_calls("refund-ok") if c.name == "issue_refund"]
        assert [c.idempotency_key for c in refunds] == ["refund-A-17"]
