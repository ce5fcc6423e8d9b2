"""The real app in headless Chromium: Runs page -> the crashed run -> step forward.

Starts ``stepscope app`` on the demo store (what ``stepscope demo`` builds), follows the
crashed run from the Runs page to its Timeline, steps back and forward with the keyboard
and the Next button, checks that the step's diff and the pending refund are on screen, and
takes a screenshot into the test's temporary directory (docs/timeline-crash.png comes from
``python docs/screenshots.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS, serving
from tests.ui.conftest import CRASHED, REFUND_KEY

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "timeline-crash.png"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``stepscope app`` on a fresh demo store, on a free port; stopped after the tests."""
    from debugger.cli.demo import build_demo_store

    store = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    build_demo_store(store)
    with serving(store) as base:
        yield base


def test_runs_to_crashed_run_step_forward_shows_diff_and_pending_refund(
    app_url: str, tmp_path: Path
) -> None:
    screenshot = tmp_path / SCREENSHOT.name  # docs/ gets docs/screenshots.py's
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(app_url, wait_until="domcontentloaded")
            page.get_by_text("Needs attention").wait_for(timeout=30_000)
            # a status badge filters on click, and the URL follows
            page.get_by_role("button", name="crashed").first.click()
            rows = page.locator("table.runs tbody tr")
            page.wait_for_function(
                "() => document.querySelectorAll('table.runs tbody tr').length === 2",
                timeout=15_000,
            )
            assert "status=crashed" in page.url
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
            # the address follows the step once the rerun that drew it has finished
            page.wait_for_url(lambda url: "step=6" in url, timeout=15_000)
            page.get_by_text("root['next_effect']").first.wait_for(timeout=15_000)
            page.get_by_text(REFUND_KEY).first.wait_for(timeout=15_000)
            page.wait_for_timeout(800)  # let the charts finish drawing
            page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.stat().st_size > 0
        finally:
            browser.close()
