"""Migrations page: schema versions in the store, the dry-run report, and one checkpoint's
stored state beside its migrated state.

A checkpoint whose version cannot reach the current one is shown as stored with a
"restart required" error, never as if it were current.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from debugger.errors import StepscopeError
from debugger.migrations import (
    DryRunReport,
    MigrationFailed,
    Registry,
    RestartRequired,
    dry_run,
    iter_steps,
    load_registry,
    migrated,
)
from debugger.pages_data.markup import md_text
from debugger.pages_data.migrations import (
    change_rows,
    checkpoint_labels,
    dry_run_rows,
    failure_rows,
    version_rows,
)
from debugger.store import Store
from debugger.ui.audit import migrations_module
from debugger.ui.common import get_store, guarded, page_labels

TITLE, ICON, URL = page_labels(__name__)


def _versions(store: Store, registry: Registry | None) -> None:
    rows = guarded(version_rows, store, registry)
    if rows is None:
        return
    st.subheader("Schema versions in the store")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="content")


def _dry_run(store: Store, registry: Registry) -> None:
    st.subheader("Dry run")
    st.caption("Migrates every stored checkpoint in memory; stored rows are never changed.")
    if st.button("Run the dry run", key="migrations_dry_run"):
        st.session_state["migrations_report"] = guarded(dry_run, store, registry)
    report = st.session_state.get("migrations_report")
    if not isinstance(report, DryRunReport) or report.module != registry.module:
        return
    st.dataframe(pd.DataFrame(dry_run_rows(report)), hide_index=True, width="stretch")
    failures = failure_rows(report)
    if failures:
        st.error(f"{sum(v.failed for v in report.versions)} checkpoint(s) failed to migrate")
        st.dataframe(pd.DataFrame(failures), hide_index=True, width="stretch")
    elif report.ok:
        st.success(f"All {report.total:,} checkpoints migrate to version {report.current_version}")


def _side_by_side(store: Store, registry: Registry) -> None:
    st.subheader("Stored and migrated state")
    runs = guarded(store.run_records)
    if not runs:
        return
    ids = [r.run_id for r in runs]
    wanted = st.query_params.get("run")
    if wanted and wanted not in ids:
        st.error(f"No run {md_text(repr(wanted))} in this store. Hint: pick one below.",
                 icon=":material/error:")  # fmt: skip
    run_id = st.selectbox("Run", ids, index=ids.index(wanted) if wanted in ids else 0,
                          key="migrations_run")  # fmt: skip
    ckpts = guarded(store.checkpoints, run_id) or []
    if not ckpts:
        return
    labels = checkpoint_labels(ckpts)
    # keyed by run: the picker of another run starts afresh (its labels are that run's)
    pick = st.selectbox("Checkpoint", range(len(ckpts)), format_func=labels.__getitem__,
                        index=len(ckpts) - 1, key=f"migrations_ckpt::{run_id}")  # fmt: skip
    ckpt = ckpts[pick]
    left, right = st.columns(2)
    left.markdown(f"**Stored** (schema version {ckpt.schema_version})")
    with left:
        _state(ckpt.working_state)
    try:
        result = migrated(ckpt, registry)
    except RestartRequired as e:
        right.error(f"Restart required: {e}", icon=":material/restart_alt:")
        return
    except MigrationFailed as e:
        right.error(f"Migration failed: {e}", icon=":material/error:")
        return
    path = " → ".join(map(str, result.path))
    right.markdown(
        f"**Migrated** to version {registry.current_version} ({md_text(result.status)}: {path})"
    )
    with right:
        _state(result.migrated)
    _changes(result.stored, result.migrated)


def _state(value: Any) -> None:
    # a v0 state can be free text: shown as text, not handed to the JSON viewer to misparse
    if isinstance(value, dict | list):
        st.json(value, expanded=2)
    else:
        st.code(str(value), language=None, wrap_lines=True)


def _changes(stored: Any, migrated_state: Any) -> None:
    rows = change_rows(stored, migrated_state)
    with st.expander(f"What the migrations changed ({len(rows)} differences)"):
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        else:
            st.caption("Nothing: the state is already current.")


def page() -> None:
    """Render the Migrations page."""
    st.title("Migrations")
    store = get_store()
    if store is None:
        return
    try:
        registry = load_registry(migrations_module())
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        registry = None
    _versions(store, registry)
    if registry is None:
        st.info(
            "To see the dry run and each checkpoint's migrated state, name your migrations "
            "module in the sidebar's **Migrations module** field (or set STEPSCOPE_MIGRATIONS): "
            "a Python module importable by the app, with `CURRENT_VERSION` and one function "
            "`vN_to_vM(state)` per schema step, such as "
            "`sample_checkpoints.refund_desk.migrations`."
        )
        return
    steps = ", ".join(name for _, name in iter_steps(registry)) or "none"
    st.caption(f"{md_text(registry.module)}: current version {registry.current_version}; "
               f"steps {md_text(steps)}")  # fmt: skip
    _dry_run(store, registry)
    _side_by_side(store, registry)
