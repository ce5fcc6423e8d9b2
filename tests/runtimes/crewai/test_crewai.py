"""The CrewAI flavour against what CrewAI's own persistence API says about the same flows.

``data/flows.sqlite`` was written by ``generate.py`` with crewai flows under ``@persist``
(``SQLiteFlowPersistence``); ``expected.json`` holds ``load_state`` and
``load_pending_feedback`` of each flow, the methods it ran and the failing flow's exception.
Each test runs on the committed file and, with ``STEPSCOPE_CREWAI_PYTHON`` set, on a freshly
generated one (tests/runtimes/fixture_data.py).
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
from tests.runtimes.fixture_data import data_dir, sources

RT = "crewai"


@dataclass
class Imported:
    data: Path
    store: Path
    report: ImportReport
    expected: dict[str, Any]


@pytest.fixture(scope="module", params=sources(RT))
def crew(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    tmp = tmp_path_factory.mktemp("crew")
    data = data_dir(RT, request.param, tmp)
    store = tmp / "store.duckdb"
    with Store.open(store) as s:
        report = import_source(s, str(data / "flows.sqlite"))
    expected = json.loads((data / "expected.json").read_text(encoding="utf-8"))
    return Imported(data, store, report, expected)


def test_detected_and_every_flow_a_run(crew: Imported) -> None:
    assert check_source(str(crew.data / "flows.sqlite")) == "crewai"
    t = crew.report.total
    assert t.read == t.imported > 0 and t.quarantined == 0
    assert "tool_calls" not in crew.report.tables  # flows record no tool calls
    with debugger.open(crew.store) as s:
        assert {r.run_id for r in s.run_records()} == set(crew.expected)


def test_head_state_is_load_state(crew: Imported) -> None:
    with debugger.open(crew.store) as s:
        for flow, said in crew.expected.items():
            assert s.checkpoint(flow).working_state == said["state"], flow


def test_a_step_per_completed_method(crew: Imported) -> None:
    with debugger.open(crew.store) as s:
        for flow, said in crew.expected.items():
            cps = s.checkpoints(flow)
            methods = [c.metadata["method"] for c in cps]
            # each state is saved after its method completed; a feedback method that was
            # answered is saved again when the flow resumes
            assert list(dict.fromkeys(methods)) == said["ran"], flow
            assert [c.step_index for c in cps] == list(range(1, len(cps) + 1))
            assert [c.budgets.steps_spent for c in cps] == [c.step_index for c in cps]
            assert [c.working_state["ran"] for c in cps][-1] == said["ran"]
            assert [c.parent_id for c in cps] == [None, *[c.checkpoint_id for c in cps[:-1]]]
            walls = [c.budgets.wall_clock_ms for c in cps]
            assert walls == sorted(walls) and walls[0] == 0


def test_statuses(crew: Imported) -> None:
    with debugger.open(crew.store) as s:
        runs = {r.run_id: r for r in s.run_records()}
        head = s.checkpoint("review-waiting")
    said = crew.expected["review-waiting"]["pending"]
    assert runs["review-waiting"].status == "parked"
    assert head.metadata["interrupt"]["value"]["question"] == said["message"]
    assert head.metadata["interrupt"]["value"]["method"] == said["method"]
    assert head.metadata["interrupt"]["value"]["output"] == said["output"]
    assert head.metadata["method"] == said["method"]
    # resumed: the pending row is gone, as load_pending_feedback says
    assert crew.expected["review-resumed"]["pending"] is None
    assert runs["review-resumed"].status != "parked"
    # CrewAI records no end and no error: a finished flow and one whose method raised look
    # alike (the failed method saved nothing), so neither gets a terminal status
    assert crew.expected["charge-fails"]["error"] == "payment API down"
    assert crew.expected["charge-fails"]["ran"] == ["load_order"]
    for flow in ("refund-ok", "charge-fails", "review-resumed"):
        assert runs[flow].status in ("in_progress", "crashed"), flow


def test_audit_is_runtime_aware(crew: Imported) -> None:
    with Store.open(crew.store, read_only=True) as s:
        done = audit_run(s, "refund-ok")
        paused = audit_run(s, "review-waiting")
    gaps = [f for f in done.findings if f.rule_id.startswith("missing-")]
    assert {f.rule_id for f in gaps} == {"missing-schema-version", "missing-run-metadata"}
    assert all(f.severity == "warning" and "CrewAI" in f.hint for f in gaps)
    assert done.verdict != "restart_required"
    assert paused.verdict == "resumable_after_checks"
    assert any(".from_pending('review-waiting'" in r for r in paused.reasons)


DATA_0 = Path(__file__).parent / "data_0.201"
"""Written by crewai 0.201.1 (``generate.py`` with its Python, by hand: CI builds no venv
for it): the two flows that need no human feedback (CrewAI 0.x had none that pauses)."""


def test_flows_crewai_0x_persisted_read_as_its_api_says(tmp_path: Path) -> None:
    store = tmp_path / "store.duckdb"
    with Store.open(store) as s:
        report = import_source(s, str(DATA_0 / "flows.sqlite"))
    expected = json.loads((DATA_0 / "expected.json").read_text(encoding="utf-8"))
    assert set(expected) == {"refund-ok", "charge-fails"}
    crew = Imported(DATA_0, store, report, expected)
    test_detected_and_every_flow_a_run(crew)
    test_head_state_is_load_state(crew)
    test_a_step_per_completed_method(crew)
    # no end and no error recorded: no terminal status, as in 1.x (test_statuses); in
    # progress until the stale rule makes it crashed an hour after its last checkpoint
    with debugger.open(store) as s:
        assert {r.run_id: r.status in ("in_progress", "crashed") for r in s.run_records()} == (
            dict.fromkeys(expected, True)
        )
