"""Driving the app with AppTest: open a page of the real navigation with query params."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_app(store: Path | str, url: str | None = None, **query: str) -> AppTest:
    """Run app.py on ``store`` and open the page at ``url`` with ``query`` as the URL's params.

    AppTest.switch_page() only targets file pages; our pages are callables registered by
    st.navigation under their url_path, so the page is selected by the hash Streamlit gives
    that url_path (what a browser opening /<url>?... gets).
    """
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["store_path"] = str(store)
    at.run()
    assert not at.exception, at.exception
    if url is not None:
        for key, value in query.items():
            at.query_params[key] = value
        at._page_hash = next(  # no public way to pick a callable page
            h for h, info in at._registered_pages.items() if info.get("url_pathname") == url
        )
        at.run()
    return at


def texts(at: AppTest) -> str:
    """Every markdown, caption, subheader, title, alert and metric text on the page."""
    parts: list[str] = []
    for kind in ("title", "subheader", "markdown", "caption", "error", "warning", "info",
                 "success"):  # fmt: skip
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(parts)


def frames_text(at: AppTest) -> str:
    """The text of every dataframe on the page."""
    return "\n".join(df.value.to_string() for df in at.dataframe)
