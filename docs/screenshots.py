"""Take the screenshots in docs/ from the bundled samples: ``python docs/screenshots.py``.

The store is what ``stepscope demo`` builds, plus two replays of the crashed run from step 6
(the fixed agent's and the original code's), as a reviewer's store would hold them. It is
built in a fresh temporary home directory, so the app shows it as
``~/stepscope-demo.duckdb``, not as a temporary path. ``stepscope app`` serves it and
headless Chromium (``/usr/bin/chromium``) takes each page at 1440x900. Look at every image
before committing it.

    python docs/screenshots.py              # rewrites docs/*.png
    python docs/screenshots.py --out /tmp   # elsewhere, to compare
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CRASHED = "crash-at-step-7"
REFUND_KEY = "refund-T-1077-ORD-1077"
SHOTS = {
    "runs-triage.png": ("/", "table a.run"),
    "timeline-crash.png": (
        f"/timeline?run={CRASHED}",
        f"table.ss-table td:has-text('{REFUND_KEY}')",
    ),
    "diff-split.png": (f"/diff?a={CRASHED}:5&b={CRASHED}:6", "table.ss-split tr.replace"),
}
"""File name -> (the page's address, what must be drawn before the shot)."""


def build_store(home: Path) -> Path:
    """The demo store with two replays of the crashed run, at ``home``."""
    from debugger.cli.demo import build_demo_store
    from debugger.replay.engine import replay

    store = home / "stepscope-demo.duckdb"
    build_demo_store(store)
    for agent in ("fixed_agent", "agent"):
        replay(store, CRASHED, 6, f"sample_checkpoints.refund_desk.agent:{agent}",
               mocks="sample_checkpoints.refund_desk.replay_mocks")  # fmt: skip
    return store


def main(argv: list[str] | None = None) -> int:
    """Build the store, serve it, take every screenshot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where the PNGs go")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS, serving

    home = Path(tempfile.mkdtemp(prefix="stepscope-docs-"))
    os.environ["HOME"] = str(home)  # the app, started below, shows the store under ~
    os.chdir(REPO)  # the replays import the sample agent from the repository
    store = build_store(home)
    with serving(store) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, (url, drawn) in SHOTS.items():
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(base + url, wait_until="domcontentloaded")
            page.locator(drawn).first.wait_for(timeout=60_000)
            page.wait_for_timeout(1500)  # charts and the verdicts drawn in place
            page.screenshot(path=str(args.out / name))
            print(args.out / name)
            page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
