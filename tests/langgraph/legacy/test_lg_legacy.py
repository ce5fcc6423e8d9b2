"""Databases older LangGraph versions wrote, against what each version's own API said of them.

``data/<version>/lg.sqlite`` was written by LangGraph 0.2, 0.3, 0.4 and 0.6 (with the
``langgraph-checkpoint-sqlite`` of their day, which stored no ``task_path``) running the
pattern graphs of ``test_lg_status.py``; ``says.json`` beside it is what that version's
``get_state`` / ``get_state_history`` reported (``generate.py``). Every check compares the
import with it. The ``langgraph_legacy``-marked test regenerates a database with the version
named by ``STEPSCOPE_LANGGRAPH_<0_2|0_3|0_4|0_6>_PYTHON`` and runs the same checks.

Where the import and the version's API differ on purpose, :data:`DIFFERENCES` says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from debugger.model import ImportReport
from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.langgraph.map import is_internal
from loaders.langgraph.tasks import task_name
from tests.langgraph.test_lg_status import expected_status

HERE = Path(__file__).parent
VERSIONS = ("0.2", "0.3", "0.4", "0.6")
PYTHON = {v: os.environ.get(f"STEPSCOPE_LANGGRAPH_{v.replace('.', '_')}_PYTHON") for v in VERSIONS}
"""The Python with each older LangGraph (``.ci/run`` builds them, pinned: docs/langgraph.md)."""

BEFORE_1_0_RESUME = "ask"
"""``two-questions``: before LangGraph 1.0, ``get_state`` counted a task's ``__resume__``
write as output and left the task out of ``next`` although it asked again and waits (1.0
reads the task's status and keeps it); Stepscope follows 1.0: the node is due."""
UNSEEN_EDGE = {
    "bp-before": "b",
    "bp-after": "c",
    "retry-failed": "flaky",
    "failed-step-tool": "boom",
}
"""LangGraph 0.2 named an edge ``a -> b`` after the node it leaves (a channel ``a`` that ``b``
subscribes to): which node follows is the graph's, and the database shows it only for nodes
that ran after the channel first held a value. In these threads the next node never ran, so
nothing in the file names it (docs/langgraph.md, Limits). The same holds for an earlier
checkpoint's ``next`` when the node had not yet run since the channel first held a value: the
import never names a node LangGraph does not, and may miss such a one."""


def differences(version: str, thread: str) -> set[str]:
    """Nodes LangGraph's ``next`` at the head and the import's differ by, with the reason
    above (empty where they must agree)."""
    out = set()
    if thread == "two-questions":
        out.add(BEFORE_1_0_RESUME)
    if version == "0.2" and thread in UNSEEN_EDGE:
        out.add(UNSEEN_EDGE[thread])
    return out


def _says(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "says.json").read_text())  # type: ignore[no-any-return]


def _import(source: Path | str, store: Path) -> ImportReport:
    with Store.open(store) as st:
        return import_source(st, str(source), ImportOptions())


@pytest.fixture(scope="module", params=VERSIONS)
def legacy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, dict[str, Any], Path, ImportReport]:
    """A committed database of one version (copied: the source stays as written), imported."""
    version = request.param
    base = tmp_path_factory.mktemp(f"lg{version}")
    shutil.copy(HERE / "data" / version / "lg.sqlite", base / "lg.sqlite")
    report = _import(base / "lg.sqlite", base / "s.duckdb")
    return version, _says(HERE / "data" / version), base / "s.duckdb", report


def check_against_says(
    version: str, says: dict[str, Any], store: Path, report: ImportReport
) -> None:
    """The import agrees with the version's own API on every thread, but for the documented
    :func:`differences`."""
    assert report.total.quarantined == 0 and report.total.read > 0
    with Store.open(store, read_only=True) as st:
        for thread, said in says["threads"].items():
            head = said["head"]
            run = st.run(thread)
            cps = {c.checkpoint_id: c for c in st.checkpoints(thread)}
            assert {s["checkpoint_id"] for s in said["history"]} <= set(cps), thread
            mine = st.checkpoint(thread)  # the head
            assert mine.checkpoint_id == head["checkpoint_id"], thread
            gap = differences(version, thread)
            assert set(mine.metadata["next"]) ^ set(head["next"]) == gap, thread
            # every write of the head names its task (recovered from its id where the
            # saver stored no path), one of the tasks LangGraph lists there; but for the
            # task of a node the database does not name (UNSEEN_EDGE)
            names = {t["name"] for t in head["tasks"]}
            for w in mine.metadata.get("pending_writes", []):
                if not (version == "0.2" and thread in UNSEEN_EDGE):
                    assert task_name(w["task_path"]) in names, (thread, w)
            want = expected_status(head)
            if gap & set(UNSEEN_EDGE.values()) and not want[1]:
                # a breakpoint before the unseen node reads as the end
                want = ("completed", None)
            assert (run.status, run.last_error) == want, thread
            for snap in said["history"]:
                c = cps[snap["checkpoint_id"]]
                if snap["checkpoint_id"] == head["checkpoint_id"]:
                    pass
                elif version == "0.2":
                    assert set(c.metadata["next"]) <= set(snap["next"]), (thread, snap["step"])
                else:
                    assert c.metadata["next"] == list(snap["next"]), (thread, snap["step"])
                messages = c.working_state.get("messages") or []
                assert [m.get("id") for m in messages] == [m["id"] for m in snap["messages"]]
                nodes = {t["name"] for s in said["history"] for t in s["tasks"]}
                assert not [k for k in c.working_state if is_internal(k) or k in nodes], thread


