"""The Import page: a path, an upload, a Postgres URL, the report with quarantine, and a
locked store."""

from __future__ import annotations

import html
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import debugger.store as store_module
from sample_checkpoints import DATA_DIR
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.ui.helpers import frames_text, listed_runs, open_app, texts


def _source_with_a_bad_row(path: Path) -> Path:
    rows = native_rows(runs=2, steps=3)
    rows.append(dict(rows[0], step_index="seven", working_state=json.dumps({"x": 1})))
    return write_native_sqlite(path, rows)


def test_import_a_path_shows_the_report_and_the_quarantined_rows(tmp_path: Path) -> None:
    store = tmp_path / "new.duckdb"
    source = _source_with_a_bad_row(tmp_path / "bad.sqlite")
    at = open_app(store, "import")
    assert not at.exception and not at.error
    at.text_input(key="import_path").set_value(str(source)).run()
    at.button(key="import_go").click().run()
    assert not at.exception and not at.error
    page = texts(at)
    assert "read 7 rows = 6 imported + 0 already present + 1 quarantined" in page
    assert "step_index is not an integer" in frames_text(at)  # reason and the row itself
    at.button(key="import_go").click().run()  # again: nothing new
    assert "= 0 imported + 6 already present + 1 quarantined" in texts(at)
    at = open_app(store)  # the app reads the new runs
    assert {r["run_id"] for r in listed_runs(at)} == {"run-0", "run-1"}


def test_import_an_uploaded_file(tmp_path: Path) -> None:
    store = tmp_path / "up.duckdb"
    at = open_app(store, "import")
    at.radio(key="import_kind").set_value("An uploaded file").run()
    data = (DATA_DIR / "native.sqlite").read_bytes()
    at.file_uploader(key="import_upload").upload("native.sqlite", data).run()
    at.button(key="import_go").click().run()
    assert not at.exception and not at.error
    assert "0 quarantined" in texts(at)
    assert "crash-at-step-7" in {r["run_id"] for r in listed_runs(open_app(store))}


def test_import_into_a_store_another_process_writes_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # held throughout: the wait for the lock to go is cut short (tests/store/test_store_open)
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)
    store = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(store)!r}); print('ok', flush=True);"
            " sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        at = open_app(store, "import")
        at.text_input(key="import_path").set_value(str(DATA_DIR / "native.sqlite")).run()
        at.button(key="import_go").click().run()
        assert not at.exception
        errors = [html.unescape(e.value) for e in at.error]
        assert len(errors) == 1 and "another process" in errors[0] and "Hint:" in errors[0]
    finally:
        holder.communicate("")


def test_an_import_that_fails_before_reading_leaves_no_bar_behind(tmp_path: Path) -> None:
    """A source of other tables: one error, in the page's words, and no progress bar still
    saying the import is starting."""
    source = tmp_path / "other.sqlite"
    con = sqlite3.connect(source)
    con.execute("CREATE TABLE orders (id INTEGER, body TEXT)")
    con.commit()
    con.close()
    at = open_app(tmp_path / "s.duckdb", "import")
    at.text_input(key="import_path").set_value(str(source)).run()
    at.button(key="import_go").click().run()
    assert not at.exception
    errors = [html.unescape(e.value) for e in at.error]
    assert len(errors) == 1 and "give it in the Mapping file field" in errors[0], errors
    assert not [e.proto.text for e in at.get("progress")]


@pytest.mark.postgres
def test_import_a_postgres_url(tmp_path: Path) -> None:
    from tests.fixtures.pg import database_for, write_native_postgres

    url = write_native_postgres(database_for(tmp_path), native_rows(runs=2, steps=3), [], [])
    store = tmp_path / "pg.duckdb"
    at = open_app(store, "import")
    at.radio(key="import_kind").set_value("A Postgres URL").run()
    at.text_input(key="import_url").set_value(url).run()
    at.button(key="import_go").click().run()
    assert not at.exception and not at.error
    page = texts(at)
    assert "read 6 rows = 6 imported + 0 already present + 0 quarantined" in page
    assert "postgres (native)" in page and "password" not in page


PROGRESS_FROM_A_THREAD = """
import threading
from debugger.ui.imports import _progress_bar

report, _ = _progress_bar()
reporter = threading.Thread(target=report, args=("checkpoints", 5, 10))
reporter.start()
reporter.join()
"""


def test_the_progress_bar_moves_when_the_import_reports_from_a_thread() -> None:
    """A one-pass Parquet import reports its progress from a thread of its own: the page's
    bar takes it (without the script run's context Streamlit refused it, and that thread
    stopped reporting)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(PROGRESS_FROM_A_THREAD)
    at.run()
    assert not at.exception
    bars = [e.proto for e in at.get("progress")]
    assert len(bars) == 1
    assert bars[0].value == 50 and bars[0].text == "checkpoints: 5 of 10 rows"
