"""The ADK flavour against what ADK's own API says about the same sessions.

``data/adk.sqlite`` was written by ADK's ``DatabaseSessionService`` and ``Runner`` with a
scripted model (``generate.py``); ``data/adk_view.json`` is what ``get_session`` returned
for each session then. Every check compares Stepscope's import with that view: the statuses,
the state event by event (ADK's own ``state_delta``), tokens, model versions, the tape. The
``adk``-marked test regenerates both files with the real package and runs the same checks.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import debugger
from debugger.store import Store
from tests.fixtures.native import stepscope_json
from tests.fixtures.store_snapshot import assert_reimport_changes_nothing
from tests.runtimes.conftest import do_import, regenerate, store_tables

HERE = Path(__file__).parent
DATA = HERE / "data"
APP, USER = "refund_desk", "u-42"
CONFIRM = "adk_request_confirmation"
COVERED = {"refund-ok": "completed", "lookup-error": "failed", "quota": "failed",
           "refund-confirm": "parked", "refund-confirmed": "completed",
           "refund-crashed": "crashed", "multi-agent": "completed"}  # fmt: skip
"""The status each generated session must have: one of each the runtime can express."""


def _view(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "adk_view.json").read_text())  # type: ignore[no-any-return]


def adk_says(v: dict[str, Any]) -> str:
    """The status ADK's own view of a session implies."""
    last = v["events"][-1]
    if last["error_code"]:
        return "failed"
    asked = {c["id"] for e in v["events"] for c in e["calls"] if c["name"] == CONFIRM}
    answered = {r["id"] for e in v["events"] for r in e["responses"]}
    if asked - answered:
        return "parked"
    calls = {c["id"] for e in v["events"] for c in e["calls"]}
    if calls - answered:
        return "crashed"  # a call stored, its answer never: the process died in the tool
    return "completed" if last["final"] else "in_progress"


def _expected_tape(v: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, args, response) of every function call, answered by the last response with
    its id that is not ADK's "requires confirmation" hold."""
    answers: dict[str, Any] = {}
    for e in v["events"]:
        for r in e["responses"]:
            if r["id"] not in e["confirmations"]:
                answers[r["id"]] = r["response"]
    return [(c["name"], c["args"], answers.get(c["id"])) for e in v["events"] for c in e["calls"]]


COVERED_1 = {**COVERED, "lookup-error": "crashed"}
"""ADK 1.x (the v0 tables): a tool's exception left its call unanswered, no error event."""


def check_against_view(
    store: Path, view: dict[str, Any], covered: dict[str, str] = COVERED
) -> None:
    """Stepscope's import of a session database equals ADK's view of it, session by session."""
    assert {sid: adk_says(v) for sid, v in view.items()} == covered
    with Store.open(store, read_only=True) as st:
        runs = {r.run_id: r for r in st.run_records()}
        assert set(runs) == {f"{APP}/{USER}/{sid}" for sid in view}
        for sid, v in view.items():
            run = runs[f"{APP}/{USER}/{sid}"]
            assert run.status == adk_says(v), sid
            cps = st.checkpoints(run.run_id)
            events = v["events"]
            assert [c.checkpoint_id for c in cps] == [e["id"] for e in events]
            _check_states(cps, v)
            tokens = 0
            for c, e in zip(cps, events, strict=True):
                tokens += e["tokens"] or 0
                assert c.budgets.tokens_spent == tokens
            versions = list(dict.fromkeys(e["model_version"] for e in events if e["model_version"]))
            assert run.model_versions == versions
            if events[-1]["error_code"]:
                assert (
                    run.last_error == f"{events[-1]['error_code']}: {events[-1]['error_message']}"
                )
            tape = [(t.name, t.request, t.response) for t in st.tool_calls(run.run_id)
                    if t.kind == "tool"]  # fmt: skip
            assert tape == _expected_tape(v), sid
            models = [t for t in st.tool_calls(run.run_id) if t.kind == "model"]
            if any(e["model_version"] for e in events):
                # every model response names its version; the quota error is the model's too
                want = sum(1 for e in events if e["model_version"]) + (sid == "quota")
            else:  # ADK 1.x kept no version: the agent's events but tool answers and asks
                want = sum(1 for e in events if e["author"] != "user" and not e["responses"]
                           and not any(c["name"] == CONFIRM for c in e["calls"]))  # fmt: skip
            assert len(models) == want, sid