def test_each_version_s_database_is_what_its_api_says(
    legacy: tuple[str, dict[str, Any], Path, ImportReport],
) -> None:
    check_against_says(*legacy)


def test_an_open_question_names_its_node(
    legacy: tuple[str, dict[str, Any], Path, ImportReport],
) -> None:
    """The asking task's writes carry only its id: the node is found from it."""
    _, says, store, _ = legacy
    with Store.open(store, read_only=True) as st:
        run = st.run("two-questions")
    assert run.status == "parked"
    assert run.status_reason.startswith("interrupt() in node ask waits for an answer")
    assert "confirm 42?" in run.status_reason
    if "parallel-questions" in says["threads"]:  # LangGraph 0.4 on: answered by its id
        with Store.open(store, read_only=True) as st:
            reason = st.run("parallel-questions").status_reason
        assert reason.startswith("interrupt() in node right waits")


def test_a_failed_tool_call_carries_its_task_s_error(
    legacy: tuple[str, dict[str, Any], Path, ImportReport],
) -> None:
    """The prebuilt agent's Send to its tools (``pending_sends`` before LangGraph 0.5, the
    ``__pregel_tasks`` channel after) ran the call that raised."""
    _, says, store, _ = legacy
    (error,) = [t["error"] for t in says["threads"]["react-keyed-crash"]["head"]["tasks"]]
    with Store.open(store, read_only=True) as st:
        calls = {c.name: c for c in st.tool_calls("react-keyed-crash") if c.kind == "tool"}
    assert calls["refund"].error == error
    assert calls["refund"].idempotency_key == "refund-A-2-30"


def test_the_source_is_not_written(tmp_path: Path) -> None:
    db = tmp_path / "lg.sqlite"
    shutil.copy(HERE / "data" / "0.2" / "lg.sqlite", db)
    before = db.read_bytes()
    _import(db, tmp_path / "s.duckdb")
    assert db.read_bytes() == before


