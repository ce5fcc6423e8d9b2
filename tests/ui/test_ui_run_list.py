"""The Runs page's list: an HTML table whose cells no run data can turn into markup, with
run ids linked to the Timeline, ordered and paged; Needs attention likewise."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from debugger.model import Budgets, Run
from debugger.pages_data import run_list
from debugger.pages_data.markup import md_text
from debugger.store import Store
from loaders import import_source
from tests.fixtures.native import native_rows, write_native_sqlite
from tests.ui.helpers import cell_text, html_bodies, listed_runs, open_app, texts


def _run(run_id: str = "r-1", tokens: int = 1200, **overrides: Any) -> Run:
    fields: dict[str, Any] = dict(
        run_id=run_id, agent="desk", status="failed", status_reason="an error", first_step=0,
        last_step=3, checkpoint_count=4, first_at=datetime(2026, 3, 5, 14, 0),
        last_at=datetime(2026, 3, 5, 14, 0, 33, 500_000),
        budgets=Budgets(tokens, 3, 4500), limits={}, model_versions=["m-1", "m-2"],
        schema_versions=[1], last_error="boom", pending_count=1,
    )  # fmt: skip
    fields.update(overrides)
    return Run(**fields)


@pytest.mark.parametrize(
    "text",
    ["a|b", "*bold*", "[x](http://evil)", "<script>alert(1)</script>", ":red[x]", "$x$",
     "`code`", "a\nb", "&amp;", "~~gone~~", "_it_", "back\\slash"],
)  # fmt: skip
def test_cell_text_is_never_syntax(text: str) -> None:
    cell = md_text(text)
    assert not any(c in cell for c in "|*[]<>`$~_\\\n:") or "&#" in cell
    # every special character became a character reference; the rest is unchanged
    import html

    assert html.unescape(cell).replace("\u2060", "") == " ".join(text.split())
    assert "http:" not in html.unescape(cell)  # no URL the renderer would make a link of


def test_a_long_error_is_cut_and_marked() -> None:
    cell = md_text("x" * 200, run_list.ERROR_CHARS)
    assert len(cell) == run_list.ERROR_CHARS and cell.endswith("…")


def test_run_ids_are_quoted_in_links_and_escaped_in_text() -> None:
    link = run_list.run_link('a b/"c"&<d>', "timeline")
    assert link.startswith('<a class="run" href="timeline?run=a%20b%2F%22c%22%26%3Cd%3E" ')
    assert "<d>" not in link and 'title="a b/&quot;c&quot;&amp;&lt;d&gt;"' in link
    assert link.endswith(">a b/&quot;c&quot;&amp;&lt;d&gt;</a>")


HOSTILE = (
    "![beacon](http://198.51.100.7/b.png)",
    "[x](http://evil)",
    ":red[ALERT]",
    '<img src="http://198.51.100.7/b.png" onerror="alert(1)">',
    "</td></tr></table><script>alert(1)</script>",
    '" onmouseover="alert(1)',
    ":material/error: **bold** $x$",
)


@pytest.mark.parametrize("text", HOSTILE)
def test_run_data_in_the_list_and_needs_attention_is_text(text: str) -> None:
    import html
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
            self.text: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.append((tag, attrs))

        def handle_data(self, data: str) -> None:
            self.text.append(data)

    run = _run(run_id=text, agent=text, last_error=text, replay_of=None)
    verdicts = {text: {"verdict": text, "errors": [{}], "status": "failed"}}
    table = run_list.runs_html([run], "timeline", verdicts, {text: [text]})
    items = [{"run_id": text, "status": "failed", "why": text}]
    for body in (table, run_list.attention_html(items, "timeline")):
        parsed = Tags()
        parsed.feed(body)
        # only the markup the list writes itself: no image, script, handler, foreign link
        assert {t for t, _ in parsed.tags} <= {"table", "thead", "tbody", "tr", "th", "td",
                                               "a", "span", "ul", "li"}  # fmt: skip
        for tag, attrs in parsed.tags:
            assert {name for name, _ in attrs} <= {"class", "href", "title", "aria-hidden",
                                                   "translate"}, (tag, attrs)  # fmt: skip
            href = dict(attrs).get("href")
            assert href is None or (href.startswith("timeline?run=") and ":" not in href)
        shown = "".join(parsed.text)
        assert " ".join(text.split()) in shown  # the value, as the reader sees it
        assert html.escape(text) in body  # written escaped, never as markup


def test_the_table_has_one_line_per_run_with_badges_and_readable_values() -> None:
    verdicts = {"r-1": {"verdict": "restart required", "errors": [{}], "status": "failed"}}
    text = run_list.runs_html([_run()], "timeline", verdicts, {"r-1": ["r-1~replay-1"]})
    assert text.startswith('<table class="runs"><thead><tr><th>Run</th><th>Status</th>')
    (line,) = [row for row in text.splitlines() if row.startswith("<tr><td>")]
    assert '<span class="runs-badge red"><span class="runs-icon"' in line
    assert ">error</span> failed</span>" in line  # the icon's name, drawn by the icon font
    assert '<span class="runs-error">restart required, 1 error(s)</span>' in line
    assert ">1,200</td>" in line and ">4.5\u00a0s</td>" in line
    assert 'href="timeline?run=r-1~replay-1"' in line and ">1</a>" in line  # one replay
    assert '<span title="boom">boom</span>' in line  # the whole error on hover
    assert "<td>2026-03-05 14:00:33</td>" in line
    assert line.count("<td") == len(run_list.COLUMNS)


def test_a_long_error_is_cut_and_whole_on_hover() -> None:
    line = run_list.runs_html([_run(last_error="y" * 200)], "timeline")
    cell = next(c for c in line.split("<td>") if c.startswith("<span title="))
    assert f'title="{"y" * 200}"' in cell
    assert cell_text(cell) == "y" * (run_list.ERROR_CHARS - 1) + "…"


def test_needs_attention_links_each_run_with_why() -> None:
    items = [{"run_id": "r 1", "status": "crashed", "why": "stopped after step 6"}]
    body = run_list.attention_html(items, "timeline")
    assert body.startswith('<ul class="attention"><li><span class="runs-icon"')
    assert ">dangerous</span>" in body and 'href="timeline?run=r%201"' in body
    assert cell_text(body) == "dangerous r 1 · stopped after step 6"


def test_every_order_is_one_the_store_knows() -> None:
    from debugger.store.run_reads import RUN_ORDERS

    assert set(run_list.ORDERS.values()) <= set(RUN_ORDERS)
    assert [run_list.page_count(n) for n in (0, 1, 50, 51, 120)] == [1, 1, 1, 2, 3]


def test_the_page_pages_through_a_long_list(tmp_path: Path) -> None:
    # 60 runs (the fixture's timestamps allow no more)
    source = write_native_sqlite(tmp_path / "many.sqlite", native_rows(runs=60, steps=2))
    store_path = tmp_path / "many.duckdb"
    with Store.open(store_path) as store:
        import_source(store, str(source))
    at = open_app(store_path)
    assert not at.exception and not at.error
    first = [r["run_id"] for r in listed_runs(at)]
    assert len(first) == run_list.PAGE_ROWS
    assert "Runs 1–50 of 60 (page 1 of 2)" in texts(at)
    needing = int(texts(at).split(" runs (", 1)[1].split(" stopped short", 1)[0])
    attention = next(b for b in html_bodies(at) if b.startswith('<ul class="attention">'))
    assert needing > 20 and attention.count("timeline?run=") == 20  # the newest, a pointer
    assert f"The newest 20 of {needing}" in texts(at)
    at.button(key="runs_next").click().run()
    second = [r["run_id"] for r in listed_runs(at)]
    assert len(second) == 10 and not set(first) & set(second)
    assert "Runs 51–60 of 60 (page 2 of 2)" in texts(at)
    assert at.button(key="runs_next").disabled and not at.button(key="runs_prev").disabled
    at.text_input(key="runs_text").set_value(first[0]).run()  # a new filter: page 1 again
    assert [r["run_id"] for r in listed_runs(at)] == [first[0]]
    assert not any("Runs 1–" in t for t in texts(at).splitlines())


def test_hints_show_their_code_spans_and_nothing_else_is_syntax() -> None:
    from debugger.pages_data.markup import md_with_code

    assert md_with_code("add a `[prune]` rule") == "add a `[prune]` rule"
    # outside the spans, every special character is a reference, as in md_text
    shown = md_with_code("`x` then [y](http://e) :red[z]")
    assert shown.startswith("`x` then &#91;y&#93;") and ":red[" not in shown
    assert "`" not in md_with_code("an odd ` backtick")  # no span, all text


def test_steps_read_as_a_span_or_one_step() -> None:
    """A LangGraph input checkpoint is step -1: ``-1–-1`` read as a typo."""
    line = run_list.runs_html([_run(first_step=-1, last_step=4)], "timeline")
    assert ">-1\u20134</td>" in line
    line = run_list.runs_html([_run(first_step=-1, last_step=-1, checkpoint_count=1)], "timeline")
    assert 'num">-1</td>' in line
    assert _run(first_step=-1, last_step=-1, checkpoint_count=1).steps_text() == "-1 (1 checkpoint)"
    assert _run().steps_text("-") == "0-3 (4 checkpoints)"
