"""``stepscope app``'s warm-up: what it reads is what the first page then uses.

The server itself (in-process Streamlit, the warm-up overlapping the browser's load) runs in
the browser test; here the warm-up is called directly, as the server's thread calls it.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

from debugger.ui import common, serve
from tests.ui.helpers import open_app, texts


def test_warm_opens_the_cached_store_and_the_runs_page_then_renders(
    sample_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve, "_wait_for_server", lambda: True)
    monkeypatch.setattr(serve, "OTHER_PAGES_AFTER_S", 0.0)
    path = str(sample_store)
    try:
        serve.warm(path)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert (path, 0) in common._OPENED  # the connection the first page's session reuses
    assert all(f"debugger.ui.{name}" in sys.modules for name in common.PAGE_MODULES)
    at = open_app(sample_store)
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 13 and "Needs attention" in texts(at)


def test_warm_leaves_a_missing_store_to_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve, "_wait_for_server", lambda: True)
    monkeypatch.setattr(serve, "OTHER_PAGES_AFTER_S", 0.0)
    try:
        serve.warm(str(tmp_path / "none.duckdb"))  # no exception: the page shows the error
    finally:
        gc.unfreeze()
    at = open_app(tmp_path / "none.duckdb")
    assert at.error and "none.duckdb" in at.error[0].value
