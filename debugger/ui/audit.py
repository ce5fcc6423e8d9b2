"""Audit page: the verdict of every run, and the findings of one, each linked to its step.

Everything shown comes from ``debugger.pages_data.audit`` over ``debugger.audit`` (the same
functions as ``stepscope audit``);
a finding's step opens the Timeline at ``?run=...&step=...``.
"""

from __future__ import annotations

import os
from urllib.parse import quote

import orjson
import pandas as pd
import streamlit as st

from debugger.audit import audit_run, verdict_title
from debugger.migrations import SETTING
from debugger.model import AuditReport, Finding
from debugger.pages_data.audit import effect_rows, store_warnings, verdict_rows
from debugger.pages_data.markup import md_text, md_with_code
from debugger.settings import config_file
from debugger.store import Store
from debugger.ui.common import generation, get_store, guarded, page_for, page_labels

TITLE, ICON, URL = page_labels(__name__)

ICONS = {
    "completed": ":material/check_circle:",
    "resumable": ":material/play_circle:",
    "resumable_after_checks": ":material/pending_actions:",
    "restart_required": ":material/restart_alt:",
}
SEVERITY_BADGES = {"error": ":red-badge[error]", "warning": ":orange-badge[warning]",
                   "info": ":blue-badge[info]"}  # fmt: skip


def migrations_module() -> str | None:
    """The migrations module the pages use (shared by Audit and Migrations)."""
    default = st.session_state.get("migrations_module") or os.environ.get(SETTING, "")
    value = st.sidebar.text_input(
        "Migrations module",
        value=default,
        key="migrations_input",
        placeholder="my_package.migrations",
        help="The Python module that migrates old checkpoint states: it defines "
        "CURRENT_VERSION and one function vN_to_vM(state) per schema step. The Audit and "
        f"Migrations pages use it to tell a migratable checkpoint from one that needs a "
        f"restart (default ${SETTING}).",
    )
    st.session_state["migrations_module"] = value.strip()
    return value.strip() or None


@st.cache_data(max_entries=16, show_spinner=False)
def _verdicts_json(_store: Store, path: str, gen: int, module: str | None) -> str:
    # keyed on the store path and generation (an import bumps it), not on the connection
    return orjson.dumps(verdict_rows(_store, module)).decode()


def _verdicts(store: Store, module: str | None) -> pd.DataFrame | None:
    text = guarded(_verdicts_json, store, store.path, generation(), module)
    if text is None:
        return None
    frame = pd.DataFrame(orjson.loads(text))
    if "next_step" in frame:
        # a step number, or a dash where a resume has nothing to execute (a finished run):
        # the JSON round trip makes the column float, shown as "7.0" and "None"
        frame["next_step"] = [
            "-" if v is None or v != v else str(int(v)) for v in frame["next_step"]
        ]
    return frame


@st.cache_data(max_entries=8, show_spinner=False)
def _store_warnings_json(_store: Store, path: str, gen: int, config: tuple[str, int]) -> str:
    # keyed on the store's generation and the settings file (a [prune] rule ends the warning)
    return orjson.dumps(store_warnings(_store)).decode()


def _config_key() -> tuple[str, int]:
    path = config_file()
    if path is None:
        return "", 0
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), 0  # a missing named file: store_warnings says so, with its hint


def _store_findings(store: Store) -> None:
    """The store-level warnings (no retention rule), as ``stepscope audit --all`` gives them."""
    text = guarded(_store_warnings_json, store, store.path, generation(), _config_key())
    for f in orjson.loads(text) if text else []:
        st.warning(f"**{md_text(f['rule_id'])}** {md_text(f['message'])}\n\n"
                   f"Hint: {md_with_code(f['hint'])}", icon=":material/inventory_2:")  # fmt: skip