def _check_states(cps: list[Any], v: dict[str, Any]) -> None:
    """Each checkpoint's state is ADK's deltas folded up to its event, over the keys no
    event wrote (as ``get_session`` shows them); session keys end as ADK's own state."""
    written = {k for e in v["events"] for k in e["state_delta"]}
    state = {k: val for k, val in v["state"].items() if k not in written}
    for c, e in zip(cps, v["events"], strict=True):
        state.update(e["state_delta"])
        assert c.working_state == state, e["id"]
    head = cps[-1].working_state
    session_keys = {k for k in v["state"] if ":" not in k}
    assert {k: head[k] for k in session_keys} == {k: v["state"][k] for k in session_keys}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("adk") / "store.duckdb"
    report = do_import(DATA / "adk.sqlite", store)
    assert report.flavour == "adk"
    return store


def test_import_matches_adks_own_view(imported: Path) -> None:
    check_against_view(imported, _view(DATA))


def test_statuses_and_reasons(imported: Path) -> None:
    runs = {r["run_id"].split("/")[-1]: r for r in
            stepscope_json("runs", "--store", str(imported))["runs"]}  # fmt: skip
    assert {k: r["status"] for k, r in runs.items()} == COVERED
    assert "ConnectionError: orders database unreachable" in runs["lookup-error"]["status_reason"]
    assert "RESOURCE_EXHAUSTED" in runs["quota"]["status_reason"]
    assert "issue_refund" in runs["refund-confirm"]["status_reason"]
    assert "confirmation" in runs["refund-confirm"]["status_reason"]
    assert "1 effect(s) in flight" in runs["refund-crashed"]["status_reason"]


def test_tool_error_is_the_calls_and_model_error_the_models(imported: Path) -> None:
    with debugger.open(imported) as s:
        failed = [t for t in s.tool_calls(f"{APP}/{USER}/lookup-error") if t.error]
        assert [(t.kind, t.name, t.error) for t in failed] == [
            ("tool", "lookup_order", "ConnectionError: orders database unreachable")
        ]
        quota = [t for t in s.tool_calls(f"{APP}/{USER}/quota") if t.error]
        assert [(t.kind, t.error) for t in quota] == [
            ("model", "RESOURCE_EXHAUSTED: Quota exceeded for scripted-gemini-001")
        ]
        # the tool raised: nothing is left pending
        assert s.checkpoint(f"{APP}/{USER}/lookup-error").pending_effects == []


def test_confirmation_pause_holds_the_call_and_the_audit_says_how_to_resume(
    imported: Path,
) -> None:
    run = f"{APP}/{USER}/refund-confirm"
    with debugger.open(imported) as s:
        head = s.checkpoint(run)
        assert [(p["kind"], p["tool"], p["status"]) for p in head.pending_effects] == [
            ("held_tool_call", "issue_refund", "awaiting_confirmation")
        ]
    audit = stepscope_json("audit", run, "--store", str(imported))
    assert audit["verdict"] == "resumable_after_checks"
    assert any(CONFIRM in r and "confirmed" in r for r in audit["reasons"])
    ids = {f["rule_id"]: f["severity"] for f in audit["findings"]}
    # what ADK cannot carry is a warning with an ADK hint, not "restart required"
    assert ids["missing-schema-version"] == "warning"
    assert ids["missing-run-metadata"] == "warning"
    assert "pending-effect-without-key" not in ids


