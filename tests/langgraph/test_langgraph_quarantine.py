"""Values Stepscope will not open (encrypted) or cannot read (corrupt) go to quarantine; a
pickle is read as data, never unpickled.

The databases are written by the real savers, with LangGraph's pickle fallback and its
EncryptedSerializer (a test cipher named ``aes``, as pycryptodome is not a dependency), then
damaged with plain SQL where the test needs a corrupt value.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from debugger.store import Store
from loaders import import_source
from tests.langgraph.graphs import approval, linear

UNPICKLED: list[str] = []
REPO = Path(__file__).resolve().parents[2]


class Opaque:
    """Not msgpack-serialisable, so LangGraph's pickle fallback pickles the whole state."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def __setstate__(self, state: dict[str, Any]) -> None:
        UNPICKLED.append("unpickled!")  # proof that someone ran pickle.loads
        self.__dict__.update(state)


class XorCipher:
    """A stand-in cipher for EncryptedSerializer (the bytes are unreadable without it)."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "aes", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        return bytes(b ^ 0x5A for b in ciphertext)


def _pickled_run(saver: Any) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class Holder(TypedDict):
        thing: Any

    g: Any = StateGraph(Holder)
    g.add_node("keep", lambda s: {"thing": s["thing"]})
    g.add_edge(START, "keep")
    g.add_edge("keep", END)
    g.compile(checkpointer=saver).invoke(
        {"thing": Opaque("s3cr3t")}, {"configurable": {"thread_id": "pickled"}}
    )


def _import(source: str, store_path: Path) -> Any:
    with Store.open(store_path) as store:
        report = import_source(store, source)
        return report, store.quarantine(), store.runs()


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(tmp_path / "lg.sqlite", check_same_thread=False)
    yield lambda serde=None: SqliteSaver(con, serde=serde)
    con.close()


OPAQUE = {"__type__": f"pickle:{__name__}.Opaque", "secret": "s3cr3t"}
"""The pickled ``Opaque("s3cr3t")`` as the import shows it: its class named, its fields."""


def _check_pickled(store_path: Path) -> None:
    with Store.open(store_path, read_only=True) as st:
        head = st.checkpoint("pickled")
    assert head.working_state["thing"] == OPAQUE
    assert UNPICKLED == []


def test_pickle_is_read_as_data_never_unpickled_sqlite(sqlite_saver: Any, tmp_path: Path) -> None:
    """LangGraph's pickle fallback: the value is there, as data; ``__setstate__`` never ran."""
    _pickled_run(sqlite_saver(JsonPlusSerializer(pickle_fallback=True)))
    linear(sqlite_saver())
    report, quarantine, runs = _import(str(tmp_path / "lg.sqlite"), tmp_path / "s.duckdb")
    assert UNPICKLED == []
    assert report.total.quarantined == 0 and len(quarantine) == 0
    assert {"pickled", "linear"} <= set(runs["run_id"])
    _check_pickled(tmp_path / "s.duckdb")


def test_a_pickle_that_would_run_code_is_named_not_run(sqlite_saver: Any, tmp_path: Path) -> None:
    """A pickled value rewritten to call ``os.system``: the call is data in the state."""
    marker = tmp_path / "pwned"
    _pickled_run(sqlite_saver(JsonPlusSerializer(pickle_fallback=True)))
    con = sqlite3.connect(tmp_path / "lg.sqlite")
    evil = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    con.execute("UPDATE writes SET value = ? WHERE type = 'pickle'", (evil,))
    con.commit()
    con.close()
    _import(str(tmp_path / "lg.sqlite"), tmp_path / "s.duckdb")
    assert not marker.exists() and UNPICKLED == []


def test_encrypted_is_quarantined_sqlite(sqlite_saver: Any, tmp_path: Path) -> None:
    approval(sqlite_saver(EncryptedSerializer(XorCipher())))
    report, quarantine, _ = _import(str(tmp_path / "lg.sqlite"), tmp_path / "s.duckdb")
    assert report.tables["checkpoints"].imported == 0
    reasons = set(quarantine["reason"])
    assert "encrypted value (msgpack+aes): not decrypted" in reasons
    assert all("thread_id" in raw for raw in quarantine["raw"])


