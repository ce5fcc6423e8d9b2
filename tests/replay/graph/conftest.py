"""One LangGraph database written by the real LangGraph (the sample refund desk and the
test graphs), imported once; each test replays on its own copy of the store."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph.patterns_model import sqlite_saver
from tests.replay.graph import graphs as G


class Listener:
    """A TCP server on 127.0.0.1 that counts what reaches it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.received.append(conn.recv(100))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[Listener]:
    """A listening socket, its port in ``$I18_PORT`` (the replay's child inherits it)."""
    server = Listener()
    monkeypatch.setenv("I18_PORT", str(server.port))
    G.PORT["value"] = server.port
    yield server
    server.close()


@dataclass
class Written:
    """The written databases and their import."""

    source: Path
    """The SqliteSaver file of the test graphs."""
    refund_dir: Path
    """The refund desk sample's directory (``refund-graph.sqlite``, ``payments.sqlite``)."""
    store: Path


@pytest.fixture(scope="session")
def lg_written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """Every graph run once through SqliteSaver, imported into one store."""
    from sample_checkpoints.langgraph_refund.__main__ import write

    base = tmp_path_factory.mktemp("lg-replay")
    refund_db = write(base / "refund")
    source = base / "graphs.sqlite"
    G.DB["value"] = str(base / "notes.sqlite")
    server = Listener()
    G.PORT["value"] = server.port
    try:
        with sqlite_saver(source) as saver:
            G.write_react(saver)
            G.write_approval(saver)
            G.write_nested_and_fan(saver)
            G.write_network(saver)
            G.write_functional(saver)
    finally:
        server.close()
    assert [m[:5] for m in server.received] == [b"REFUN", b"AUDIT"]
    store = base / "store.duckdb"
    with Store.open(store) as s:
        for path in (refund_db, source):
            import_source(s, str(path), ImportOptions())
    return Written(source, refund_db.parent, store)


@pytest.fixture
def lg(lg_written: Written, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Written:
    """A copy of the written store and of the refund desk's files, for one test."""
    store = tmp_path / "store.duckdb"
    shutil.copy(lg_written.store, store)
    refund = tmp_path / "refund"
    shutil.copytree(lg_written.refund_dir, refund)
    monkeypatch.setenv("REFUND_PAYMENTS", str(refund / "payments.sqlite"))
    # the desk's directory on the import path, as a user's project is: the kernel sandbox
    # shows it read-only, so the mocks can read the ledger (passed with --env)
    monkeypatch.syspath_prepend(str(refund))
    notes = tmp_path / "notes.sqlite"
    shutil.copy(lg_written.source.with_name("notes.sqlite"), notes)
    monkeypatch.setenv("I18_DB", str(notes))
    return Written(lg_written.source, refund, store)
