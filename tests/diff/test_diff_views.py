"""Notebook views: the HTML Jupyter shows for a run, a checkpoint and a diff."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser

from debugger.diff import diff_checkpoints, diff_states
from debugger.model import Budgets, Checkpoint, Run

EVIL = "<script>alert('x')</script>"


class Collect(HTMLParser):
    """Collects tags and text, so tests look at what a browser would render."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Collect:
    c = Collect()
    c.feed(html)
    return c


def checkpoint(step: int, state: object, pending: list[dict[str, object]]) -> Checkpoint:
    return Checkpoint(
        run_id=f"run {EVIL}", checkpoint_id=f"c{step}", parent_id=None, step_index=step,
        schema_version=3, created_at=datetime(2026, 11, 1, tzinfo=UTC), working_state=state,
        state_hash="0123456789abcdef", state_bytes=42, budgets=Budgets(10 * step, step, 5),
        pending_effects=pending, model_version="m-1", tool_versions={}, metadata={},
    )  # fmt: skip


def test_values_are_escaped_everywhere() -> None:
    a = checkpoint(1, {EVIL: EVIL}, [{"idempotency_key": EVIL, "tool": "t", "status": "pending"}])
    b = checkpoint(2, {EVIL: "ok"}, [])
    for html in (a._repr_html_(), diff_checkpoints(a, b)._repr_html_()):
        parsed = parse(html)
        assert "script" not in parsed.tags
        assert any(EVIL in t for t in parsed.text)


def test_diff_view_lists_each_row_and_the_effect_change() -> None:
    pending: dict[str, object] = {"idempotency_key": "refund-9", "tool": "issue_refund",
                                  "status": "pending"}  # fmt: skip
    a = checkpoint(6, {"n": 1, "items": [1]}, [pending])
    b = checkpoint(7, {"n": 1.0, "items": [1, 2]}, [])
    text = "".join(parse(diff_checkpoints(a, b)._repr_html_()).text)
    for needle in ("type_changes", "root['n']", "1.0", "iterable_item_added", "refund-9",
                   "removed", "tokens_spent"):  # fmt: skip
        assert needle in text
    rows_html = diff_states({"a": 1}, {"a": 2})._repr_html_()
    assert "values_changed" in rows_html and "<table" in rows_html
    assert "no differences" in diff_states({}, {})._repr_html_()


def test_run_view_shows_status_budgets_against_limits_and_error() -> None:
    run = Run(
        run_id="crash-at-step-7", agent="refund_desk", status="crashed",
        status_reason="no checkpoint after step 7", first_step=0, last_step=7,
        checkpoint_count=8, first_at=None, last_at=None, budgets=Budgets(9100, 7, 3000),
        limits={"tokens": 20000}, model_versions=["m-1", "m-2"], schema_versions=[3],
        last_error="worker lost", pending_count=1,
    )  # fmt: skip
    text = "".join(parse(run._repr_html_()).text)
    for needle in ("crash-at-step-7", "crashed", "9,100 / 20,000", "m-1, m-2", "worker lost"):
        assert needle in text


def test_diff_modules_never_import_streamlit() -> None:
    code = (
        "import sys, debugger.diff, debugger.cli.diff, debugger.views; "
        "sys.exit('streamlit' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
