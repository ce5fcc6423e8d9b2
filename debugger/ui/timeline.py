"""Timeline page: step through one run; what was in flight, what changed, what it cost.

The URL carries the run and the step (``?run=crash-at-step-7&step=7``, plus
``&checkpoint=...`` when a step was written more than once), so a link opens the same view;
a link to a run or step the store does not have says so, never opening another. The step
navigator and the step's view live in one ``st.fragment``: a step change reruns only that
part, and reads only the two checkpoints it compares (cached per step).
"""

from __future__ import annotations

from typing import Any

import orjson
import streamlit as st

from debugger import pages_data
from debugger.errors import StepscopeError
from debugger.model import Run
from debugger.pages_data import fork_tree
from debugger.pages_data.incident import (
    RunFacts,
    missing_run,
    missing_step,
    run_facts,
    step_links,
    step_mark,
)
from debugger.pages_data.markup import md_text
from debugger.report.incident import unrecorded_sentence
from debugger.ui import widgets
from debugger.ui.common import (
    findings_json,
    generation,
    get_store,
    guarded,
    load_refs,
    open_cached,
    page_for,
    page_labels,
    query_int,
    reading,
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
        st.error(missing_run(wanted), icon=":material/error:")
        st.session_state.pop("timeline_run", None)
        st.selectbox("Run", run_ids, index=None, key="timeline_run", on_change=_run_changed,
                     placeholder="choose a run")  # fmt: skip
        return None
    if wanted is None:
        current = st.session_state.get("timeline_run")
        wanted = current if current in run_ids else run_ids[0]
    st.session_state["timeline_run"] = wanted  # the URL wins over a stale selection
    st.selectbox("Run", run_ids, key="timeline_run", on_change=_run_changed,
                 label_visibility="collapsed")  # fmt: skip
    return str(wanted)


def _position(run_id: str, refs: list[pages_data.StepRef]) -> str | None:
    """Session key of the navigator, set from the URL when the URL asks for another step;
    None (with the error shown) when the URL asks for a step the run does not have."""
    key = f"timeline_pos::{run_id}"
    asked = (run_id, query_int("step"), st.query_params.get("checkpoint"))
    # a step change by the navigator comes with the URL the browser had when it was made,
    # which a quick key press sends before the last step's URL reached it: that URL is
    # stale, not a link or the back button asking for another step
    navigated = st.session_state.pop(NAVIGATED, False)
    applied = st.session_state.get("timeline_applied")
    if key not in st.session_state or (applied != asked and not navigated):
        raw_step = st.query_params.get("step")
        if raw_step is not None and asked[1] is None:
            st.error(f"Step {md_text(raw_step)} is not a step number. Hint: open the run "
                     "without it.", icon=":material/error:")  # fmt: skip
            return None
        problem = missing_step(run_id, refs, asked[1], asked[2])
        if problem:
            st.error(md_text(problem), icon=":material/error:")
            st.page_link(page_for(URL), label="Open the run at its last checkpoint",
                         icon=":material/timeline:", query_params={"run": run_id})  # fmt: skip
            return None
        if asked[1] is None and asked[2] is None:
            st.session_state[key] = len(refs) - 1
        else:
            st.session_state[key] = pages_data.find_ref(refs, asked[1], asked[2])
        st.session_state["timeline_applied"] = asked
    return key


NAVIGATED = "timeline_navigated"
"""Set by the navigator's widgets for the rerun they cause (:func:`_position` reads it)."""
SHOWN = "timeline_shown"
"""The navigator's key and position of the step last drawn."""


def _move(key: str, delta: int, last: int) -> None:
    """Prev and Next: one step from the step shown.

    Not from the slider's value: the slider shares the position's key, and a key press made
    before the browser's slider took the last step's position sends its old value with the
    press (seen in a browser: a quick Left from step 2 went from 3, to 2 again). The step
    drawn last is what the person pressed the key on.
    """
    shown = st.session_state.get(SHOWN)
    at = shown[1] if shown and shown[0] == key else st.session_state[key]
    st.session_state[key] = min(max(at + delta, 0), last)
    st.session_state[NAVIGATED] = True


def _navigated() -> None:
    st.session_state[NAVIGATED] = True


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
def _navigator(run: Run, findings: Findings, facts: dict[str, Any]) -> None:
    with reading():  # a step change reruns only this: it releases the store itself
        _step(run, findings, RunFacts(**facts))


def _buttons(key: str, last: int) -> tuple[Any, Any]:
    c1, c2, c3 = st.columns([2, 11, 2], vertical_alignment="bottom")
    c1.button("Prev", icon=":material/chevron_left:", key="timeline_prev", shortcut="Left",
              on_click=_move, args=(key, -1, last), disabled=st.session_state[key] <= 0,
              width="stretch", help="Previous step (Left arrow)")  # fmt: skip
    c3.button("Next", icon=":material/chevron_right:", icon_position="right",
              key="timeline_next", shortcut="Right", on_click=_move, args=(key, 1, last),
              disabled=st.session_state[key] >= last, width="stretch",
              help="Next step (Right arrow)")  # fmt: skip
    return c2, c3


def _step(run: Run, findings: Findings, facts: RunFacts) -> None:
    run_id = run.run_id
    path, gen = store_path(), generation()
    refs = load_refs(path, gen, run_id)
    if not refs:
        st.info("This run has no checkpoints.")
        return
    key = _position(run_id, refs)
    if key is None:
        return
    last = len(refs) - 1
    slider, _ = _buttons(key, last)
    if last > 0:
        slider.select_slider(
            "Step", options=list(range(len(refs))), key=key, on_change=_navigated,
            format_func=lambda p: step_mark(refs[p], p == last, facts, findings),
        )  # fmt: skip
    pos = int(st.session_state[key])
    st.session_state[SHOWN] = (key, pos)
    _sync_url(run_id, refs, pos)
    _links(run_id, refs, pos)
    if pos == last and facts.unrecorded_step is not None:
        st.error(unrecorded_sentence(facts.unrecorded_step), icon=":material/warning:")
    ignore = pages_data.timeline.ignore_paths(st.session_state.get("timeline_ignore", ""))
    text = guarded(step_json, path, gen, run_id, refs[pos].checkpoint_id, ignore)
    if text is not None:
        view = orjson.loads(text)
        view["findings"] = findings.get(view["step_index"], [])
        checkpoint_id = refs[pos].checkpoint_id

        def whole(table: str, index: int, column: str) -> str:
            # called on a download's click, on a thread of its own: its own read of the store
            with reading():
                store = open_cached(path, gen)
                return pages_data.whole_value(store, run_id, checkpoint_id, ignore, table,
                                              index, column, refs)  # fmt: skip

        widgets.step_view(view, len(text), whole)
        st.markdown("#### Budgets over the run")
        widgets.budget_chart(facts.budgets, facts.limits, view["step_index"])
        _full_state(path, gen, run_id, view)


_LINK_LABELS = {
    "diff": ("Diff with the previous step", ":material/difference:"),
    "audit": ("Audit of the run", ":material/fact_check:"),
    "replay": ("Replay from this step", ":material/replay:"),
}


def _links(run_id: str, refs: list[pages_data.StepRef], pos: int) -> None:
    links = step_links(run_id, refs, pos)
    columns = st.columns(4)
    for column, (url, query) in zip(columns, links.items(), strict=False):
        label, icon = _LINK_LABELS[url]
        column.page_link(page_for(url), label=label, icon=icon, query_params=query)
    with columns[3]:
        _report_button(run_id)


def _report_button(run_id: str) -> None:
    path = store_path()

    def build() -> str:
        from debugger.report import build_report  # the report's code, on the click only
        from debugger.ui.common import open_cached

        with reading():
            return build_report(open_cached(path, generation_of(path)), run_id)

    st.download_button("Incident report (HTML)", data=build, file_name=f"incident-{run_id}.html",
                       mime="text/html", icon=":material/description:", key="timeline_report",
                       on_click="ignore", help="One self-contained file to attach to the "
                       "incident: summary, verdict, failure step, diff, budgets, pending "
                       "effects, findings.")  # fmt: skip


def generation_of(path: str) -> int:
    """The generation of ``path`` (outside a script run, where the session is not known)."""
    from debugger.ui.common import fingerprint

    return fingerprint(path)


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
        st.caption(f"Audit findings unavailable: {md_text(e)}")
        return {}
    steps = [r.step_index for r in load_refs(path, gen, run_id)]
    grouped = pages_data.findings_by_step(found, steps)
    if grouped.get(None):
        with st.expander(f"Run-wide audit findings ({len(grouped[None])})"):
            for f in grouped[None]:
                st.markdown(
                    f"- **{md_text(f['rule_id'])}** ({f['severity']}): {md_text(f['message'])}"
                )
    return grouped


def page() -> None:
    """Render the Timeline page."""
    store = get_store()
    if store is None:
        return
    ids = guarded(lambda: orjson.loads(run_ids_json(store_path(), generation())))
    if ids is None:
        return
    picker, options = st.columns([5, 1], vertical_alignment="center")
    with picker:
        run_id = _pick_run(ids)
    with options.popover("Diff options", icon=":material/tune:", width="stretch"):
        st.text_input(
            "Ignore paths (comma separated)",
            key="timeline_ignore",
            placeholder="root['updated_at'], root['trace_id']",
        )
    if run_id is None:
        return
    run: Run | None = guarded(store.run, run_id)
    if run is None:
        return
    widgets.run_header(run)
    facts = guarded(run_facts, store, run)
    if facts is None:
        return
    findings = _findings(run_id)
    _navigator(run, findings, facts.__dict__)
    st.divider()
    st.subheader("Fork tree")
    tree = guarded(fork_tree.fork_tree, store, run_id)
    if tree is not None:
        widgets.fork_tree(tree, URL)
