"""The Streamlit entry: navigation over the pages in debugger/ui/.

Shipped inside the package so ``stepscope app`` works from any install; the repository's
``app.py`` runs this same file, and ``AppTest.from_file("app.py")`` tests it. Each page
module exposes ``page()``; ``common.PAGES`` lists the pages in sidebar order with their
titles, icons and URLs, and a page's module is imported when the page first runs.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from debugger.pages_data.markup import html_text
from debugger.ui import common

ICON = Path(__file__).with_name("icon.png")

# How often the app looks at the store's files for a write by another process. A comment,
# not a docstring: Streamlit would draw a bare string of the script on the page.
WATCH_S = 4.0


def main() -> None:
    """Set up the page and run the selected one."""
    # a local icon: a Material icon here would be fetched from Google's font server
    st.set_page_config(page_title="Stepscope", page_icon=str(ICON), layout="wide")
    st.html(common.PAGE_CSS)
    # The default page is served at the app's root and Streamlit answers its own URL path
    # with "Page not found"; so it reserves another path, and a hidden page at its address
    # (``/runs?status=crashed``, as bookmarked or shared) sends the browser to it.
    pages = [
        st.Page(common.PAGE_RUNNERS[p.module], title=p.title, icon=p.icon,
                url_path=p.url if i else f"{p.url}-default", default=i == 0)
        for i, p in enumerate(common.PAGES)
    ]  # fmt: skip
    common.register_pages({info.url: page for info, page in zip(common.PAGES, pages, strict=True)})
    alias = st.Page(_to_default_page, title=pages[0].title, url_path=common.PAGES[0].url,
                    visibility="hidden")  # fmt: skip
    selected = st.navigation([*pages, alias])
    st.session_state["store_seen"] = common.generation()  # what this run reads
    _sidebar()
    with common.reading():  # the store's file is released when the page is drawn
        selected.run()


def _to_default_page() -> None:
    """The default page's own address: open the default page, with the same query."""
    st.switch_page(common.page_for(common.PAGES[0].url), query_params=st.query_params.to_dict())


def _sidebar() -> None:
    with st.sidebar:
        # the path as escaped text inside <code>: whatever its characters, never syntax.
        # st.html, not Markdown with HTML: the front end's HTML-in-Markdown code (~190 KB)
        # is then not loaded on the first page at all
        path = html_text(common.shown_path(common.store_path()))
        st.html(f'<p class="store-path">Store: <code>{path}</code></p>')
        if st.button(
            "Reload store",
            icon=":material/refresh:",
            help="Read the store afresh (new runs also show by themselves within seconds)",
        ):
            common.reopen_store()
        _watch_store()


@st.fragment(run_every=WATCH_S)
def _watch_store() -> None:
    """Rerun the page when another process wrote to the store (an import in a terminal)."""
    now = common.generation()
    if now != st.session_state.get("store_seen", now):
        st.session_state["store_seen"] = now
        st.rerun(scope="app")


main()
