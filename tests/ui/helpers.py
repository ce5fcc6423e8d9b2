"""Driving the app with AppTest: open a page of the real navigation with query params."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_app(
    store: Path | str,
    url: str | None = None,
    *,
    timeout: float = 30,
    session: dict[str, object] | None = None,
    **query: str,
) -> AppTest:
    """Run app.py on ``store`` at the page ``url`` with ``query`` as the URL's params.

    ``session`` adds session-state entries (a sidebar setting such as the migrations module).

    AppTest.switch_page() only targets file pages; our pages are callables that
    st.navigation registers under their url_path, and Streamlit identifies such a page by
    the hash of its url_path: requesting that hash is what a browser opening /<url> does.
    """
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.session_state["store_path"] = str(store)
    for key, value in (session or {}).items():
        at.session_state[key] = value
    for key, value in query.items():
        at.query_params[key] = value
    if url is not None:
        at._page_hash = calc_hash(url)  # no public way to request a callable page
    at.run()
    return at


def texts(at: AppTest) -> str:
    """Every markdown, caption, subheader, title, alert and metric text on the page, its
    character references read back (the page writes checkpoint values as references)."""
    parts: list[str] = []
    for kind in (
        "title",
        "subheader",
        "markdown",
        "caption",
        "error",
        "warning",
        "info",
        "success",
    ):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    import html

    # checkpoint values are written as references, URLs with an invisible word joiner
    return html.unescape("\n".join(parts)).replace("\u2060", "")


def frames_text(at: AppTest) -> str:
    """The text of every dataframe and table on the page, HTML tables included (their
    markup stripped, their escapes read back)."""
    frames = [df.value for df in at.dataframe] + [t.value for t in at.table]
    return "\n".join([f.to_string() for f in frames] + [html_text(at)])


def html_bodies(at: AppTest) -> list[str]:
    """The bodies of the page's ``st.html`` elements."""
    return [str(h.value) for h in at.get("html")]


def html_text(at: AppTest) -> str:
    """The text a reader sees in the page's ``st.html`` elements."""
    import html
    import re

    bodies = [re.sub(r"<style>.*?</style>", "", b, flags=re.S) for b in html_bodies(at)]
    return html.unescape(re.sub(r"<[^>]+>", " ", "\n".join(bodies)))


def listed_runs(at: AppTest) -> list[dict[str, str]]:
    """The Runs page's list: each row's cells (their HTML source) by column, in order.

    The list is an HTML table (``st.html``) whose run ids link to the Timeline; the run id
    comes back from the link, unquoted, under ``run_id``.
    """
    import re
    from urllib.parse import unquote

    for body in html_bodies(at):
        if '<table class="runs">' not in body:
            continue
        header = re.findall(r"<th(?: [^>]*)?>(.*?)</th>", body)
        rows = []
        for line in re.findall(r"<tr>(<td.*?)</tr>", body):
            cells = dict(zip(header, re.findall(r"<td[^>]*>(.*?)</td>", line), strict=True))
            link = re.search(r'href="timeline\?run=([^"]+)"', cells["Run"])
            assert link, cells["Run"]
            cells["run_id"] = unquote(link.group(1))
            rows.append(cells)
        return rows
    return []


def cell_text(cell: str) -> str:
    """What a reader sees of a cell of :func:`listed_runs` (its markup stripped)."""
    import html
    import re

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())


def in_order(at: AppTest) -> str:
    """The main area's text in page order (headings, Markdown, alerts, HTML), read back."""
    import html

    parts: list[str] = []

    def walk(node: object) -> None:
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for child in children.values():
                walk(child)
            return
        value = getattr(node, "value", None)
        if isinstance(value, str):
            parts.append(value)

    walk(at.main)
    return html.unescape("\n".join(parts)).replace("\u2060", "")