def _generate(version: str, out: Path, *pg_url: str) -> dict[str, Any]:
    """Run the generator with the older version's Python (skip when there is none)."""
    python = PYTHON[version]
    if not python:
        pytest.skip(
            f"no Python with LangGraph {version}: set "
            f"STEPSCOPE_LANGGRAPH_{version.replace('.', '_')}_PYTHON (see docs/langgraph.md)"
        )
    done = subprocess.run(
        [python, str(HERE / "generate.py"), str(out), *pg_url], capture_output=True,
        text=True, timeout=240, cwd=HERE.parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    says = _says(out)
    assert says["versions"]["langgraph"].startswith(f"{version}.")
    assert set(says["threads"]) == set(_says(HERE / "data" / version)["threads"])
    return says


@pytest.mark.langgraph_legacy
@pytest.mark.parametrize("version", VERSIONS)
def test_regenerated_with_the_older_version(version: str, tmp_path: Path) -> None:
    """The generator, run with the older LangGraph itself, writes what the checks accept."""
    says = _generate(version, tmp_path / "fresh")
    report = _import(tmp_path / "fresh" / "lg.sqlite", tmp_path / "s.duckdb")
    check_against_says(version, says, tmp_path / "s.duckdb", report)
    _import(tmp_path / "fresh" / "functional.sqlite", tmp_path / "f.duckdb")
    check_functional(tmp_path / "fresh", tmp_path / "f.duckdb")


@pytest.mark.langgraph_legacy
@pytest.mark.postgres
@pytest.mark.parametrize("version", VERSIONS)
def test_the_older_version_s_postgres_database(
    version: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same patterns through that version's PostgresSaver (a real server): before format
    v 4 a checkpoint's Sends are its parent's writes there (``react-keyed-crash``'s tool task)."""
    url = request.getfixturevalue("pg_server").create_database("lglegacy")
    says = _generate(version, tmp_path / "fresh", url)
    assert "langgraph-checkpoint-postgres" in says["versions"]
    report = _import(url, tmp_path / "s.duckdb")
    check_against_says(version, says, tmp_path / "s.duckdb", report)


def _head_of(version: str, thread: str) -> tuple[Any, dict[str, Any], dict[str, Any], list[Any]]:
    """A thread's head as the import reads it: the row, its checkpoint and metadata decoded,
    and its writes decoded (the committed database, opened read-only)."""
    from loaders.langgraph.decode import SafeDecoder
    from loaders.langgraph.map import decode_checkpoint, decode_metadata
    from loaders.langgraph.source import LangGraphTables
    from loaders.sqlite import SqliteReader

    dec = SafeDecoder()
    with SqliteReader(str(HERE / "data" / version / "lg.sqlite")) as reader:
        tables = LangGraphTables(reader)
        head = [ck for ck in tables.checkpoints() if ck.thread_id == thread and not ck.has_child]
    ck = head[-1]
    data = decode_checkpoint(dec, ck, "sqlite")
    meta = decode_metadata(dec, ck.metadata)
    return ck, data, meta, [(w, dec.decode(w.type, w.value)) for w in ck.writes]


@pytest.mark.parametrize("version", VERSIONS)
def test_task_ids_give_the_node_and_nothing_else(version: str) -> None:
    """``join-crash``'s failed task is named ``c`` from its id alone; a checkpoint whose id,
    step or versions are not what LangGraph wrote names nothing (and does not raise)."""
    from loaders.langgraph.task_ids import with_task_paths
    from loaders.langgraph.tasks import task_writes

    ck, data, meta, decoded = _head_of(version, "join-crash")
    assert all(not w.task_path for w, _ in decoded)
    named = with_task_paths(decoded, data, meta, ck.checkpoint_ns)
    assert [t.name for t in task_writes(named) if t.errors] == ["c"]
    broken = [
        ({**data, "id": "not-a-uuid"}, meta),
        ({**data, "id": data["id"][:-2] + "00"}, meta),
        (data, {**meta, "step": "1"}),
        (data, {**meta, "step": meta["step"] + 1}),
        ({**data, "versions_seen": {"c": [1, 2]}, "channel_versions": {"x": {}}}, meta),
        ({**data, "channel_versions": None, "versions_seen": None, "channel_values": None}, meta),
    ]
    for d, m in broken:
        assert with_task_paths(decoded, d, m, ck.checkpoint_ns) == decoded


# -- the functional API (@entrypoint / @task) -------------------------------------------------
FUNCTIONAL_TOKENS = {
    "func-agent": 350, "func-agent-down": 100, "func-ask-parked": 100, "func-ask-resumed": 350,
    "func-chat": 120, "func-text": 0, "func-retried": 0,
}  # fmt: skip
"""Tokens of each thread, as today's LangGraph run gives them (tests/langgraph/functional.py)."""


def check_functional(directory: Path, store: Path) -> None:
    """Every checkpoint's state and ``next`` as the version's ``get_state_history`` said, and
    each thread's status and tokens as today's.

    One documented difference: before LangGraph 1.0 the SQLite saver stored no task paths,
    so at the input checkpoint of a thread's first call nothing in the file names the
    entrypoint the input starts: ``next`` is ``__start__`` there (a replay takes the node
    from the graph)."""
    from tests.langgraph.expect import same_state
    from tests.langgraph.functional import FUNCTIONAL_STATUS

    says = json.loads((directory / "functional.json").read_text())["threads"]
    assert set(says) == set(FUNCTIONAL_STATUS)
    with Store.open(store, read_only=True) as st:
        for thread, history in says.items():
            run = st.run(thread)
            assert (run.status, run.budgets.tokens_spent) == (
                FUNCTIONAL_STATUS[thread], FUNCTIONAL_TOKENS[thread]), thread  # fmt: skip
            cps = {c.checkpoint_id: c for c in st.checkpoints(thread)}
            assert set(cps) == {s["checkpoint_id"] for s in history}, thread
            for snap in history:
                c = cps[snap["checkpoint_id"]]
                assert same_state(c.working_state, snap["values"]), (thread, snap["step"])
                first_input = snap["parent_id"] is None
                want = ["__start__"] if first_input else snap["next"]
                assert c.metadata["next"] == want, (thread, snap["step"])


@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_s_functional_api_database(version: str, tmp_path: Path) -> None:
    shutil.copy(HERE / "data" / version / "functional.sqlite", tmp_path / "f.sqlite")
    report = _import(tmp_path / "f.sqlite", tmp_path / "s.duckdb")
    assert report.total.quarantined == 0
    check_functional(HERE / "data" / version, tmp_path / "s.duckdb")
