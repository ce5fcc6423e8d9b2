"""Rendering pieces the pages share: a run's header, one step's view, charts, the fork tree.

Only presentation: every value comes from :mod:`debugger.pages_data` or the store. Values
that come from checkpoints are written as text (:mod:`debugger.pages_data.markup`): never as
Markdown or HTML that the browser would render or fetch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import streamlit as st

from debugger.contract import BUDGET_LIMITS
from debugger.model import Run
from debugger.pages_data.markup import md_text, md_with_code, table_html
from debugger.pages_data.status import status_badge
from debugger.report.incident import human_reason

if TYPE_CHECKING:
    from debugger.pages_data.fork_tree import ForkTree


def html(text: str) -> None:
    """Escaped HTML built by :mod:`debugger.pages_data.markup` (never checkpoint markup)."""
    st.html(text)


WholeValue = Callable[[str, int, str], str]
"""Reads one cut value whole: (the view's table, the row, the column) -> its text."""


def text_table(
    rows: list[dict[str, Any]],
    columns: dict[str, str],
    full: dict[str, str] | None = None,
    widths: dict[str, str] | None = None,
    *,
    whole: Callable[[int, str], str] | None = None,
    name: str | None = None,
    key: str = "",
) -> None:
    """A table of text cells; a shortened value opens in full on click.

    A value too long to open in the page (``KEY_chars`` in its row) gets a download button
    below the table when ``whole`` (row, column -> the whole text) is given; the text is
    read only when the button is clicked. ``name`` is the row key that names a row in the
    button's label, ``key`` makes the buttons' keys unique on the page.
    """
    html(table_html(rows, columns, full, widths))
    if whole is None:
        return
    for i, row in enumerate(rows):
        for column, heading in columns.items():
            total = row.get(f"{column}_chars")
            if total is None:
                continue
            what = f"{row.get(name) if name else f'row {i + 1}'} ({heading.lower()})"
            st.download_button(
                f"Download {md_text(what)} in full, {total:,} characters",
                data=functools.partial(whole, i, column),
                file_name=re.sub(r"[^\w.-]+", "_", what).strip("_")[:80] + ".json",
                mime="application/json",
                on_click="ignore",
                icon=":material/download:",
                key=f"whole-{key}-{i}-{column}",
            )


def run_header(run: Run) -> None:
    """Title and facts of a run in two lines: status and why, agent, steps, budgets."""
    st.markdown(f"### {md_text(run.run_id)} &nbsp; {status_badge(run.status)}")
    b = run.budgets
    facts = [
        f"Agent **{md_text(run.agent or '—')}**",
        md_text(human_reason(run)),
        f"steps {run.steps_text()}",
        f"{b.tokens_spent:,} tokens{_limit(run, 'tokens')}",
        f"{b.wall_clock_ms / 1000:,.1f} s{_limit(run, 'wall_clock_ms', 1000)}",
        f"models {md_text(', '.join(run.model_versions) or '—')}",
    ]
    st.caption(" · ".join(facts))
    if run.last_error:
        st.error(f"**Last error:** {md_text(run.last_error)}", icon=":material/error:")


def _limit(run: Run, key: str, scale: int = 1) -> str:
    limit = (run.limits or {}).get(key)
    if not isinstance(limit, int | float):
        return ""
    return f" of {limit / scale:,.{1 if scale > 1 else 0}f}"


def findings_banner(findings: list[dict[str, Any]], step: int) -> None:
    """The audit's findings at a step, errors first, each with its hint."""
    for f in sorted(findings, key=lambda f: f["severity"] != "error"):
        show = st.error if f["severity"] == "error" else st.warning
        where = "" if f["step_index"] == step else f" (at step {f['step_index']})"
        show(
            f"**Audit · {md_text(f['rule_id'])}**{where}: {md_text(f['message'])}. "
            f"Hint: {md_with_code(f['hint'])}.",
            icon=":material/flag:",
        )


def step_view(view: dict[str, Any], nbytes: int, whole: WholeValue | None = None) -> None:
    """One step: what is in flight and what the audit says first, then what changed,
    budgets, the step's calls and metadata.

    ``whole`` reads a value the view cut (past :data:`FULL_CHARS`) in full, for a download.
    """

    def reader(table: str) -> Callable[[int, str], str] | None:
        return None if whole is None else functools.partial(whole, table)

    key = str(view["checkpoint_id"])
    prev = view["previous"]
    against = f"compared with step {prev['step_index']}" if prev else "first checkpoint"
    when = (view["created_at"] or "no time").replace("T", " ")[:19]
    st.markdown(
        f"#### Step {view['step_index']} <small style='color:#78716c;font-weight:400'>· "
        "checkpoint "
        f"{md_text(view['checkpoint_id'])} · {when} UTC · {against}</small>",
        unsafe_allow_html=True,
    )
    if view["model_version_changed"]:
        new = next(m["value"] for m in view["metadata"] if m["key"] == "model_version")
        st.warning(f"Model version changed here: now {md_text(new)}.",
                   icon=":material/swap_horiz:")  # fmt: skip
    findings_banner(view["findings"], view["step_index"])
    _pending(view["pending_effects"], view["effect_changes"], reader("pending_effects"), key)
    _diff(view, reader("diff"), key)
    _budgets(view["budgets"])
    _calls(view["calls"], reader("calls"), key)
    with st.expander(
        "Run metadata and versions (changes marked)",
        expanded=any(m["changed"] for m in view["metadata"]),
    ):
        _metadata(view["metadata"], reader("metadata"), key)
    st.caption(f"Page data for this step: {nbytes / 1024:.1f} kB")


def _diff(view: dict[str, Any], whole: Callable[[int, str], str] | None, key: str) -> None:
    st.markdown("#### What changed")
    if not view["diff"]:
        if view["previous"] is None:  # an entrypoint's input, before it returned anything
            st.info("The first checkpoint holds no working state yet.")
        else:
            st.info("No change in the working state since the previous step.")
        return
    text_table(
        view["diff"],
        {"path": "Path", "kind": "Kind", "old": "Before", "new": "After"},
        full={"old": "old_full", "new": "new_full"},
        widths={"path": "24%", "kind": "14%"},
        whole=whole,
        name="path",
        key=f"{key}-diff",
    )
    if view["diff_total"] > len(view["diff"]):
        st.caption(f"{view['diff_total'] - len(view['diff'])} more changes: see the Diff page.")


def _budgets(budgets: list[dict[str, Any]]) -> None:
    parts = []
    for b in budgets:
        limit = f" of {b['limit']:,}" if isinstance(b["limit"], int | float) else ""
        share = f" ({b['share']:.0%})" if b["share"] is not None else ""
        parts.append(f"**{b['name']}** {b['spent']:,}{limit}{share}, +{b['delta']:,} this step")
    st.markdown("#### Budgets consumed")
    st.markdown(" · ".join(parts))


def _pending(
    pending: list[dict[str, Any]],
    changes: list[dict[str, Any]],
    whole: Callable[[int, str], str] | None,
    key: str,
) -> None:
    st.markdown("#### Pending effects")
    for c in changes:
        status = (
            f", {md_text(c['old_status'])} → {md_text(c['new_status'])}"
            if c["change"] == "status_changed"
            else ""
        )
        st.markdown(
            f"- {md_text(c['idempotency_key'])} ({md_text(c['tool'])}): "
            f"**{md_text(c['change'])}** at this step{status}"
        )
    if not pending:
        st.caption("None in flight at this checkpoint.")
        return
    st.error(
        f"{len(pending)} effect(s) in flight: check each key against the system of "
        "record before resuming.",
        icon=":material/pending_actions:",
    )
    text_table(
        pending,
        {
            "tool": "Tool",
            "idempotency_key": "Idempotency key",
            "status": "Status",
            "logged_status": "Effects log",
            "args": "Args",
        },
        full={"args": "args_full"},
        widths={"tool": "14%", "idempotency_key": "28%", "status": "10%", "logged_status": "10%"},
        whole=whole,
        name="idempotency_key",
        key=f"{key}-effects",
    )


def _calls(calls: list[dict[str, Any]], whole: Callable[[int, str], str] | None, key: str) -> None:
    st.markdown("#### Tool and model calls of this step")
    if not calls:
        st.caption("No recorded calls at this step.")
        return
    rows = [dict(c, is_write="write" if c["is_write"] else "") for c in calls]
    text_table(
        rows,
        {"seq": "#", "kind": "Kind", "name": "Name", "request": "Request",
         "response": "Response", "error": "Error", "idempotency_key": "Key", "is_write": ""},
        full={"request": "request_full", "response": "response_full"},
        widths={"seq": "4%", "kind": "7%", "name": "12%", "idempotency_key": "14%",
                "is_write": "6%"}, whole=whole, name="name", key=f"{key}-calls",
    )  # fmt: skip


def _metadata(
    rows: list[dict[str, Any]], whole: Callable[[int, str], str] | None, key: str
) -> None:
    marked = [dict(r, mark="● changed" if r["changed"] else "") for r in rows]
    text_table(
        marked,
        {"mark": "", "key": "Key", "value": "Value", "previous": "Previous"},
        full={"value": "value_full", "previous": "previous_full"},
        widths={"mark": "10%", "key": "25%"},
        whole=whole,
        name="key",
        key=f"{key}-metadata",
    )


def budget_chart(
    series: list[dict[str, Any]], limits: dict[str, Any], step: int | None = None
) -> None:
    """Tokens, steps and wall clock over the run's steps, each with its limit as a dashed
    red rule and the step shown marked.

    One Vega-Lite spec of three charts side by side, the series as its only data set: the
    chart is drawn again on every step change (the marker moves), and Streamlit converts
    each top-level data set to Arrow, so one set costs a third of three charts.
    """
    charts = []
    for column, limit_key in BUDGET_LIMITS.items():
        limit = limits.get(limit_key)
        layers: list[dict[str, Any]] = [
            {
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": {"field": "step_index", "type": "quantitative", "title": "step",
                          "axis": {"tickMinStep": 1, "format": "d"}},
                    # budgets are counts: whole ticks (a flat zero series drew 0.000000)
                    "y": {"field": column, "type": "quantitative", "title": None,
                          "axis": {"tickMinStep": 1, "format": ",d"}},
                    "tooltip": [{"field": "step_index", "title": "step"}, {"field": column}],
                },
            }
        ]  # fmt: skip
        if isinstance(limit, int | float):
            layers += [
                {"mark": {"type": "rule", "color": "#dc2626", "strokeDash": [4, 3]},
                 "encoding": {"y": {"datum": limit}}},
                {"mark": {"type": "text", "color": "#dc2626", "align": "left", "dy": -6,
                          "x": 4, "text": f"limit {limit:,}"},
                 "encoding": {"y": {"datum": limit}}},
            ]  # fmt: skip
        if step is not None:
            layers.append(
                {"mark": {"type": "rule", "color": "#2563eb", "strokeWidth": 2},
                 "encoding": {"x": {"datum": step}}}
            )  # fmt: skip
        charts.append({"title": column.replace("_", " "), "width": 230, "height": 200,
                       "layer": layers})  # fmt: skip
    spec = {"data": {"values": series}, "hconcat": charts}
    st.vega_lite_chart(spec, width="content")
    if not limits:
        st.caption("The run records no limits (metadata.limits).")


def fork_tree(tree: ForkTree, page_url: str) -> None:
    """The fork tree as a graph whose boxes open their checkpoints, with the same links
    listed below it; or a line saying the run does not branch."""
    from debugger.pages_data.fork_tree import fork_dot, node_links

    links = node_links(tree, page_url)
    if not tree.forks:
        n = sum(len(s.checkpoints) for s in tree.segments)
        st.caption(f"No forks: one line of {n} checkpoint{'' if n == 1 else 's'}, no replays.")
        return
    st.graphviz_chart(fork_dot(tree, page_url), width="content")
    st.markdown("\n".join(f"- {line}" for line in links))
    if tree.branch_points:
        st.caption(f"Branches after checkpoint(s): {md_text(', '.join(tree.branch_points))}")
