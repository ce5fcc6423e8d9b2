"""What a person waits for in the browser: the first page after ``stepscope app``, and a step
change on the Timeline after a key press, each against bare Streamlit's floor in the same run.

- first page: from starting the server to the Runs page rendered in headless Chromium (its
  "Needs attention" heading, table of runs, status pills, search box and toggle, nothing
  still loading), a new browser context each time (a first visit); the floor is
  ``streamlit run`` of a one-line script, to its line rendered. The measurement is
  :func:`app_start_bench.one_start`'s.
- step change: on ``timeline?run=crash-at-step-7`` at 1440x900, from pressing Left or Right
  to the new step's heading drawn. The first sweep over the run's steps reads each step
  (cold); later sweeps find it cached (warm). The floor is a Streamlit script whose
  fragment holds two buttons with the same shortcuts and a heading with a counter: the
  round trip every Streamlit rerun pays.

    python benchmarks/browser_bench.py            # 3 starts, 3 sweeps
    python benchmarks/browser_bench.py --quick    # 1 start, 2 sweeps
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_start_bench import DRAWN, READY, _browser, _poll, _server, one_start

from debugger.cli.demo import build_demo_store
from tests.fixtures.browser import free_port

FIRST_PAGE_TARGET_S = 3.0
STEP_TARGET_MS = 250.0
RUN = "crash-at-step-7"
STEPS = 7
"""The run's checkpoints (steps 0-6)."""

FLOOR_STEPS = """
import streamlit as st

st.session_state.setdefault("n", 6)


@st.fragment
def nav():
    left, right = st.columns(2)
    if left.button("Prev", shortcut="Left"):
        st.session_state.n -= 1
    if right.button("Next", shortcut="Right"):
        st.session_state.n += 1
    st.markdown(f"#### Step {st.session_state.n}")


nav()
"""


LOST_AFTER_MS = 5_000
"""A press whose step has not appeared after this long counts as lost (it is pressed again)."""

_HEADING = (
    "s => [...document.querySelectorAll('h4')]"
    ".some(h => h.innerText.startsWith('Step ' + s + ' ') || h.innerText === 'Step ' + s)"
)


def _presses(tab: Any, sweeps: int) -> tuple[list[float], list[float], int]:
    """Milliseconds from a key press to the next step's heading: cold (first sweep) and
    warm (the others), and how many presses were lost (no step change within
    ``LOST_AFTER_MS``; the key is pressed again, and that press is timed instead). Starts
    at the last step, sweeps left to 0 and right again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    cold: list[float] = []
    warm: list[float] = []
    lost = 0
    step = STEPS - 1
    tab.get_by_role("heading", name=f"Step {step}").first.click()  # focus, not a widget
    for sweep in range(sweeps):
        for key, delta in (("ArrowLeft", -1), ("ArrowRight", 1)):
            for _ in range(STEPS - 1):
                step += delta
                t0 = time.perf_counter()
                tab.keyboard.press(key)
                try:
                    tab.wait_for_function(_HEADING, arg=str(step), timeout=LOST_AFTER_MS)
                except PlaywrightTimeout:
                    lost += 1
                    t0 = time.perf_counter()
                    tab.keyboard.press(key)
                    tab.wait_for_function(_HEADING, arg=str(step), timeout=30_000)
                (cold if sweep == 0 and key == "ArrowLeft" else warm).append(
                    (time.perf_counter() - t0) * 1000
                )
    return cold, warm, lost


def step_changes(cmd: list[str], port: int, browser: Any, url: str, sweeps: int) -> Any:
    """Serve ``cmd`` and time key presses on ``url`` (a page at its last step)."""
    base = f"http://127.0.0.1:{port}"
    with _server(cmd) as (proc, _):
        _poll(f"{base}/_stcore/health", proc)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        tab = context.new_page()
        tab.goto(base + url, wait_until="domcontentloaded")
        tab.get_by_role("heading", name=f"Step {STEPS - 1}").first.wait_for(timeout=60_000)
        tab.wait_for_timeout(1500)  # let the charts and the rest of the page settle
        try:
            return _presses(tab, sweeps)
        finally:
            context.close()


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    """Run both measures; print markdown tables."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="1 start, 2 sweeps")
    p.add_argument("--steps-only", action="store_true", help="skip the first-page starts")
    a = p.parse_args(argv)
    starts, sweeps = (1, 2) if a.quick else (3, 3)
    starts = 0 if a.steps_only else starts
    pw, browser = _browser()
    if browser is None:
        raise SystemExit("needs /usr/bin/chromium")
    tmp = Path(tempfile.mkdtemp(prefix="browser-bench-"))
    store = tmp / "demo.duckdb"
    build_demo_store(store)
    hello, floor = tmp / "hello.py", tmp / "steps.py"
    hello.write_text("import streamlit as st\nst.write('hello from the floor')\n")
    floor.write_text(FLOOR_STEPS)

    def app(port: int) -> list[str]:
        return [sys.executable, "-m", "debugger.cli", "app", "--store", str(store),
                "--no-browser", "--port", str(port)]  # fmt: skip

    def bare(script: Path, port: int) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless",
                "true", "--server.port", str(port)]  # fmt: skip

    first: dict[str, list[float]] = {"stepscope app": [], "streamlit floor": []}
    try:
        for _ in range(starts):
            port = free_port()
            first["stepscope app"].append(one_start(app(port), port, browser, READY, None,
                                                    DRAWN)["rendered"])  # fmt: skip
            port = free_port()
            first["streamlit floor"].append(
                one_start(bare(hello, port), port, browser, "hello from the floor")["rendered"]
            )
        port = free_port()
        ours = step_changes(app(port), port, browser, f"/timeline?run={RUN}", sweeps)
        port = free_port()
        theirs = step_changes(bare(floor, port), port, browser, "/", sweeps)
    finally:
        browser.close()
        pw.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload average {os.getloadavg()[0]:.1f}\n")
    if starts:
        print("| first page rendered | median s | runs |\n|---|---:|---:|")
        for name, values in first.items():
            print(f"| {name} | {statistics.median(values):.2f} | {len(values)} |")
    print("\n| step change after a key press | p50 ms | p90 ms | presses | lost |")
    print("|---|---:|---:|---:|---:|")
    rows = {"Timeline, step read (cold)": (ours[0], ""),
            "Timeline, step cached (warm)": (ours[1], str(ours[2])),
            "streamlit floor (fragment rerun)": (theirs[0] + theirs[1],
                                                 str(theirs[2]))}  # fmt: skip
    for name, (values, lost) in rows.items():
        print(
            f"| {name} | {_p(values, 0.5):.0f} | {_p(values, 0.9):.0f} | {len(values)} | {lost} |"
        )
    step = _p(ours[0] + ours[1], 0.5)
    if starts:
        start = statistics.median(first["stepscope app"])
        floor_s = statistics.median(first["streamlit floor"])
        print(f"\nFirst page <= {FIRST_PAGE_TARGET_S:.0f} s where the floor takes 2.6 s,"
              " so <= 1.15x"
              f" the floor: {start / floor_s:.2f}x"
              f" ({'met' if start <= 1.15 * floor_s else 'NOT met'}; {start:.2f} s against"
              f" {floor_s:.2f} s).")  # fmt: skip
    print(f"Step change p50 <= {STEP_TARGET_MS:.0f} ms: "
          f"{'met' if step <= STEP_TARGET_MS else 'NOT met'} ({step:.0f} ms); "
          f"presses lost: {ours[2]} of {len(ours[0]) + len(ours[1])} "
          f"(the floor: {theirs[2]}).")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
