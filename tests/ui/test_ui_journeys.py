"""A reviewer's journeys through the real app in headless Chromium at 1440x900.

Triage (replays grouped, an audit-error run in Needs attention, a badge filter, a table
that fits), the crash step marked with the pending effect visible without scrolling, a
shortened value opened in full, a bad deep link, a replay result's address, an import from
the command line while the app is open, hostile content shown as text with no request
leaving the page, and the incident report opened offline. Each journey's screenshot goes to
the test's temporary directory; the ones in docs/ come from the bundled samples alone
(``python docs/screenshots.py``), not from this store with its hostile run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS, serving
from tests.fixtures.hostile import BEACON_HOST, REPLAYED, RUN, STATE_IMAGE
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.ui.conftest import CRASHED, REEXECUTED, REFUND_KEY

LOCAL = ("http://127.0.0.1", "http://localhost", "ws://127.0.0.1", "data:", "blob:", "about:")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}"),
]


@pytest.fixture(scope="module")
def served(review_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The app on a copy of the review store (an import journey writes to it)."""
    copy = tmp_path_factory.mktemp("journeys") / "review.duckdb"
    shutil.copy(review_store, copy)
    with serving(copy) as base:
        yield base, copy


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A 1440x900 page whose requests outside this machine are recorded and refused."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    tab = context.new_page()
    tab.outside = []

    def route(r: Any) -> None:
        if r.request.url.startswith(LOCAL) or r.request.url.startswith("file:"):
            r.continue_()
        else:
            tab.outside.append(r.request.url)
            r.abort()

    tab.route("**/*", route)
    yield tab
    context.close()


