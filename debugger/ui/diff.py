"""Diff page: any two checkpoints (same run, two runs, an original and its replay).

Side by side (both states pretty-printed and aligned, changed lines highlighted) and as a
table of changed paths, with budgets, pending effects and metadata. The URL carries the two
sides as ``?a=RUN:STEP&b=RUN:STEP`` (``RUN@CHECKPOINT_ID`` where a step was written twice),
like ``stepscope diff``; a link to something the store does not have says so.
"""

from __future__ import annotations

from typing import Any

import orjson
import streamlit as st

from debugger import json_text, pages_data
from debugger.diff import CheckpointSpec, parse_spec
from debugger.errors import StepscopeError
from debugger.pages_data.incident import missing_step
from debugger.pages_data.incident import spec as spec_text
from debugger.pages_data.markup import md_text
from debugger.report.split import SplitLine, split_html
from debugger.ui import widgets
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


def _spec_from_url(name: str, run_ids: list[str]) -> tuple[CheckpointSpec | None, bool]:
    """The side the URL asks for, and whether the URL is usable (an error is shown when
    not: a bad spec, an unknown run)."""
    text = st.query_params.get(name)
    if not text:
        return None, True
    try:
        spec = parse_spec(text)
    except StepscopeError as e:
        st.error(f"The link's {name}={md_text(text)} is not a checkpoint: {md_text(e)}",
                 icon=":material/error:")  # fmt: skip
        return None, False
    if spec.run_id not in run_ids:
        st.error(f"The link's {name}={md_text(text)} names run {md_text(spec.run_id)}, which "
                 "is not in this store.", icon=":material/error:")  # fmt: skip
        return None, False
    return spec, True


def _side(
    label: str, name: str, run_ids: list[str], default_offset: int
) -> tuple[CheckpointSpec | None, str | None, bool]:
    """A run picker and a checkpoint picker; the default comes from the URL.

    Returns:
        The side picked, its readable ``RUN:STEP`` form, and whether the URL asked for
        something this store has.
    """
    spec, usable = _spec_from_url(name, run_ids)
    run_default = spec.run_id if spec else run_ids[0]
    run_id = st.selectbox(
        f"{label}: run", run_ids, index=run_ids.index(run_default), key=f"diff_{name}_run"
    )
    refs = guarded(load_refs, store_path(), generation(), run_id)
    if not refs:
        return None, None, usable
    if spec is not None and spec.run_id == run_id:
        problem = missing_step(run_id, refs, spec.step, spec.checkpoint_id)
        if problem:
            st.error(f"The link's {name}: {md_text(problem)}", icon=":material/error:")
            usable = False
    pos = pages_data.default_position(refs, run_id, spec, default_offset)
    choice = st.selectbox(
        f"{label}: checkpoint",
        range(len(refs)),
        index=pos,
        format_func=lambda p: f"{refs[p].label} · {refs[p].checkpoint_id}",
        key=f"diff_{name}_ckpt_{run_id}",
    )
    ref = refs[int(choice)]
    return (
        CheckpointSpec(run_id, checkpoint_id=ref.checkpoint_id),
        spec_text(run_id, refs, ref),
        usable,
    )


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
        a, a_text, a_ok = _side("Old (A)", "a", run_ids, -1)
    with right:
        b, b_text, b_ok = _side("New (B)", "b", run_ids, 0)
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
    if not (a_ok and b_ok) and not st.button(
        "Compare the checkpoints picked above", key="diff_override"
    ):
        return  # never a diff of something other than what the link asked for
    st.query_params["a"] = a_text or f"{a.run_id}@{a.checkpoint_id}"
    st.query_params["b"] = b_text or f"{b.run_id}@{b.checkpoint_id}"
    text = guarded(
        _diff_json,
        store_path(),
        generation(),
        (a.run_id, a.checkpoint_id),
        (b.run_id, b.checkpoint_id),
        ignore,
        order,
    )
    view = None if text is None else guarded(json_text.loads, text)  # a too-deep value: one error
    if view is not None:
        _render(view)


def _render(view: dict[str, Any]) -> None:
    title, counts = pages_data.split_summary(view["summary"])
    st.subheader(md_text(title))
    st.caption(counts)
    side, table = st.tabs(["Side by side", "Changed paths"])
    with side:
        a, b = view["a"], view["b"]
        widgets.html(split_html(
            [SplitLine(**line) for line in view["split"]],
            f"A · {a['run_id']} step {a['step_index']}",
            f"B · {b['run_id']} step {b['step_index']}",
        ))  # fmt: skip
    with table:
        if view["rows"]:
            widgets.text_table(view["rows"], {"path": "Path", "kind": "Kind", "old": "Before",
                               "new": "After"}, full={"old": "old_full", "new": "new_full"},
                               widths={"path": "26%", "kind": "14%"})  # fmt: skip
        else:
            st.info("The working states are the same (after the ignore options).")
        if view["total"] > len(view["rows"]):
            st.caption(f"First {len(view['rows'])} of {view['total']} rows shown.")
    cols = st.columns(3)
    for col, key, title in zip(
        cols,
        ("budgets", "effects", "metadata"),
        ("Budgets", "Pending effects", "Metadata and versions"),
        strict=True,
    ):
        col.markdown(f"#### {title}")
        rows = view[key]
        with col:
            if rows:
                widgets.text_table(rows, {k: k.replace("_", " ") for k in rows[0]
                                          if not k.endswith("_full")})  # fmt: skip
            else:
                st.caption("No difference.")
