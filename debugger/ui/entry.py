"""The Streamlit entry: navigation over the pages in debugger/ui/.

Shipped inside the package so ``stepscope app`` works from any install; the repository's
``app.py`` runs this same file, and ``AppTest.from_file("app.py")`` tests it. Each page
module exposes ``page()`` and a ``TITLE``, ``ICON`` and ``URL``; the order below is the
order in the sidebar.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import streamlit as st

PAGE_MODULES = (
    "runs", "timeline", "diff", "audit", "replay", "migrations", "import_page", "sql",
)  # fmt: skip


def _modules() -> list[ModuleType]:
    found = []
    for name in PAGE_MODULES:
        qualified = f"debugger.ui.{name}"
        try:
            found.append(importlib.import_module(qualified))
        except ModuleNotFoundError as e:
            if e.name != qualified:
                raise
    return found


def main() -> None:
    """Set up the page and run the selected one."""
    st.set_page_config(page_title="Stepscope", page_icon=":material/history:", layout="wide")
    st.session_state.setdefault("store_generation", 0)
    pages = [
        st.Page(m.page, title=m.TITLE, icon=m.ICON, url_path=m.URL, default=i == 0)
        for i, m in enumerate(_modules())
    ]
    st.navigation(pages).run()


main()