def _open(page: Any, url: str, text: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.get_by_text(text).first.wait_for(timeout=30_000)


def _shot(page: Any, name: str, tmp_path: Path) -> None:
    page.wait_for_timeout(600)
    page.screenshot(path=str(tmp_path / name))


def test_triage_groups_replays_filters_on_click_and_fits(
    served: Any, page: Any, tmp_path: Path
) -> None:
    base, _ = served
    _open(page, base, "Needs attention")
    attention = page.get_by_text("Needs attention").first.bounding_box()
    table = page.locator("table:has(a.run)")
    assert attention["y"] < table.bounding_box()["y"]  # before the table
    page.get_by_text("completed, but the audit found at step 9").first.wait_for()
    assert REEXECUTED in page.locator("li", has_text="completed, but the audit").first.inner_text()
    rows = table.locator("tbody tr")
    assert "~replay-" not in " ".join(rows.all_inner_texts())  # grouped under the original
    fits = page.evaluate(
        "() => { const t = document.querySelector('table:has(a.run)');"
        " const rows = [...t.querySelectorAll('tbody tr')]"
        ".map(r => r.getBoundingClientRect().height);"
        " return [t.scrollWidth, t.parentElement.clientWidth, Math.max(...rows)]; }"
    )
    assert fits[0] <= fits[1] + 1 and fits[2] < 45, fits  # no overflow, one line a row
    _shot(page, "runs-triage.png", tmp_path)
    page.get_by_role("button", name="crashed").first.click()
    page.wait_for_url("**status=crashed**", timeout=15_000)
    page.wait_for_function(
        "() => document.querySelectorAll('table:has(a.run) tbody tr').length === 2"
    )
    page.get_by_role("button", name="crashed").first.click()  # off again
    page.wait_for_function("() => !location.search.includes('status=')", timeout=15_000)
    page.get_by_text("Show replays").click()
    page.wait_for_url("**replays=1**", timeout=15_000)
    page.locator("table:has(a.run)").get_by_text(f"{REPLAYED}~replay-1").wait_for()
    assert not page.outside


def test_the_crash_step_and_the_pending_effect_are_above_the_fold(
    served: Any, page: Any, tmp_path: Path
) -> None:
    base, _ = served
    _open(page, f"{base}/timeline?run={CRASHED}", "Step 7 was attempted and never checkpointed")
    page.get_by_text("stopped here").first.wait_for()  # the navigator marks the crash step
    key = page.locator("table.ss-table td", has_text=REFUND_KEY).first
    key.wait_for()
    box = key.bounding_box()
    assert box["y"] + box["height"] <= 900  # visible without scrolling
    finding = page.get_by_text("effect-outcome-unknown").first.bounding_box()
    assert finding["y"] + finding["height"] <= 900
    _shot(page, "timeline-crash.png", tmp_path)
    # a shortened value opens in full on click
    summary = page.locator("table.ss-table summary", has_text="amount_cents").first
    assert not page.get_by_text("within the 30-day window").first.is_visible()
    summary.click()
    page.get_by_text("within the 30-day window").first.wait_for(timeout=10_000)
    # from the step: the diff with the previous step, in the readable form
    page.get_by_role("link", name="Diff with the previous step").click()
    page.wait_for_url(f"**/diff?a={CRASHED}%3A5&b={CRASHED}%3A6**", timeout=15_000)
    page.locator("table.ss-split tr.replace").first.wait_for(timeout=30_000)
    _shot(page, "diff-split.png", tmp_path)
    assert not page.outside


def test_a_bad_deep_link_says_what_was_asked(served: Any, page: Any) -> None:
    base, _ = served
    _open(page, f"{base}/timeline?run=no-such-run", "No run 'no-such-run' in this store")
    _open(page, f"{base}/timeline?run={CRASHED}&step=42", "has no step 42")
    assert not page.get_by_role("heading", name="Step 6").count()  # no other step instead
    _open(page, f"{base}/diff?a={CRASHED}:5&b=nope:1", "names run nope, which is not in")
    assert not page.locator("table.ss-split").count()


def test_a_replay_result_has_an_address(served: Any, page: Any) -> None:
    base, _ = served
    url = f"{base}/replay?replay={REPLAYED}~replay-1&baseline={REPLAYED}~replay-2"
    _open(page, url, "Your code and the original code, side by side")
    page.get_by_text("If you replayed a fix, this is expected").first.wait_for()
    page.get_by_text("The original code would have sent a").first.wait_for()


def test_an_import_from_the_terminal_shows_in_the_open_app(
    served: Any, page: Any, tmp_path: Path
) -> None:
    base, store = served
    _open(page, base, "Needs attention")
    source = write_native_sqlite(tmp_path / "new.sqlite", native_rows(runs=2))
    done = subprocess.run(
        [sys.executable, "-m", "debugger.cli", "import", str(source), "--store", str(store)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # not refused while the app is open
    # the app notices the store changed and shows the new runs by itself
    page.locator("table:has(a.run)").get_by_text("run-1", exact=True).wait_for(timeout=30_000)


def test_hostile_content_is_text_and_nothing_leaves_the_page(served: Any, page: Any) -> None:
    base, _ = served
    from urllib.parse import quote

    run = quote(RUN, safe="")
    for url in (f"/timeline?run={run}", f"/timeline?run={run}&step=1",
                f"/diff?a={run}%3A1&b={run}%3A2", "/"):  # fmt: skip
        _open(page, base + url, "ALERT" if "step" not in url else "Step 1")
        page.wait_for_timeout(1500)
        shown = page.evaluate("() => document.body.innerText.replaceAll('\u2060', '')")
        if url.startswith("/timeline"):
            assert f"![beacon](http://{BEACON_HOST}/beacon.png)" in shown  # as text
        if "step=1" in url or url.startswith("/diff"):
            assert STATE_IMAGE in shown
        loads = page.evaluate(
            '() => [...document.querySelectorAll(\'img, a[href^="http"], a[href^="//"]\')]'
            ".map(e => e.outerHTML).filter(h => h.includes('" + BEACON_HOST + "'))"
        )
        assert not loads, (url, loads)  # no image, no link out
    assert not page.outside, page.outside  # not even the icon font


def test_the_incident_report_opens_offline(served: Any, page: Any, tmp_path: Path) -> None:
    base, store = served
    out = tmp_path / "incident.html"
    done = subprocess.run(
        [sys.executable, "-m", "debugger.cli", "report", CRASHED, "-o", str(out), "--store",
         str(store)], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the Timeline's button downloads the same report
    _open(page, f"{base}/timeline?run={CRASHED}", "Incident report (HTML)")
    with page.expect_download(timeout=60_000) as download:
        page.get_by_text("Incident report (HTML)").first.click()
    assert download.value.suggested_filename == f"incident-{CRASHED}.html"
    saved = Path(download.value.path()).read_text()
    assert saved.startswith("<!DOCTYPE html>") and f"Incident report: {CRASHED}" in saved
    page.goto(out.as_uri())
    page.get_by_role("heading", name=f"Incident report: {CRASHED}").wait_for()
    page.get_by_text("Step 7 was attempted and never checkpointed").wait_for()
    assert page.locator("tr.stop").count() >= 1
    assert not page.outside


def test_the_fork_tree_boxes_open_their_checkpoints(served: Any, page: Any) -> None:
    base, _ = served
    _open(page, f"{base}/timeline?run={REEXECUTED}", "Fork tree")
    node = page.locator(f'svg a[*|href$="checkpoint={REEXECUTED}%2Fc009"]').first
    node.wait_for(timeout=30_000)
    node.click()
    page.wait_for_url(f"**checkpoint={REEXECUTED}%2Fc009**", timeout=15_000)
    page.get_by_text(f"checkpoint {REEXECUTED}/c009").first.wait_for(timeout=30_000)


def test_every_pages_address_opens_that_page(served: Any, page: Any) -> None:
    """Each page's URL as a person bookmarks or shares it, the default page's own included
    (Streamlit serves that one at the root and answers its path with "Page not found")."""
    from debugger.ui.common import PAGES

    base, _ = served
    expected = {
        "runs?status=crashed": "Needs attention",
        f"timeline?run={CRASHED}&step=5": "Step 5",
        f"diff?a={CRASHED}:5&b={CRASHED}:6": f"{CRASHED}:5 → {CRASHED}:6",
        f"audit?run={CRASHED}": "Could each run be resumed safely",
        "replay": "Re-run a run from one of its checkpoints",
        "migrations": "Schema versions in the store",
        "import": "Re-importing a source adds only new rows",
        "sql": "Read-only over the store",
    }
    assert {u.split("?")[0] for u in expected} == {p.url for p in PAGES}  # every page
    for url, text in expected.items():
        _open(page, f"{base}/{url}", text)
        page.wait_for_timeout(500)  # a "Page not found" dialog comes with the page
        assert not page.get_by_text("Page not found").count(), url
    # the Runs page's address keeps its filter: only crashed runs are listed
    _open(page, f"{base}/runs?status=crashed", "Needs attention")
    page.wait_for_url("**status=crashed**", timeout=15_000)
    table = page.locator("table:has(a.run)")
    table.get_by_text(CRASHED, exact=True).wait_for(timeout=15_000)
    statuses = table.locator("tbody tr td:nth-child(2)").all_inner_texts()
    assert statuses and all("crashed" in s for s in statuses), statuses
    assert page.get_by_role("heading", name="Runs").count()
    assert not page.outside


def test_a_value_too_long_for_the_page_downloads_whole(
    page: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    import json

    from tests.ui.test_ui_review import long_value_store

    store, value = long_value_store(tmp_path_factory.mktemp("long"))
    with serving(store) as base:
        _open(page, f"{base}/timeline?run=run-0&step=1", "Run metadata and versions")
        page.locator("table.ss-table summary", has_text="transcript").first.click()
        page.get_by_text("the whole value is a download below the table").wait_for()
        with page.expect_download(timeout=60_000) as download:
            name = "Download metadata.transcript (value) in full"
            page.get_by_role("button", name=name).click()
        saved = Path(download.value.path()).read_text()
    assert download.value.suggested_filename == "metadata.transcript_value.json"
    assert json.loads(saved) == value  # every character, the end included
    assert not page.outside
