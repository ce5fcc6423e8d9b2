"""The real app in headless Chromium: Runs page -> the crashed run -> step forward.

Starts ``stepscope app`` on the demo store (what ``stepscope demo`` builds), follows the
crashed run from the Runs page to its Timeline, steps back and forward with the keyboard
and the Next button, checks that the step's diff and the pending refund are on screen, and
takes a screenshot: into the test's temporary directory, or over docs/timeline-crash.png
(used in docs/app.md) when run with ``--update-snapshots``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS, free_port
from tests.ui.conftest import CRASHED, REFUND_KEY

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "timeline-crash.png"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]


def _wait_healthy(base: str, server: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the app exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"the app did not answer {base}/_stcore/health in {timeout} s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Stop ``stepscope app`` and the Streamlit server it started: its whole process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``stepscope app`` on a fresh demo store, on a free port; stopped after the tests."""
    from debugger.cli.demo import build_demo_store

    store = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_demo_store(store)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "debugger.cli",
            "app",
            "--store",
            str(store),
            "--no-browser",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, server)
        yield base
    finally:
        _stop(server)


def test_runs_to_crashed_run_step_forward_shows_diff_and_pending_refund(
    app_url: str, tmp_path: Path, update_snapshots: bool
) -> None:
    screenshot = SCREENSHOT if update_snapshots else tmp_path / SCREENSHOT.name
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            page.goto(app_url, wait_until="domcontentloaded")
            page.get_by_text("Needs attention").wait_for(timeout=30_000)
            # the filters' popover: pick a status, the list and the button's label follow
            page.get_by_role("button", name="Filters").click()
            page.locator('[data-testid="stMultiSelect"]').first.click()
            page.get_by_role("option", name="crashed").click()
            page.keyboard.press("Escape")
            page.get_by_role("button", name="Filters (1)").wait_for(timeout=15_000)
            rows = page.locator('[data-testid="stMarkdownContainer"] table tbody tr')
            page.wait_for_function(
                "() => document.querySelectorAll("
                "'[data-testid=\"stMarkdownContainer\"] table tbody tr').length === 2",
                timeout=15_000,
            )
            assert CRASHED in " ".join(rows.all_inner_texts())
            # the run's id in the list is a link to its Timeline
            page.locator("table").get_by_role("link", name=CRASHED).click()
            heading = page.get_by_role("heading", name="Step 6")
            heading.wait_for(timeout=30_000)
            assert f"run={CRASHED}" in page.url
            heading.click()  # focus on the page, not on a widget that takes arrow keys
            page.keyboard.press("ArrowLeft")  # the Left shortcut: one step back
            page.get_by_role("heading", name="Step 5").wait_for(timeout=15_000)
            page.get_by_role("button", name="Next").click()  # and forward again
            heading.wait_for(timeout=15_000)
            assert "step=6" in page.url
            page.get_by_text("root['next_effect']").first.wait_for(timeout=15_000)
            page.get_by_text(REFUND_KEY).first.wait_for(timeout=15_000)
            page.wait_for_timeout(800)  # let the charts finish drawing
            page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.stat().st_size > 0
        finally:
            browser.close()