def _pick_run(frame: pd.DataFrame, selected_rows: list[int]) -> str | None:
    runs = [str(r) for r in frame["run_id"]] if not frame.empty else []
    if not runs:
        return None
    wanted = st.query_params.get("run")
    if wanted and wanted not in runs:
        st.error(f"No run {md_text(repr(wanted))} in this store. Hint: pick a run in the "
                 "table.", icon=":material/error:")  # fmt: skip
        return None
    if wanted and st.session_state.get("_audit_url") != wanted:
        st.session_state["_audit_url"] = wanted  # a link (the Timeline's) picks its run
        st.session_state["audit_run"] = wanted
    if st.session_state.get("audit_run") not in runs:
        st.session_state["audit_run"] = runs[0]
    # a click on a row of the verdict table picks that run (once per new click)
    if selected_rows and selected_rows != st.session_state.get("audit_last_rows"):
        st.session_state["audit_run"] = runs[selected_rows[0]]
    st.session_state["audit_last_rows"] = selected_rows
    choice = str(st.selectbox("Run", runs, key="audit_run"))
    st.query_params["run"] = choice  # the URL names the run, so a link opens this view
    st.session_state["_audit_url"] = choice  # our own address is no new link to follow
    return choice


def _step_link(run_id: str, finding: Finding, index: int) -> None:
    if finding.step_index is None:
        st.caption("whole run")
        return
    label = f"step {finding.step_index}"
    page = page_for("timeline")
    if isinstance(page, st.Page):
        st.page_link(
            page, label=label, icon=":material/timeline:",
            query_params={"run": run_id, "step": str(finding.step_index)},
        )  # fmt: skip
    else:
        st.markdown(f"[{label}](timeline?run={quote(run_id, safe='')}&step={finding.step_index})")


def _findings(report: AuditReport) -> None:
    st.subheader(f"Findings ({len(report.findings)})")
    if not report.findings:
        st.caption("No findings: the run keeps the resume contract.")
        return
    for i, f in enumerate(report.findings):
        left, right = st.columns([1, 6])
        with left:
            _step_link(report.run_id, f, i)
        with right:
            st.markdown(f"{SEVERITY_BADGES[f.severity]} **{md_text(f.rule_id)}** "
                        f"{md_text(f.message)}")  # fmt: skip
            st.caption(f"Hint: {md_with_code(f.hint)}")


def _verdict(report: AuditReport) -> None:
    text = f"**{verdict_title(report)}**\n\n" + "\n".join(f"- {md_text(r)}" for r in report.reasons)
    show = {
        "completed": st.success,
        "resumable": st.info,
        "resumable_after_checks": st.warning,
        "restart_required": st.error,
    }[report.verdict]
    show(text, icon=ICONS[report.verdict])
    if report.next_step is not None:
        st.markdown(
            f"**A resume would** continue from checkpoint {md_text(report.resume_from)} "
            f"(step {report.resume_from_step}) and execute step **{report.next_step}**"
            + (", after verifying these effects by key:" if report.verify_effects else ".")
        )
    if report.verify_effects:
        st.dataframe(pd.DataFrame(effect_rows(report)), hide_index=True, width="stretch")
    if report.branches:
        st.caption(f"Other branches (not audited): {md_text(', '.join(report.branches))}")


def page() -> None:
    """Render the Audit page."""
    st.title("Audit")
    store = get_store()
    if store is None:
        return
    module = migrations_module()
    frame = _verdicts(store, module)
    if frame is None:
        return
    st.caption(
        "Could each run be resumed safely, and what would a resume do? Each finding names "
        "its rule and what to check; `stepscope audit RUN` prints the same in a terminal."
    )
    _store_findings(store)
    event = st.dataframe(frame, hide_index=True, width="stretch", key="audit_verdicts",
                         on_select="rerun", selection_mode="single-row")  # fmt: skip
    run_id = _pick_run(frame, list(event.selection.rows))
    if run_id is None:
        if frame.empty:
            st.info("No runs in the store yet: import a source first.")
        return
    report = guarded(audit_run, store, run_id, module)
    if report is None:
        return
    _verdict(report)
    _findings(report)
