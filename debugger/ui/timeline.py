"""Timeline page: step through one run; what changed, what was in flight, what it cost.

The URL carries the run and the step (``?run=crash-at-step-7&step=7``, plus
``&checkpoint=...`` when a step was written more than once), so a link opens the same view.
The step navigator and the step's view live in one ``st.fragment``: a step change reruns
only that part, and reads only the two checkpoints it compares (cached per step).
"""

from __future__ import annotations

from typing import Any

import orjson
import streamlit as st

from debugger import pages_data
from debugger.errors import StepscopeError
from debugger.model import Run
from debugger.pages_data import fork_tree
from debugger.ui import widgets
from debugger.ui.common import (
    findings_json,
    generation,
    get_store,
    guarded,
    load_refs,
    page_labels,
    query_int,
    run_ids_json,
    state_json,
    step_json,
    store_path,
)

TITLE, ICON, URL = page_labels(__name__)

Findings = dict[int | None, list[dict[str, Any]]]
"""Audit findings by checkpoint step (None: run-wide)."""


def _run_changed() -> None:
    # the user picked another run: the URL follows, and the step starts at the head again
    st.query_params.clear()
    st.query_params["run"] = st.session_state["timeline_run"]


def _pick_run(run_ids: list[str]) -> str | None:
    if not run_ids:
        st.info("The store has no runs yet. Import a source on the Import page.")
        return None
    wanted = st.query_params.get("run")
    if wanted and wanted not in run_ids:
        st.warning(f"No run {wanted!r} in this store. Hint: pick one below or open Runs.")
        wanted = None
    if wanted is None:
        current = st.session_state.get("timeline_run")
        wanted = current if current in run_ids else run_ids[0]
    st.session_state["timeline_run"] = wanted  # the URL wins over a stale selection
    st.selectbox("Run", run_ids, key="timeline_run", on_change=_run_changed)
    return str(wanted)


def _position(run_id: str, refs: list[pages_data.StepRef]) -> str:
    """Session key of the navigator, set from the URL when the URL asks for another step."""
    key = f"timeline_pos::{run_id}"
    asked = (run_id, query_int("step"), st.query_params.get("checkpoint"))
    if key not in st.session_state or st.session_state.get("timeline_applied") != asked:
        if asked[1] is None and asked[2] is None:
            st.session_state[key] = len(refs) - 1
        else:
            st.session_state[key] = pages_data.find_ref(refs, asked[1], asked[2])
        st.session_state["timeline_applied"] = asked
    return key


def _move(key: str, delta: int, last: int) -> None:
    st.session_state[key] = min(max(st.session_state[key] + delta, 0), last)


def _sync_url(run_id: str, refs: list[pages_data.StepRef], pos: int) -> None:
    ref = refs[pos]
    checkpoint = pages_data.timeline.url_checkpoint(refs, pos)
    st.query_params["run"] = run_id
    st.query_params["step"] = str(ref.step_index)
    if checkpoint is None:
        st.query_params.pop("checkpoint", None)
    else:
        st.query_params["checkpoint"] = checkpoint
    st.session_state["timeline_applied"] = (run_id, ref.step_index, checkpoint)


@st.fragment
def _navigator(run_id: str, findings: Findings) -> None:
    path, gen = store_path(), generation()
    refs = load_refs(path, gen, run_id)
    if not refs:
        st.info("This run has no checkpoints.")
        return
    key = _position(run_id, refs)
    last = len(refs) - 1
    c1, c2, c3 = st.columns([2, 11, 2], vertical_alignment="bottom")
    c1.button(
        "Prev",
        icon=":material/chevron_left:",
        key="timeline_prev",
        shortcut="Left",
        on_click=_move,
        args=(key, -1, last),
        disabled=st.session_state[key] <= 0,
        width="stretch",
        help="Previous step (Left arrow)",
    )
    c3.button(
        "Next",
        icon=":material/chevron_right:",
        icon_position="right",
        key="timeline_next",
        shortcut="Right",
        on_click=_move,
        args=(key, 1, last),
        disabled=st.session_state[key] >= last,
        width="stretch",
        help="Next step (Right arrow)",
    )
    if last > 0:
        c2.select_slider(
            "Step",
            options=list(range(len(refs))),
            key=key,
            format_func=lambda p: pages_data.timeline.nav_label(refs[p], findings),
        )
    pos = int(st.session_state[key])
    _sync_url(run_id, refs, pos)
    ignore = pages_data.timeline.ignore_paths(st.session_state.get("timeline_ignore", ""))
    text = guarded(step_json, path, gen, run_id, refs[pos].checkpoint_id, ignore)
    if text is not None:
        view = orjson.loads(text)
        view["findings"] = findings.get(view["step_index"], [])
        widgets.step_view(view, len(text))
        _full_state(path, gen, run_id, view)


def _full_state(path: str, gen: int, run_id: str, view: dict[str, Any]) -> None:
    # only sent when asked: a state can be megabytes, the rest of the step is a few kB
    if st.toggle(
        f"Show the full working state ({view['state_bytes']:,} bytes)", key="timeline_full_state"
    ):
        text = guarded(state_json, path, gen, run_id, view["checkpoint_id"])
        if text is not None:
            st.json(text, expanded=False)  # the text as is: NaN and Infinity as written


def _findings(run_id: str) -> Findings:
    """Audit findings by checkpoint step; the timeline works without them."""
    path, gen = store_path(), generation()
    try:
        found = orjson.loads(findings_json(path, gen, run_id))
    except StepscopeError as e:
        st.caption(f"Audit findings unavailable: {e}")
        return {}
    steps = [r.step_index for r in load_refs(path, gen, run_id)]
    grouped = pages_data.findings_by_step(found, steps)
    if grouped.get(None):
        with st.expander(f"Run-wide audit findings ({len(grouped[None])})"):
            for f in grouped[None]:
                st.markdown(f"- **{f['rule_id']}** ({f['severity']}): {f['message']}")
    return grouped


def page() -> None:
    """Render the Timeline page."""
    store = get_store()
    if store is None:
        return
    ids = guarded(lambda: orjson.loads(run_ids_json(store_path(), generation())))
    if ids is None:
        return
    run_id = _pick_run(ids)
    if run_id is None:
        return
    run: Run | None = guarded(store.run, run_id)
    if run is None:
        return
    widgets.run_header(run)
    findings = _findings(run_id)
    with st.popover("Diff options", icon=":material/tune:"):
        st.text_input(
            "Ignore paths (comma separated)",
            key="timeline_ignore",
            placeholder="root['updated_at'], root['trace_id']",
        )
    _navigator(run_id, findings)
    st.divider()
    st.subheader("Budgets over the run")
    series = guarded(pages_data.budget_series, store, run_id)
    if series is not None:
        widgets.budget_chart(*series)
    st.subheader("Fork tree")
    tree = guarded(fork_tree.fork_tree, store, run_id)
    if tree is not None:
        widgets.fork_tree(tree)
