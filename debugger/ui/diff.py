"""Diff page: any two checkpoints (same run, two runs, an original and its replay).

Side by side and as a table, with budgets, pending effects and metadata. The URL carries the
two sides as ``?a=RUN:STEP&b=RUN:STEP`` (or ``RUN@CHECKPOINT_ID``), like ``stepscope diff``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pandas as pd
import streamlit as st

from debugger import json_text, pages_data
from debugger.diff import CheckpointSpec, parse_spec
from debugger.errors import StepscopeError
from debugger.ui.common import (
    generation,
    get_store,
    guarded,
    load_refs,
    open_cached,
    page_labels,
    run_ids_json,
    store_path,
)

TITLE, ICON, URL = page_labels(__name__)


def _spec_from_url(name: str) -> CheckpointSpec | None:
    text = st.query_params.get(name)
    if not text:
        return None
    try:
        return parse_spec(text)
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        return None


def _side(label: str, name: str, run_ids: list[str], default_offset: int) -> CheckpointSpec | None:
    """A run picker and a checkpoint picker; the default comes from the URL."""
    spec = _spec_from_url(name)
    run_default = spec.run_id if spec and spec.run_id in run_ids else run_ids[0]
    run_id = st.selectbox(
        f"{label}: run", run_ids, index=run_ids.index(run_default), key=f"diff_{name}_run"
    )
    refs = guarded(load_refs, store_path(), generation(), run_id)
    if not refs:
        return None
    pos = pages_data.default_position(refs, run_id, spec, default_offset)
    choice = st.selectbox(
        f"{label}: checkpoint",
        range(len(refs)),
        index=pos,
        format_func=lambda p: f"{refs[p].label} · {refs[p].checkpoint_id}",
        key=f"diff_{name}_ckpt_{run_id}",
    )
    ref = refs[int(choice)]
    return CheckpointSpec(run_id, checkpoint_id=ref.checkpoint_id)


@st.cache_data(max_entries=64, show_spinner=False)
def _diff_json(
    path: str,
    gen: int,
    a: tuple[str, str],
    b: tuple[str, str],
    ignore: tuple[str, ...],
    order: tuple[str, ...],
) -> str:
    view = pages_data.diff_view(
        open_cached(path, gen),
        CheckpointSpec(a[0], checkpoint_id=a[1]),
        CheckpointSpec(b[0], checkpoint_id=b[1]),
        ignore,
        order,
    )
    return json_text.dumps(view, default=str)  # NaN and Infinity as written (orjson writes null)


def page() -> None:
    """Render the Diff page."""
    st.title("Diff")
    store = get_store()
    if store is None:
        return
    run_ids = orjson.loads(run_ids_json(store_path(), generation()))
    if not run_ids:
        st.info("The store has no runs yet. Import a source on the Import page.")
        return
    left, right = st.columns(2)
    with left:
        a = _side("Old (A)", "a", run_ids, -1)
    with right:
        b = _side("New (B)", "b", run_ids, 0)
    with st.expander("Options: ignore paths, ignore order"):
        ignore = pages_data.parse_patterns(
            st.text_area(
                "Ignore paths",
                key="diff_ignore",
                height=68,
                placeholder="root['updated_at'], root[**]['ts']",
            )
        )
        order = pages_data.parse_patterns(
            st.text_input(
                "Lists compared without order", key="diff_order", placeholder="root['tags']"
            )
        )
    if a is None or b is None or a.checkpoint_id is None or b.checkpoint_id is None:
        return
    st.query_params["a"] = f"{a.run_id}@{a.checkpoint_id}"
    st.query_params["b"] = f"{b.run_id}@{b.checkpoint_id}"
    text = guarded(
        _diff_json,
        store_path(),
        generation(),
        (a.run_id, a.checkpoint_id),
        (b.run_id, b.checkpoint_id),
        ignore,
        order,
    )
    if text is not None:
        _render(json_text.loads(text))


def _render(view: dict[str, Any]) -> None:
    title, counts = pages_data.split_summary(view["summary"])
    st.subheader(title)
    st.caption(counts)
    table, side = st.tabs(["Table", "Side by side"])
    with table:
        if view["rows"]:
            st.dataframe(pd.DataFrame(view["rows"]), hide_index=True, width="stretch")
        else:
            st.info("The working states are the same (after the ignore options).")
        if view["total"] > len(view["rows"]):
            st.caption(f"First {len(view['rows'])} of {view['total']} rows shown.")
    with side:
        c1, c2 = st.columns(2)
        c1.markdown(f"**A** `{view['a']['run_id']}` step {view['a']['step_index']}")
        c1.json(view["old_side"], expanded=2)
        c2.markdown(f"**B** `{view['b']['run_id']}` step {view['b']['step_index']}")
        c2.json(view["new_side"], expanded=2)
    cols = st.columns(3)
    for col, key, title in zip(
        cols,
        ("budgets", "effects", "metadata"),
        ("Budgets", "Pending effects", "Metadata and versions"),
        strict=True,
    ):
        col.markdown(f"#### {title}")
        if view[key]:
            col.dataframe(pd.DataFrame(view[key]), hide_index=True, width="stretch")
        else:
            col.caption("No difference.")
