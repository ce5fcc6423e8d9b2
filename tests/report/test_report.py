"""``stepscope report``: one self-contained HTML file, valid, offline, with the evidence."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from tests.fixtures.hostile import BEACON_HOST, REPLAYED, RUN
from tests.fixtures.native import stepscope
from tests.ui.conftest import REFUND_KEY

VOID = {"meta", "br", "col", "img", "input", "link", "hr"}


class _Checker(HTMLParser):
    """Checks that tags nest and close, and collects what would load from elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.resources: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset") or (value and "url(" in value):
                self.resources.append(f"{tag} {name}={value}")
        if tag in ("script", "img", "iframe", "link", "object", "embed"):
            self.resources.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _check(text: str) -> _Checker:
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert text.startswith("<!DOCTYPE html>")
    assert not checker.errors and not checker.stack, (checker.errors, checker.stack)
    assert not checker.resources, checker.resources  # nothing loads from anywhere
    assert not re.search(r"url\(|@import", text)  # nor from the style sheet
    return checker


def test_the_report_of_a_crashed_run_holds_the_evidence(review_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "incident.html"
    replay_id = f"{REPLAYED}~replay-1"
    result = stepscope("report", REPLAYED, "--replay", replay_id, "-o", out,
                       "--store", review_store)  # fmt: skip
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "http://" not in text and "https://" not in text
    seen = " ".join(_check(text).text)
    assert f"Incident report: {REPLAYED}" in seen and "crashed" in seen
    assert "stopped here" in seen  # the failure step marked in the timeline
    assert "Step 7 was attempted and never checkpointed" in seen
    assert REFUND_KEY in seen and "What to check before resuming" in seen
    assert "effect-outcome-unknown" in seen  # the findings
    assert "Resumable after checks" in seen  # the verdict
    assert "limit" in seen.lower() and "6,000" in seen  # budgets against their limits
    assert "What changed at step" in seen and 'class="ss-split"' in text
    assert f"Replay {replay_id}" in seen


def test_hostile_content_stays_text_in_the_report(review_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "hostile.html"
    assert stepscope("report", RUN, "-o", out, "--store", review_store).exit_code == 0
    text = out.read_text()
    seen = " ".join(_check(text).text)
    assert f"![beacon](http://{BEACON_HOST}/beacon.png)" in seen  # shown, never fetched


def test_bad_input_is_one_line(review_store: Path, tmp_path: Path) -> None:
    result = stepscope("report", "nope", "-o", tmp_path / "x.html", "--store", review_store)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "nope" in result.stderr
    result = stepscope("report", REPLAYED, "--replay", "deploy-mid-run", "-o",
                       tmp_path / "x.html", "--store", review_store)  # fmt: skip
    assert result.exit_code == 2 and "is not a replay of" in result.stderr
    result = stepscope("report", REPLAYED, "-o", tmp_path / "no" / "x.html",
                       "--store", review_store)  # fmt: skip
    assert result.exit_code == 2 and "no directory" in result.stderr