def test_reimport_adds_nothing_and_source_is_unchanged(tmp_path: Path) -> None:
    src = tmp_path / "adk.sqlite"
    shutil.copy(DATA / "adk.sqlite", src)
    assert_reimport_changes_nothing(src, tmp_path / "s.duckdb")


def test_bad_rows_are_quarantined_with_a_reason(tmp_path: Path) -> None:
    src = tmp_path / "adk.sqlite"
    shutil.copy(DATA / "adk.sqlite", src)
    con = sqlite3.connect(src)
    bad = con.execute("SELECT id FROM events WHERE session_id = 'refund-ok' "
                      "ORDER BY timestamp LIMIT 1 OFFSET 2").fetchone()[0]  # fmt: skip
    con.execute("UPDATE events SET event_data = '{not json' WHERE id = ?", (bad,))
    con.execute("PRAGMA foreign_keys = OFF")
    con.execute("INSERT INTO events SELECT 'ghost', app_name, user_id, 'gone', invocation_id, "
                "timestamp, event_data FROM events LIMIT 1")  # fmt: skip
    con.commit()
    con.close()
    report = do_import(src, tmp_path / "s.duckdb")
    t = report.total
    assert t.read == t.imported + t.quarantined and t.quarantined == 2
    with Store.open(tmp_path / "s.duckdb", read_only=True) as st:
        reasons = sorted(st.quarantine()["reason"])
        cps = st.checkpoints(f"{APP}/{USER}/refund-ok")
    assert any(r.startswith("event_data is not JSON") for r in reasons), reasons
    assert "event of session gone, which has no row in table sessions" in reasons
    assert bad not in [c.checkpoint_id for c in cps] and len(cps) == 5


