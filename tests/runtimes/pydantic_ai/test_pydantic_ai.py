"""The pydantic-ai flavour against what pydantic-ai's own objects say about the same runs.

``data/histories`` was written by ``generate.py`` with pydantic-ai and a ``FunctionModel``;
``expected.json`` is what the API reported (``result.usage``, the messages read back with
``ModelMessagesTypeAdapter``, tool calls and returns, the exception, the deferred calls).
Each test runs on the committed files and, with ``STEPSCOPE_PYDANTIC_AI_PYTHON`` set, on
freshly generated ones (tests/runtimes/fixture_data.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import debugger
from debugger.audit import audit_run
from debugger.model import ImportReport
from debugger.store import Store
from loaders import import_source
from loaders.importer import check_source
from tests.runtimes.conftest import regenerate
from tests.runtimes.fixture_data import data_dir, sources

RT = "pydantic_ai"
HERE = Path(__file__).parent


@dataclass
class Imported:
    data: Path
    store: Path
    report: ImportReport
    expected: dict[str, Any]
    files: dict[str, Any]


OLDER = "0.4"
"""``data_0.4``: written by pydantic-ai-slim 0.4.11 with the same generator (no deferred tools
then, so no approval runs): its requests carry no timestamp of their own and its usage counts
``request_tokens`` and ``response_tokens``."""


@pytest.fixture(
    scope="module",
    params=[*sources(RT), pytest.param(OLDER),
            pytest.param(f"{OLDER}-regenerated", marks=pytest.mark.pydantic_ai)],
)  # fmt: skip
def pai(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    tmp = tmp_path_factory.mktemp("pai")
    if request.param == OLDER:
        data = HERE / f"data_{OLDER}"
    elif request.param == f"{OLDER}-regenerated":
        data = tmp / "generated"
        regenerate("pydantic_ai_0_4", HERE / "generate.py", data)
    else:
        data = data_dir(RT, request.param, tmp)
    store = tmp / "store.duckdb"
    with Store.open(store) as s:
        report = import_source(s, str(data / "histories"))
    expected = json.loads((data / "expected.json").read_text(encoding="utf-8"))
    files = {p.stem: json.loads(p.read_text()) for p in (data / "histories").glob("*.json")}
    return Imported(data, store, report, expected, files)


def messages(doc: Any) -> list[dict[str, Any]]:
    return doc["messages"] if isinstance(doc, dict) else doc  # type: ignore[no-any-return]


def test_detected_and_every_file_a_run(pai: Imported) -> None:
    assert check_source(str(pai.data / "histories")) == "pydantic-ai"
    assert check_source(str(pai.data / "histories" / "ok.json")) == "pydantic-ai"
    t = pai.report.total
    assert t.read == t.imported > 0 and t.quarantined == 0
    with debugger.open(pai.store) as s:
        assert {r.run_id for r in s.run_records()} == set(pai.expected)


def test_steps_are_model_responses(pai: Imported) -> None:
    with debugger.open(pai.store) as s:
        for run_id, said in pai.expected.items():
            cps = s.checkpoints(run_id)
            assert [c.step_index for c in cps] == list(range(said["responses"] + 1)), run_id
            assert s.checkpoint(run_id).working_state == {"messages": messages(pai.files[run_id])}
            assert [c.parent_id for c in cps] == [None, *[c.checkpoint_id for c in cps[:-1]]]
            assert [c.budgets.steps_spent for c in cps] == [c.step_index for c in cps]


def test_tokens_and_model_are_what_the_api_reports(pai: Imported) -> None:
    with debugger.open(pai.store) as s:
        for run_id, said in pai.expected.items():
            cps = s.checkpoints(run_id)
            running = [sum(said["response_tokens"][:k]) for k in range(len(cps))]
            assert [c.budgets.tokens_spent for c in cps] == running, run_id
            assert cps[-1].budgets.tokens_spent == said["total_tokens"]
            assert [c.model_version for c in cps[1:]] == said["model_names"]
            assert s.run(run_id).model_versions == sorted(set(said["model_names"]))


def test_statuses(pai: Imported) -> None:
    with debugger.open(pai.store) as s:
        status = {r.run_id: r.status for r in s.run_records()}
        failed = {r.run_id: r.last_error for r in s.run_records() if r.status == "failed"}
    assert status["ok"] == status["retried"] == status["structured"] == "completed"
    if "approval" in pai.expected:  # pydantic-ai 1.0 on
        assert status["approval-resumed"] == "completed"
        assert status["approval"] == "parked"
        assert pai.expected["tool-raised"]["states"][-1] == "interrupted"
    # a tool raised / a usage limit: the run raised (the history ends interrupted)
    assert "ConnectionError" in pai.expected["tool-raised"]["error"]
    assert "UsageLimitExceeded" in pai.expected["usage-limit"]["error"]
    if pai.expected["tool-raised"]["states"][-1] is None:
        # before pydantic-ai 1.0 a history does not say the run raised: the tool call is in
        # flight, the over-limit response was never added (the prompt waits for an answer)
        assert not failed and status["tool-raised"] == "crashed"
        assert pai.expected["usage-limit"]["responses"] == 0
        assert status["usage-limit"] in ("in_progress", "crashed")  # crashed once stale
        return
    assert set(failed) == {"tool-raised", "usage-limit"}
    assert "usage limit" in str(failed["usage-limit"])


@pytest.mark.parametrize("pai", sources(RT), indirect=True)  # deferred tools: 1.0 on
def test_parked_on_the_deferred_requests(pai: Imported) -> None:
    said = pai.expected["approval"]["deferred"]
    with debugger.open(pai.store) as s:
        head = s.checkpoint("approval")
    asked = [(name, cid, args) for name, cid, args in said["approvals"]]
    assert [(p["tool"], p["tool_call_id"], p["args"]) for p in head.pending_effects] == asked
    assert [i["id"] for i in head.metadata["interrupts"]] == [a[1] for a in asked]
    assert head.pending_effects[0]["idempotency_key"] == "refund-A-17"
    assert head.schema_version == 1  # the application saved it beside the messages
    # resumed: the same call answered, the history spans two pydantic-ai runs
    with debugger.open(pai.store) as s:
        resumed = s.checkpoint("approval-resumed")
    assert resumed.pending_effects == []
    assert resumed.metadata["pydantic_ai"]["run_ids"] == pai.expected["approval-resumed"]["run_ids"]


def test_tape_is_the_calls_and_returns(pai: Imported) -> None:
    with debugger.open(pai.store) as s:
        for run_id, said in pai.expected.items():
            tape = s.tool_calls(run_id)
            tools = [t for t in tape if t.kind == "tool"]
            assert [(t.name, t.request) for t in tools] == [
                (name, args) for name, _, args in said["tool_calls"]
            ], run_id
            returns = {cid: (outcome, text) for cid, _, outcome, text in said["tool_returns"]}
            for t, (_, cid, _) in zip(tools, said["tool_calls"], strict=True):
                if cid not in returns:
                    assert t.response is None
                    continue
                outcome, content = returns[cid]
                assert t.response == content
                kind = next(k for c, k, _, _ in said["tool_returns"] if c == cid)
                # no outcome before pydantic-ai 1.0: a retry prompt is the failure
                failed = outcome not in ("success", None) or kind == "retry-prompt"
                assert (t.error is not None) == failed
            assert len([t for t in tape if t.kind == "model"]) == said["responses"]
        retried = [t for t in s.tool_calls("retried") if t.kind == "tool"]
        assert (retried[0].error, retried[1].error) == ("order ids are upper case", None)


def test_audit_is_runtime_aware(pai: Imported) -> None:
    with Store.open(pai.store, read_only=True) as s:
        done = audit_run(s, "ok")
        paused = audit_run(s, "approval") if "approval" in pai.expected else None
    assert done.verdict == "completed"
    gaps = [f for f in done.findings if f.rule_id.startswith("missing-")]
    assert gaps and all(f.severity == "warning" and "pydantic-ai" in f.hint for f in gaps)
    if paused is None:
        return
    assert paused.verdict == "resumable_after_checks"
    assert any("DeferredToolResults(approvals={'c-ap-2': True})" in r for r in paused.reasons)


def test_times_with_and_without_a_zone_compare(tmp_path: Path) -> None:
    """A history whose timestamps mix ``Z`` and no zone (edited by hand, or another writer):
    a time without a zone is UTC, as pydantic-ai writes them; no traceback, nothing lost."""
    older = json.loads((HERE / f"data_{OLDER}" / "histories" / "ok.json").read_text())
    older[0]["parts"].append({"content": "also", "timestamp": "2026-12-07T14:43:46",
                              "part_kind": "user-prompt"})  # fmt: skip
    newer = json.loads((HERE / "data" / "histories" / "ok.json").read_text())
    newer[0]["timestamp"] = str(newer[0]["timestamp"]).rstrip("Z").split("+")[0]
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "older.json").write_text(json.dumps(older))
    (tmp_path / "h" / "newer.json").write_text(json.dumps(newer))
    with Store.open(tmp_path / "s.duckdb") as s:
        report = import_source(s, str(tmp_path / "h"))
    assert report.total.quarantined == 0 and report.total.imported == report.total.read
    with debugger.open(tmp_path / "s.duckdb") as s:
        assert {r.run_id: r.status for r in s.run_records()} == {
            "older": "completed", "newer": "completed"}  # fmt: skip
