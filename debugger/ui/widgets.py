"""Rendering pieces the pages share: a run's header, one step's view, charts, the fork tree.

Only presentation: every value comes from :mod:`debugger.pages_data` or the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from debugger.contract import BUDGET_LIMITS
from debugger.model import Run
from debugger.pages_data.status import status_badge

if TYPE_CHECKING:
    from debugger.pages_data.fork_tree import ForkTree


def run_header(run: Run) -> None:
    """Title and facts of a run: status, agent, steps, budgets, versions, last error."""
    st.markdown(f"## {run.run_id} &nbsp; {status_badge(run.status)}")
    st.caption(f"Agent **{run.agent or '—'}** · why this status: {run.status_reason}")
    cols = st.columns(5)
    cols[0].metric("Steps", f"{run.first_step}–{run.last_step}")
    cols[1].metric("Checkpoints", run.checkpoint_count)
    cols[2].metric("Tokens", f"{run.budgets.tokens_spent:,}", help=_limit(run, "tokens"))
    cols[3].metric(
        "Wall clock",
        f"{run.budgets.wall_clock_ms / 1000:,.1f} s",
        help=_limit(run, "wall_clock_ms"),
    )
    cols[4].metric("Pending effects", run.pending_count)
    facts = [f"**Model versions:** {', '.join(run.model_versions) or '—'}"]
    if run.replay_of:
        facts.append(f"**Replay of** `{run.replay_of}` from step {run.replay_from_step}")
    st.markdown(" · ".join(facts))
    if run.last_error:
        st.markdown(f":red[**Last error:** {run.last_error}]")


def _limit(run: Run, key: str) -> str | None:
    limit = (run.limits or {}).get(key)
    return f"limit {limit:,}" if isinstance(limit, int | float) else None


def step_view(view: dict[str, Any], nbytes: int) -> None:
    """One step: the diff first, then budgets, pending effects, calls and metadata."""
    prev = view["previous"]
    against = f"compared with step {prev['step_index']}" if prev else "first checkpoint"
    when = (view["created_at"] or "no time").replace("T", " ")[:19]
    st.markdown(f"### Step {view['step_index']}")
    st.caption(f"checkpoint `{view['checkpoint_id']}` · {when} UTC · {against}")
    if view["model_version_changed"]:
        new = next(m["value"] for m in view["metadata"] if m["key"] == "model_version")
        st.warning(f"Model version changed here: now {new}.", icon=":material/swap_horiz:")
    for f in view["findings"]:
        show = st.error if f["severity"] == "error" else st.warning
        where = "" if f["step_index"] == view["step_index"] else f" (at step {f['step_index']})"
        show(
            f"**Audit · {f['rule_id']}**{where}: {f['message']}. Hint: {f['hint']}.",
            icon=":material/flag:",
        )
    _diff(view)
    left, right = st.columns([2, 3])
    with left:
        _budgets(view["budgets"])
    with right:
        _pending(view["pending_effects"], view["effect_changes"])
    _calls(view["calls"])
    with st.expander(
        "Run metadata and versions (changes marked)",
        expanded=any(m["changed"] for m in view["metadata"]),
    ):
        _metadata(view["metadata"])
    st.caption(f"Page data for this step: {nbytes / 1024:.1f} kB")


TABLE_ROWS = 40
"""Up to this many rows are shown as a plain table (readable, selectable text)."""


def _table(rows: list[dict[str, Any]], columns: dict[str, str]) -> None:
    # small results as HTML tables: all text visible at once; larger ones scroll in a grid
    frame = pd.DataFrame(rows)[list(columns)].rename(columns=columns)
    if len(frame) <= TABLE_ROWS:
        st.table(frame, hide_index=True)
    else:
        st.dataframe(frame, hide_index=True, width="stretch")


def _diff(view: dict[str, Any]) -> None:
    st.markdown("#### What changed")
    if not view["diff"]:
        st.info("No change in the working state since the previous step.")
        return
    _table(view["diff"], {"path": "Path", "kind": "Kind", "old": "Before", "new": "After"})
    if view["diff_total"] > len(view["diff"]):
        st.caption(f"{view['diff_total'] - len(view['diff'])} more changes: see the Diff page.")


def _budgets(budgets: list[dict[str, Any]]) -> None:
    st.markdown("#### Budgets consumed")
    for b in budgets:
        limit = f" of {b['limit']:,}" if isinstance(b["limit"], int | float) else ""
        st.markdown(
            f"**{b['name']}**: {b['spent']:,}{limit} "
            f"<small style='color:#78716c'>(+{b['delta']:,} this step)</small>",
            unsafe_allow_html=True,
        )
        if b["share"] is not None:
            st.progress(min(float(b["share"]), 1.0), text=f"{b['share']:.0%} of the limit")


def _pending(pending: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
    st.markdown("#### Pending effects")
    for c in changes:
        st.markdown(
            f"- `{c['idempotency_key']}` ({c['tool']}): **{c['change']}** at this step"
            + (
                f", {c['old_status']} → {c['new_status']}"
                if c["change"] == "status_changed"
                else ""
            )
        )
    if not pending:
        st.caption("None in flight at this checkpoint.")
        return
    st.error(
        f"{len(pending)} effect(s) in flight: check each key against the system of "
        "record before resuming.",
        icon=":material/pending_actions:",
    )
    _table(
        pending,
        {
            "tool": "Tool",
            "idempotency_key": "Idempotency key",
            "status": "Status",
            "logged_status": "Effects log",
            "args": "Args",
        },
    )


def _calls(calls: list[dict[str, Any]]) -> None:
    st.markdown("#### Tool and model calls of this step")
    if not calls:
        st.caption("No recorded calls at this step.")
        return
    st.dataframe(
        pd.DataFrame(calls),
        hide_index=True,
        width="stretch",
        column_config={"is_write": st.column_config.CheckboxColumn("write")},
    )


def _metadata(rows: list[dict[str, Any]]) -> None:
    frame = pd.DataFrame(rows)
    frame.insert(0, "", ["● changed" if c else "" for c in frame["changed"]])
    styled = frame.drop(columns=["changed"]).style.apply(
        lambda r: ["background-color: #ffedd5" if r.iloc[0] else ""] * len(r), axis=1
    )
    st.dataframe(styled, hide_index=True, width="stretch")


def budget_chart(series: pd.DataFrame, limits: dict[str, Any]) -> None:
    """Tokens, steps and wall clock over the checkpoints, each with its limit as a rule."""
    import altair as alt  # here, not at the top: it is slow to import, and Runs opens first

    cols = st.columns(3)
    for col, (column, limit_key) in zip(cols, BUDGET_LIMITS.items(), strict=True):
        data = series.reset_index().rename(columns={"index": "checkpoint"})
        base = (
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=alt.X("checkpoint:Q", title="checkpoint (write order)"),
                y=alt.Y(f"{column}:Q", title=column),
                tooltip=["step_index", column],
            )
        )
        limit = limits.get(limit_key)
        if isinstance(limit, int | float):
            rule = (
                alt.Chart(pd.DataFrame({"limit": [limit]}))
                .mark_rule(color="#dc2626", strokeDash=[4, 3])
                .encode(y="limit:Q")
            )
            base = base + rule
        col.altair_chart(base.properties(height=180, title=column), width="stretch")
    if not limits:
        st.caption("The run records no limits (metadata.limits).")


def fork_tree(tree: ForkTree) -> None:
    """The fork tree as a graph, or a line saying the run does not branch."""
    if not tree.forks:
        n = sum(len(s.checkpoints) for s in tree.segments)
        st.caption(f"No forks: one line of {n} checkpoints, no replays.")
        return
    from debugger.pages_data.fork_tree import fork_dot  # the Timeline's; the Runs page needs none

    st.graphviz_chart(fork_dot(tree), width="content")
    if tree.branch_points:
        st.caption(f"Branches after checkpoint(s): {', '.join(tree.branch_points)}")
