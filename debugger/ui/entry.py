"""The Streamlit entry: navigation over the pages in debugger/ui/.

Shipped inside the package so ``stepscope app`` works from any install; the repository's
``app.py`` runs this same file, and ``AppTest.from_file("app.py")`` tests it. Each page
module exposes ``page()``; ``common.PAGES`` lists the pages in sidebar order with their
titles, icons and URLs, and a page's module is imported when the page first runs.
"""

from __future__ import annotations

import streamlit as st

from debugger.ui import common


def main() -> None:
    """Set up the page and run the selected one."""
    st.set_page_config(page_title="Stepscope", page_icon=":material/history:", layout="wide")
    st.session_state.setdefault("store_generation", 0)
    pages = [
        st.Page(common.PAGE_RUNNERS[p.module], title=p.title, icon=p.icon, url_path=p.url,
                default=i == 0)
        for i, p in enumerate(common.PAGES)
    ]  # fmt: skip
    common.register_pages({p.url_path: p for p in pages})
    selected = st.navigation(pages)
    _sidebar()
    selected.run()


def _sidebar() -> None:
    with st.sidebar:
        st.caption(f"Store: `{common.store_path()}`")
        if st.button(
            "Reload store",
            icon=":material/refresh:",
            help="Pick up runs imported by another process",
        ):
            common.reopen_store()


main()
