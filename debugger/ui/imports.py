"""Import page: a file path, an uploaded file or a Postgres URL, with progress and the report.

The app reads the store read-only and only while a page reads; for an import the app's
sessions wait while the store is open for writing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from debugger.errors import StepscopeError
from debugger.pages_data.imports import (
    FLAVOURS,
    KINDS,
    UPLOAD_SUFFIXES,
    ImportResult,
    app_hint,
    import_into,
    import_upload,
    progress,
    quarantined_runs,
    reason_rows,
    table_rows,
)
from debugger.pages_data.markup import md_text
from debugger.ui.common import (
    generation,
    open_cached,
    page_labels,
    shown_path,
    store_path,
    writing,
)

TITLE, ICON, URL = page_labels(__name__)


def _progress_bar() -> tuple[Any, Callable[[], None]]:
    """The import's progress callback, and what removes the bar when the import failed
    before it read a row (an error under "Starting the import…" reads as still running)."""
    bar = st.progress(0.0, text="Starting the import…")
    run = get_script_run_ctx()
    reported = threading.Event()

    def report(table: str, done: int, total: int | None) -> None:
        # a one-pass Parquet import reports from a thread of its own: the bar is this
        # script run's, so that thread draws it as the run (without, Streamlit drops it)
        if get_script_run_ctx(suppress_warning=True) is None and run is not None:
            add_script_run_ctx(threading.current_thread(), run)
        reported.set()
        share, text = progress(table, done, total)
        bar.progress(share, text=text)

    def unused() -> None:
        if not reported.is_set():
            bar.empty()

    return report, unused


def _source_inputs() -> tuple[str, Any]:
    kind = st.radio("Source", KINDS, horizontal=True, key="import_kind")
    if kind == KINDS[1]:
        upload = st.file_uploader(
            "Checkpoint file", type=[s[1:] for s in UPLOAD_SUFFIXES], key="import_upload"
        )
        return kind, upload
    if kind == KINDS[2]:
        url = st.text_input(
            "Postgres URL", key="import_url", placeholder="postgresql://reader@db.internal/agents"
        )
        return kind, url.strip()
    path = st.text_input(
        "Path (SQLite file, Parquet file, directory or glob)",
        key="import_path",
        placeholder="sample_checkpoints/data/native.sqlite",
    )
    return kind, path.strip()


def _run_import(kind: str, source: Any, flavour: str, mapping: str) -> ImportResult | None:
    """Import; on an error show it in the page's words (None)."""
    on_progress, drop_unused_bar = _progress_bar()
    try:
        # the app's sessions keep off the store while it is open for writing
        with writing():
            if kind == KINDS[1]:
                return import_upload(store_path(), source.name, source.getvalue(), flavour,
                                     mapping, on_progress)  # fmt: skip
            return import_into(store_path(), source, flavour, mapping, on_progress)
    except StepscopeError as e:
        drop_unused_bar()
        st.error(md_text(app_hint(str(e))), icon=":material/error:")
        return None


def _report(result: ImportResult) -> None:
    report = result.report
    st.success(report.summary(), icon=":material/check_circle:")
    st.caption(f"{md_text(report.kind)} ({md_text(report.flavour)}) {md_text(result.location)}")
    st.dataframe(pd.DataFrame(table_rows(report)), hide_index=True, width="stretch")
    if report.quarantine_reasons:
        runs = quarantined_runs(result.quarantined)
        which = (" in runs " + ", ".join(f"{md_text(r)} ({n})" for r, n in runs.items())
                 if runs else "")  # fmt: skip
        st.warning(f"{report.total.quarantined:,} rows quarantined{which}: those runs are "
                   "incomplete in the store.", icon=":material/block:")  # fmt: skip
        st.dataframe(pd.DataFrame(reason_rows(report)), hide_index=True, width="stretch")
        st.markdown("#### Quarantined rows")
        st.dataframe(result.quarantined, hide_index=True, width="stretch")


def page() -> None:
    """Render the Import page."""
    st.title("Import")
    st.caption(f"Into the store `{shown_path(store_path())}`. Re-importing a source adds only "
               "new rows.")  # fmt: skip
    kind, source = _source_inputs()
    c1, c2 = st.columns(2)
    flavour = c1.selectbox("Flavour", FLAVOURS, key="import_flavour")
    mapping = c2.text_input("Mapping file (TOML, for other table shapes)", key="import_mapping")
    if st.button("Import", type="primary", disabled=not source, key="import_go"):
        # a failed import clears the last report: it would read as this import's
        st.session_state["import_last"] = _run_import(kind, source, flavour, mapping.strip())
    last = st.session_state.get("import_last")
    if isinstance(last, ImportResult):
        _report(last)
    _history()


def _history() -> None:
    if not Path(store_path()).exists():
        st.info("No store yet: the first import creates it.")
        return
    try:  # secondary: an error here would repeat the import's own error
        sources = open_cached(store_path(), generation()).sources()
    except StepscopeError as e:
        st.caption(f"Import history unavailable: {md_text(e)}")
        return
    if not sources.empty:
        st.markdown("#### Imports so far")
        st.dataframe(sources, hide_index=True, width="stretch")
