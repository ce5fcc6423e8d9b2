"""The audit on long runs: linear in a run's length, and the same findings as the parsed way.

``audit_run`` reads a stored run's states as text and tells their shape from it
(``debugger.audit.state``); these tests check that answer against the parsed states, and
that the rules which once rebuilt a set (or took a minimum) per checkpoint stay linear.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from debugger.audit import audit_records, audit_run
from debugger.audit import run as audit_module
from debugger.audit.state import StateFacts, facts_of, facts_of_text
from debugger.json_text import loads
from debugger.model import Budgets, Checkpoint
from debugger.pages_data.findings import findings_by_step
from debugger.store import Store

PROSE = "the customer wrote again about the refund and asked for the money " * 4
STATES = [
    "null", "1", "2.5", "true", '"short"', json.dumps(PROSE), "{}", "[]",
    json.dumps({"a": PROSE}), json.dumps({"a": PROSE, "b": PROSE, "c": 1}),
    json.dumps({"a": PROSE, "b": 1}), json.dumps([PROSE, PROSE, 3]), json.dumps([PROSE, 1]),
    json.dumps({"a": PROSE.replace(" ", "\\u0020")}), json.dumps({"a": "é" * 300}),
    json.dumps({"nested": {"a": PROSE, "b": PROSE}}), '{"a": NaN, "b": "' + PROSE + '"}',
    '[Infinity, "' + PROSE + '", "' + PROSE + '"]', json.dumps({"a": "x" * 199}),
    '  {"a" : "' + PROSE + '" }  ', json.dumps({"k": PROSE[:199] + "\\n"}),
]  # fmt: skip


@pytest.mark.parametrize("text", STATES)
def test_a_state_s_shape_from_its_text_is_its_shape_parsed(text: str) -> None:
    assert facts_of_text(text) == facts_of(loads(text))


@pytest.mark.parametrize("deep", ['{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                  "[" * 100_000 + "]" * 100_000])  # fmt: skip
def test_a_state_nested_past_every_parser_is_structured_not_prose(deep: str) -> None:
    assert facts_of_text(deep) == StateFacts(True, False)


def test_no_state_is_no_structure_and_no_prose() -> None:
    assert facts_of_text(None) == facts_of(None)
    assert not facts_of(None).structured


def _long_run(steps: int) -> list[Checkpoint]:
    start = datetime(2026, 3, 1, 9, 0)
    return [
        Checkpoint("long", f"c{i}", f"c{i - 1}" if i else None, i, 1,
                   start + timedelta(seconds=i), {"n": i}, "", 0, Budgets(i, i, i * 10), [],
                   "m", {"t": "1"}, {"limits": {"steps": 10**9}})
        for i in range(steps)
    ]  # fmt: skip


def _audit_seconds(steps: int) -> float:
    """CPU seconds, best of three: a shared machine's wall clock says more about its load."""
    ckpts = _long_run(steps)
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        report = audit_records("long", ckpts, [], [])
        best = min(best, time.process_time() - start)
    assert len(report.lineage) == steps
    return best


def test_the_audit_grows_linearly_with_the_run() -> None:
    # a quadratic audit takes 25x as long on a 5x longer run; a linear one about 5x. The
    # bound is loose (a loaded machine), and far below what a quadratic rule would take.
    small, large = _audit_seconds(4_000), _audit_seconds(20_000)
    assert large < max(small, 0.05) * 12, (small, large)


def test_a_stored_run_audits_the_same_as_its_parsed_records(
    audit_runs: Path, audit_sample_store: Path
) -> None:
    seen = 0
    for path in (audit_runs, audit_sample_store):
        with Store.open(path, read_only=True) as store:
            for run in store.run_records():
                audit_module._cache.clear()
                stored = audit_run(store, run.run_id)
                fp = store.audit_fingerprint(run.run_id)
                assert fp is not None
                parsed = audit_records(
                    run.run_id, store.checkpoints(run.run_id), store.effects(run.run_id),
                    store.tool_calls(run.run_id), None, newest_stored_version=fp[-1],
                    status=fp[3], head_id=fp[2], runtime=store.run_flavour(run.run_id),
                )  # fmt: skip
                assert stored == parsed, run.run_id
                seen += 1
    assert seen >= 10


def test_findings_at_many_steps_group_in_linear_time() -> None:
    steps = list(range(0, 100_000, 2))
    findings = [{"step_index": s + 1} for s in steps]  # every one between two checkpoints
    start = time.perf_counter()
    grouped = findings_by_step(findings, steps)
    assert time.perf_counter() - start < 5
    assert grouped[98] == [{"step_index": 99}] and grouped[0] == [{"step_index": 1}]


def _stored_run(tmp_path: Path, steps: int) -> Path:
    from benchmarks import synth
    from loaders import ImportOptions, import_source

    source, store = tmp_path / f"s{steps}.sqlite", tmp_path / f"s{steps}.duckdb"
    synth.write(synth.Spec(1, steps, 256), source, None)
    with Store.open(store) as s:
        import_source(s, str(source), ImportOptions())
    return store


def _stored_audit_seconds(store_path: Path) -> float:
    with Store.open(store_path, read_only=True) as store:
        run_id = store.run_records()[0].run_id
        best = float("inf")
        for _ in range(2):
            audit_module._cache.clear()
            start = time.process_time()
            report = audit_run(store, run_id)
            best = min(best, time.process_time() - start)
        assert report.verdict == "completed"
    return best


def test_a_stored_run_audits_in_time_linear_in_its_length(tmp_path: Path) -> None:
    # CPU time, best of two: the wall clock of a shared machine says more about its load
    small = _stored_audit_seconds(_stored_run(tmp_path, 2_000))
    large = _stored_audit_seconds(_stored_run(tmp_path, 10_000))
    assert large < max(small, 0.02) * 12, (small, large)