def test_corrupt_blob_and_write_quarantined_sqlite(sqlite_saver: Any, tmp_path: Path) -> None:
    linear(sqlite_saver())
    path = tmp_path / "lg.sqlite"
    con = sqlite3.connect(path)
    ids = [r[0] for r in con.execute("SELECT checkpoint_id FROM checkpoints ORDER BY 1")]
    con.execute("UPDATE checkpoints SET checkpoint = x'c1c1c1' WHERE checkpoint_id = ?", [ids[2]])
    con.execute("UPDATE writes SET value = x'c1' WHERE checkpoint_id = ? AND idx = 0", [ids[1]])
    con.commit()
    con.close()
    report, quarantine, _ = _import(str(path), tmp_path / "s.duckdb")
    assert report.tables["checkpoints"].quarantined == 1
    assert report.tables["checkpoints"].imported == len(ids) - 1
    assert report.tables["effects"].quarantined == 1
    reasons = sorted(quarantine["reason"])
    assert reasons[0].startswith("corrupt msgpack value")
    assert reasons[1].startswith("undecodable write: corrupt msgpack value")
    with Store.open(tmp_path / "s.duckdb", read_only=True) as store:
        marked = [c for c in store.checkpoints("linear") if "undecodable_writes" in c.metadata]
    assert [c.checkpoint_id for c in marked] == [ids[1]]
    # a second import finds the same rows and adds nothing, not even quarantine records
    report2, quarantine2, _ = _import(str(path), tmp_path / "s.duckdb")
    assert report2.total.imported == 0
    assert len(quarantine2) == len(quarantine)


@pytest.mark.postgres
def test_pickle_read_encrypted_and_corrupt_quarantined_postgres(
    pg_server: Any, tmp_path: Path
) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    url = pg_server.create_database("lgq")
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        linear(saver)
        saver.serde = JsonPlusSerializer(pickle_fallback=True)
        _pickled_run(saver)
        saver.serde = EncryptedSerializer(XorCipher())
        approval(saver)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(
            "UPDATE checkpoint_blobs SET blob = '\\xc1c1'::bytea "
            "WHERE thread_id = 'linear' AND channel = 'log' AND version = ("
            "  SELECT max(version) FROM checkpoint_blobs WHERE thread_id = 'linear' "
            "  AND channel = 'log')"
        )
    report, quarantine, runs = _import(url, tmp_path / "s.duckdb")
    assert UNPICKLED == []
    reasons = set(quarantine["reason"])
    assert not [r for r in reasons if "pickle" in r]
    _check_pickled(tmp_path / "s.duckdb")
    assert "encrypted value (msgpack+aes): not decrypted (channel '__start__')" in reasons
    assert "undecodable write: encrypted value (msgpack+aes): not decrypted" in reasons
    assert any(r.startswith("corrupt msgpack value") and "'log'" in r for r in reasons)
    t = report.total
    assert t.read == t.imported + t.already_present + t.quarantined
    assert "linear" in set(runs["run_id"])


def test_decoding_imports_no_user_module(sqlite_saver: Any, tmp_path: Path) -> None:
    from tests.langgraph.graphs import rich

    rich(sqlite_saver())
    code = (
        "import sys\n"
        "from debugger.store import Store\n"
        "from loaders import import_source\n"
        f"with Store.open({str(tmp_path / 'x.duckdb')!r}) as s:\n"
        f"    r = import_source(s, {str(tmp_path / 'lg.sqlite')!r})\n"
        "assert r.total.imported > 0, r\n"
        "bad = [m for m in ('tests.langgraph.graphs', 'langchain_core', 'langgraph', 'pydantic')"
        " if m in sys.modules]\n"
        "print(bad)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the user module *could* be imported
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"
