"""A reviewer can step through, diff and audit ADK and Temporal runs in the app (AppTest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runtimes.conftest import do_import
from tests.ui.helpers import open_app, texts

HERE = Path(__file__).parent
TIMEOUT = "refund-timeout/01a23454-ddaf-703a-994c-ca5ae22ea1d2"
CONFIRM = "refund_desk/u-42/refund-confirm"
IN_FLIGHT = "1 effect(s) in flight: check each key against the system of record before resuming."
"""The Timeline's callout for a head's pending effect (a timed-out activity, a held call)."""


def _errors(at: Any) -> set[str]:
    """The page's error callouts, less the run's own failure, which the Timeline states."""
    return {e.value for e in at.error if not e.value.startswith("**Last error:**")}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("runtime-app") / "store.duckdb"
    do_import(HERE / "temporal" / "data" / "histories", path)
    do_import(HERE / "adk" / "data" / "adk.sqlite", path)
    return path


def test_timeline_steps_through_a_temporal_run(store: Path) -> None:
    at = open_app(store, "timeline", run=TIMEOUT, step="7")
    assert not at.exception and _errors(at) <= {IN_FLIGHT}
    page = texts(at)
    assert "### Step 7" in page and "compared with step 6" in page
    at.button(key="timeline_next").click().run()
    assert not at.exception and "### Step 8" in texts(at)


def test_timeline_and_audit_of_an_adk_run(store: Path) -> None:
    at = open_app(store, "timeline", run=CONFIRM, step="5")
    assert not at.exception and _errors(at) <= {IN_FLIGHT}
    assert "### Step 5" in texts(at)
    audit = open_app(store, "audit", run=CONFIRM)
    assert not audit.exception
    assert "adk_request_confirmation" in texts(audit) + str(audit.get("code"))


def test_diff_page_on_a_temporal_run(store: Path) -> None:
    at = open_app(store, "diff", a=f"{TIMEOUT}:5", b=f"{TIMEOUT}:7")
    assert not at.exception and _errors(at) <= {IN_FLIGHT}
