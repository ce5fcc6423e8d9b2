"""Replay page: set a replay up, run it in the sandbox with progress, compare it with the original.

The URL can preset the run and step (``?run=crash-at-step-7&step=6``). Links lead into the
Diff page (``?a=RUN:STEP&b=RUN:STEP``) and the Timeline page (``?run=RUN&step=STEP``); the
replay itself is a run like any other, so every page shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from debugger.model import Run
from debugger.pages_data.markup import md_text
from debugger.pages_data.replay import (
    Link,
    counts,
    duplicate_messages,
    env_items,
    headline,
    isolation_note,
    originals,
    query_string,
    replay_ids,
    report_tables,
    split_baseline,
    step_links,
    suggested_inputs,
    target,
)
from debugger.replay.engine import MODES, Progress, replay
from debugger.replay.isolation import ISOLATIONS
from debugger.replay.output import saved_report
from debugger.ui.common import (
    get_store,
    guarded,
    page_for,
    page_labels,
    query_int,
    store_path,
    writing,
)

TITLE, ICON, URL = page_labels(__name__)


def _defaults(run: Run) -> None:
    """Suggest inputs for the run (once per session)."""
    for key, value in suggested_inputs(run).items():
        st.session_state.setdefault(key, value)


def _setup(runs: list[Run], store: Any) -> dict[str, Any] | None:
    ids = [r.run_id for r in runs]
    wanted = st.query_params.get("run")
    if wanted in ids and st.session_state.get("replay_url_run") != wanted:
        st.session_state["replay_run"] = wanted
        st.session_state["replay_url_run"] = wanted
        step = query_int("step")
        if step is not None:
            st.session_state["replay_step"] = step
    run_id = st.selectbox("Run", ids, key="replay_run")
    if run_id is None:
        return None
    run = next(r for r in runs if r.run_id == run_id)
    _defaults(run)
    st.session_state.setdefault("replay_step", run.last_step)
    left, right = st.columns(2)
    step = left.number_input("From step", min_value=run.first_step, max_value=run.last_step,
                             key="replay_step", help="The checkpoint to start from.")  # fmt: skip
    mode = right.radio("Mode", MODES, horizontal=True, key="replay_mode",
                       help="strict stops at the first divergence; lenient goes on.")  # fmt: skip
    kind = target(store, run_id)  # a LangGraph run is replayed with its graph
    agent = st.text_input(f"{kind.title()} (module:attribute)", key=f"replay_{kind}",
                          placeholder=f"my_package.agent:{kind}")  # fmt: skip
    mocks = st.text_input("Mocks module (optional)", key="replay_mocks",
                          placeholder="my_package.replay_mocks")  # fmt: skip
    baseline = st.text_input(
        "Also replay the original code (optional)", key="replay_baseline",
        placeholder="my_package.agent:agent",
        help="Replayed the same way first, to show what the code that ran would do again "
        "(its duplicate writes) next to your fix.",
    )  # fmt: skip
    with st.expander("Limits"):
        a, b, c = st.columns(3)
        timeout = a.number_input("Time limit (s)", 1.0, 3600.0, 60.0, key="replay_timeout")
        steps = b.number_input("Max steps", 1, 10_000, 200, key="replay_max_steps")
        memory = c.number_input("Memory (MB)", 64, 65_536, 2048, key="replay_memory")
        isolation = st.radio("Isolation", ISOLATIONS, horizontal=True, key="replay_isolation",
                             help="kernel: namespaces (bubblewrap); hooks: the weaker "
                             "in-process guard, for machines without it.")  # fmt: skip
        env = st.text_input("Environment (optional)", key="replay_env",
                            placeholder="MY_LEDGER MODE=replay",
                            help="Variables the sandbox gets besides its allow-list, as "
                            "--env: NAME (copied from here) or NAME=VALUE.")  # fmt: skip
    return {"run_id": run_id, "from_step": int(step), kind: agent.strip(),
            "mocks": mocks.strip() or None, "mode": mode, "timeout_s": float(timeout),
            "max_steps": int(steps), "memory_mb": int(memory),
            "baseline": baseline.strip() or None, "isolation": isolation,
            "env": env_items(env)}  # fmt: skip


def _run(settings: dict[str, Any]) -> bool:
    settings, baseline = split_baseline(settings)
    bar = st.progress(0.0, text="starting the sandbox")

    def progress_for(who: str) -> Callable[[Progress], None]:
        def on_progress(p: Progress) -> None:
            done = p.steps_done / p.steps_expected if p.steps_expected else 0.0
            bar.progress(min(1.0, done), text=f"{who}: {p.message}"[:150])

        return on_progress

    # the replay writes its result into the store: the app's reads wait meanwhile
    with writing():
        report = guarded(replay, store_path(), progress=progress_for("your agent"), **settings)
        base = None
        if report is not None and baseline:
            kind = "graph" if "graph" in settings else "agent"
            base = guarded(replay, store_path(), progress=progress_for("original code"),
                           **{**settings, kind: baseline})  # fmt: skip
    if report is None:
        _forget_result()  # the error is the result now, not an older replay's report
        return False
    st.session_state["replay_report"] = report.to_dict()
    st.session_state["replay_baseline_report"] = base.to_dict() if base else None
    st.session_state["replay_past"] = None
    st.query_params["replay"] = report.replay_run_id  # the result has its own address
    if base is not None:
        st.query_params["baseline"] = base.replay_run_id
    else:
        st.query_params.pop("baseline", None)
    return base is not None or not baseline  # keep a baseline's error on screen


def _forget_result() -> None:
    st.session_state["replay_report"] = None
    st.session_state["replay_baseline_report"] = None
    st.query_params.pop("replay", None)
    st.query_params.pop("baseline", None)


_ICONS = {"diff": ":material/difference:", "timeline": ":material/timeline:"}


def _link(link: Link) -> None:
    page = page_for(link.url)
    icon = _ICONS[link.url]
    if isinstance(page, st.Page):
        st.page_link(page, label=link.label, icon=icon, query_params=link.query)
    else:
        st.markdown(f"[{md_text(link.label)}]({link.url}{query_string(link.query)})")


def _step_links(report: dict[str, Any], step: int) -> None:
    for column, link in zip(st.columns(3), step_links(report, step), strict=True):
        with column:
            _link(link)


def _headline(report: dict[str, Any]) -> None:
    text, tone = headline(report)
    show = {"success": st.success, "warning": st.warning}.get(tone, st.error)
    icon = {"success": ":material/check_circle:", "warning": ":material/call_split:"}
    show(text, icon=icon.get(tone, ":material/error:"))
    st.caption(isolation_note(report))
    for column, (label, value) in zip(st.columns(4), counts(report).items(), strict=True):
        column.metric(label, value)


def _show(report: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    st.subheader(md_text(report["replay_run_id"]))
    st.caption(f"{md_text(report['run_id'])} from step {report['from_step']} with "
               f"{md_text(report['agent'])} ({report['mode']}; mocks: "
               f"{md_text(report['mocks'] or 'none')})")  # fmt: skip
    _headline(report)
    first = report["first_divergence"]
    if first:
        st.markdown(f"#### First divergence: step {first['step_index']} ({first['kind']})")
        st.markdown(md_text(first["message"]))
        if first["diff"]:
            st.dataframe(pd.DataFrame(first["diff"]).astype(str), hide_index=True)
        _step_links(report, int(first["step_index"]))
    if baseline:
        _side_by_side(report, baseline)
    else:
        for message in duplicate_messages(report):
            st.error(message, icon=":material/content_copy:")
    _tables(report, skip_ledger=baseline is not None)


def _tables(report: dict[str, Any], skip_ledger: bool = False) -> None:
    for title, rows in report_tables(report).items():
        if skip_ledger and title.startswith("The replay's writes"):
            continue  # shown beside the original code's
        st.markdown(f"#### {title}")
        st.dataframe(pd.DataFrame(rows).astype(str), hide_index=True)
    st.caption(f"Files: {md_text(report['output_dir'])} ({report['seconds']:.1f} s)")


def _side_by_side(report: dict[str, Any], baseline: dict[str, Any]) -> None:
    """Your code and the original code on the same replay, each with its ledger."""
    st.markdown("#### Your code and the original code, side by side")
    for column, r, who in zip(st.columns(2), (report, baseline), ("Your code", "The original code"),
                              strict=True):  # fmt: skip
        with column:
            st.markdown(f"**{who}** · {md_text(r['agent'])}")
            st.caption(
                f"{md_text(r['replay_run_id'])}: **{r['outcome']}** - {md_text(r['reason'])}"
            )
            for message in duplicate_messages(r, baseline=r is baseline):
                st.error(message, icon=":material/content_copy:")
            if not r["duplicate_writes"]:
                st.success("No write the original run had already made.",
                           icon=":material/check_circle:")  # fmt: skip
            st.markdown("Writes (ledger, never executed)")
            if r["ledger"]:
                st.dataframe(pd.DataFrame(r["ledger"]).astype(str), hide_index=True)
            else:
                st.caption("No write.")
            query = {"run": r["replay_run_id"], "step": str(r["last_step"])}
            _link(Link("timeline", "In the timeline", query))


def _past(store: Any, runs: list[Run]) -> dict[str, Any] | None:
    replays = replay_ids(runs)
    if not replays:
        return None
    pick = st.selectbox("Earlier replays", [None, *replays], key="replay_past",
                        format_func=lambda r: "(choose one)" if r is None else r)  # fmt: skip
    if pick is None:
        return None
    report = guarded(saved_report, store, pick)
    if report is None:
        st.info(f"{md_text(pick)} is in the store, but its report.json is gone; open it in "
                "the Timeline.")  # fmt: skip
    return report


def _from_url(store: Any, runs: list[Run], name: str) -> dict[str, Any] | None:
    """The replay result a link names (``?replay=ID``), or None; an error names a replay the
    store does not have."""
    wanted = st.query_params.get(name)
    if not wanted:
        return None
    if wanted not in replay_ids(runs):
        st.error(f"No replay {md_text(repr(wanted))} in this store. Hint: pick one under "
                 "Earlier replays.", icon=":material/error:")  # fmt: skip
        return None
    report = guarded(saved_report, store, wanted)
    if report is None:
        st.info(f"{md_text(wanted)} is in the store, but its report.json is gone; open it in "
                "the Timeline.")  # fmt: skip
    return report


def page() -> None:
    """Render the Replay page."""
    st.title("Replay")
    st.caption(
        "Re-run a run from one of its checkpoints in a sandbox: calls are answered from the "
        "original's tape or your mocks, writes are recorded and never executed, the network "
        "is blocked. The replay is stored as a run and compared step by step."
    )
    store = get_store()
    if store is None:
        return
    runs = guarded(store.run_records) or []
    linked = _from_url(store, runs, "replay")
    if linked:  # a result's address: the result first, the form to run another below it
        _show(linked, _from_url(store, runs, "baseline"))
        st.divider()
        if st.session_state.get("replay_url_run") != linked["run_id"]:
            st.session_state["replay_run"] = st.session_state["replay_url_run"] = linked["run_id"]
    settings = _setup(originals(runs), store)
    code = settings and (settings.get("agent") or settings.get("graph"))
    clicked = settings and st.button("Run replay", type="primary", icon=":material/play_arrow:",
                                     disabled=not code)  # fmt: skip
    if clicked and settings and _run(settings):
        st.rerun()  # the store has a new run: read it afresh
    if linked:
        return
    past = _past(store, runs)
    if past:
        st.query_params["replay"] = past["replay_run_id"]
        st.query_params.pop("baseline", None)
        st.rerun()  # its address, with the result first
    report = st.session_state.get("replay_report")
    if report and st.query_params.get("replay") is None:
        return  # the link was left: show the form only
    if report:
        _show(report, st.session_state.get("replay_baseline_report"))