def test_flavour_is_detected_and_can_be_insisted_on(tmp_path: Path) -> None:
    doc = stepscope_json("import", str(DATA / "adk.sqlite"), "--flavor", "adk",
                         "--store", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert doc["flavour"] == "adk"


@pytest.mark.adk
def test_regenerated_with_the_real_package(tmp_path: Path) -> None:
    """The generator, run with the real ADK, writes data the same checks accept."""
    out = tmp_path / "fresh"
    regenerate("adk", HERE / "generate.py", out)
    do_import(out / "adk.sqlite", tmp_path / "s.duckdb")
    fresh = _view(out)
    check_against_view(tmp_path / "s.duckdb", fresh)
    committed = _view(DATA)
    shape = {sid: [(e["author"], [c["name"] for c in e["calls"]], e["error_code"])
                   for e in v["events"]] for sid, v in committed.items()}  # fmt: skip
    assert {sid: [(e["author"], [c["name"] for c in e["calls"]], e["error_code"])
                  for e in v["events"]] for sid, v in fresh.items()} == shape  # fmt: skip


@pytest.mark.adk
@pytest.mark.postgres
def test_written_to_postgres_by_the_real_package(pg_server: Any, tmp_path: Path) -> None:
    """ADK's DatabaseSessionService on Postgres (asyncpg), read through the Postgres reader."""
    url = pg_server.create_database("adk")
    regenerate("adk", HERE / "generate.py", tmp_path / "pg", url)
    report = do_import(url, tmp_path / "s.duckdb")
    assert report.flavour == "adk" and report.total.quarantined == 0
    check_against_view(tmp_path / "s.duckdb", _view(tmp_path / "pg"))


def test_a_grown_session_adds_only_its_new_events(tmp_path: Path) -> None:
    """A database imported mid-session, then again once it finished, ends as a fresh import."""
    src = tmp_path / "adk.sqlite"
    shutil.copy(DATA / "adk.sqlite", src)
    con = sqlite3.connect(src)
    con.execute("DELETE FROM events WHERE id IN (SELECT id FROM events WHERE session_id = "
                "'refund-ok' ORDER BY timestamp DESC LIMIT 2)")  # fmt: skip
    con.commit()
    con.close()
    do_import(src, tmp_path / "followed.duckdb")
    shutil.copy(DATA / "adk.sqlite", src)
    report = do_import(src, tmp_path / "followed.duckdb")
    assert report.tables["checkpoints"].imported == 2
    t = report.total
    assert t.read == t.imported + t.updated + t.already_present
    do_import(src, tmp_path / "fresh.duckdb")
    assert store_tables(tmp_path / "followed.duckdb") == store_tables(tmp_path / "fresh.duckdb")


DATA_V0 = HERE / "data_v0"
"""Written by ADK 1.15.1 (``generate.py`` with its Python): the v0 tables, actions pickled."""


def test_adk_1_v0_tables_match_adks_own_view(tmp_path: Path) -> None:
    """ADK 1.x kept an event in columns, its actions pickled: read as data, the import is
    what ADK 1.15's ``get_session`` said (no usage or model version: ADK 1.x stored none)."""
    report = do_import(DATA_V0 / "adk.sqlite", tmp_path / "s.duckdb")
    assert report.flavour == "adk" and report.total.quarantined == 0
    check_against_view(tmp_path / "s.duckdb", _view(DATA_V0), COVERED_1)
    with Store.open(tmp_path / "s.duckdb", read_only=True) as st:
        head = st.checkpoint(f"{APP}/{USER}/refund-ok")
    assert head.metadata["adk"]["db_schema_version"] == "0"


OTHER_1X = {
    "1.5": ("0", {"custom_metadata"}),
    "1.39": ("1", set()),
}
"""Databases other ADK 1.x versions wrote (``data_<version>/``, ``generate.py`` run with
each): 1.5.0, the v0 tables before their ``custom_metadata`` column and before tools could
ask for a confirmation (the two sessions that pause on one are not written); 1.39.1, the
last 1.x, whose asynchronous service writes the v1 tables ADK 2 writes. The database schema
version read from each, and the v0 columns it lacks."""


def _covered(view: dict[str, Any]) -> dict[str, str]:
    """The statuses a 1.x view must imply: as ADK 1.15's, for the sessions it wrote."""
    return {sid: status for sid, status in COVERED_1.items() if sid in view}


def _check_other_1x(db: Path | str, directory: Path, store: Path, version: str) -> None:
    """The import of a database ADK ``version`` wrote (a SQLite file, or a Postgres URL) is
    what its ``get_session`` said."""
    schema, lacks = OTHER_1X[version]
    if isinstance(db, Path):
        columns = {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(events)")}
        assert not columns & lacks and ("event_data" in columns) == (schema == "1")
    report = do_import(db, store)
    assert report.flavour == "adk" and report.total.quarantined == 0
    view = _view(directory)
    check_against_view(store, view, _covered(view))
    with Store.open(store, read_only=True) as st:
        head = st.checkpoint(f"{APP}/{USER}/refund-ok")
    assert head.metadata["adk"]["db_schema_version"] == schema


@pytest.mark.parametrize("version", sorted(OTHER_1X))
def test_other_adk_1_versions_match_their_own_view(tmp_path: Path, version: str) -> None:
    directory = HERE / f"data_{version}"
    _check_other_1x(directory / "adk.sqlite", directory, tmp_path / "s.duckdb", version)


@pytest.mark.adk
def test_regenerated_with_the_last_adk_1(tmp_path: Path) -> None:
    """The generator, run with ADK 1.39 (``STEPSCOPE_ADK_1_39_PYTHON``), writes a database
    the same checks accept. (1.5's fixture was written the same way, with its own venv; CI
    does not build that one: docs/adk.md.)"""
    out = tmp_path / "fresh"
    regenerate("adk_1_39", HERE / "generate.py", out)
    _check_other_1x(out / "adk.sqlite", out, tmp_path / "s.duckdb", "1.39")


@pytest.mark.adk
@pytest.mark.postgres
def test_adk_1_39_on_postgres(pg_server: Any, tmp_path: Path) -> None:
    """The last ADK 1.x on Postgres (asyncpg): the v1 tables, as ADK 2 writes them."""
    url = pg_server.create_database("adk139")
    regenerate("adk_1_39", HERE / "generate.py", tmp_path / "pg", url)
    _check_other_1x(url, tmp_path / "pg", tmp_path / "s.duckdb", "1.39")


def _v0_with(tmp_path: Path, bad: dict[str, bytes]) -> Path:
    """A copy of the ADK 1.x database with the given events' ``actions`` replaced."""
    src = tmp_path / "adk.sqlite"
    shutil.copy(DATA_V0 / "adk.sqlite", src)
    con = sqlite3.connect(src)
    for event_id, blob in bad.items():
        con.execute("UPDATE events SET actions = ? WHERE id = ?", (blob, event_id))
    con.commit()
    con.close()
    return src


def test_a_v0_pickle_is_never_run(tmp_path: Path) -> None:
    """Pickles that would run code, or blow up, in ``actions``: each row goes to quarantine
    with its reason, nothing they name is imported or called, the other rows import."""
    marker = tmp_path / "pwned"
    ids = [e["id"] for e in _view(DATA_V0)["refund-ok"]["events"]]
    system = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    nested = b"\x80\x04" + b"]" * 100_000 + b"a" * 99_999 + b"."  # lists 100,000 deep
    src = _v0_with(tmp_path, {ids[1]: system, ids[2]: b"\x80\x04\x95", ids[3]: nested})
    report = do_import(src, tmp_path / "s.duckdb")
    assert not marker.exists()
    assert report.total.quarantined == 3
    with Store.open(tmp_path / "s.duckdb", read_only=True) as st:
        reasons = sorted(st.quarantine()["reason"])
        kept = [c.checkpoint_id for c in st.checkpoints(f"{APP}/{USER}/refund-ok")]
    assert any("not ADK's EventActions pickle (call:os.system)" in r for r in reasons), reasons
    assert any("not a readable pickle" in r for r in reasons), reasons
    assert any("nested deeper than 200 levels" in r for r in reasons), reasons
    assert kept == [ids[0], *ids[4:]]


@pytest.mark.adk
@pytest.mark.postgres
def test_adk_1_on_postgres(pg_server: Any, tmp_path: Path) -> None:
    """ADK 1.x's v0 tables on Postgres (psycopg2): the pickles as ``bytea``, the flags as
    booleans, the JSON columns as ``json``."""
    url = pg_server.create_database("adk1")
    regenerate("adk_1", HERE / "generate.py", tmp_path / "pg", url)
    report = do_import(url, tmp_path / "s.duckdb")
    assert report.flavour == "adk" and report.total.quarantined == 0
    check_against_view(tmp_path / "s.duckdb", _view(tmp_path / "pg"), COVERED_1)


@pytest.mark.adk
def test_regenerated_with_adk_1(tmp_path: Path) -> None:
    """The generator, run with ADK 1.x (``STEPSCOPE_ADK_1_PYTHON``), writes the v0 tables
    the same checks accept."""
    out = tmp_path / "fresh"
    regenerate("adk_1", HERE / "generate.py", out)
    assert "event_data" not in {r[1] for r in sqlite3.connect(out / "adk.sqlite").execute(
        "PRAGMA table_info(events)")}  # fmt: skip
    do_import(out / "adk.sqlite", tmp_path / "s.duckdb")
    check_against_view(tmp_path / "s.duckdb", _view(out), COVERED_1)


def test_a_call_whose_answer_never_came_is_in_doubt(imported: Path) -> None:
    run = f"{APP}/{USER}/refund-crashed"
    with debugger.open(imported) as s:
        (p,) = s.checkpoint(run).pending_effects
        assert (p["kind"], p["tool"], p["status"]) == ("tool_call", "issue_refund", "unknown")
    audit = stepscope_json("audit", run, "--store", str(imported))
    # ADK gives the call no key: nobody can look the refund up, so a resume cannot be safe
    assert audit["verdict"] == "restart_required"
    assert any("issue_refund" in r and "idempotency key" in r for r in audit["reasons"])
