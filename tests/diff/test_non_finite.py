"""NaN and Infinity, which Python's json writes and DuckDB stores, are shown as written:
in the CLI's show and diff, the notebook's HTML and the app's Timeline and Diff pages."""

from __future__ import annotations

import html
import math
import re
import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from debugger.diff import diff_refs
from debugger.json_text import dumps, loads, preview
from debugger.store import Store
from tests.fixtures.native import stepscope
from tests.ui.helpers import frames_text, html_bodies, open_app

STATES = (
    '{"a": NaN, "b": 1.0, "c": null, "d": Infinity, "e": [1, NaN]}',
    '{"a": NaN, "b": NaN, "c": NaN, "d": -Infinity, "e": [1, 2]}',
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    src = tmp_path / "nan.sqlite"
    with sqlite3.connect(src) as con:
        con.execute(
            "CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, working_state TEXT)"
        )
        con.executemany("INSERT INTO checkpoints VALUES ('r', ?, ?)", list(enumerate(STATES)))
    path = tmp_path / "s.duckdb"
    assert stepscope("import", src, "--store", path).exit_code == 0
    return path


def test_dumps_and_preview_keep_non_finite_numbers() -> None:
    value = {"a": math.nan, "b": math.inf, "c": -math.inf, "d": None, "e": "null"}
    assert dumps(value) == '{"a":NaN,"b":Infinity,"c":-Infinity,"d":null,"e":"null"}'
    assert preview([math.nan, 1.0]) == "[NaN,1.0]"
    assert dumps({"x": [math.inf]}, indent=True) == '{\n  "x": [\n    Infinity\n  ]\n}'
    assert math.isnan(loads(dumps({"a": math.nan}))["a"])
    assert dumps({"n": None, "k": 1}) == '{"n":null,"k":1}'  # the stdlib path, same text


def test_cli_show_and_diff_show_them_as_written(store: Path) -> None:
    shown = stepscope("show", "r", "--step", "0", "--store", store).stdout
    assert '"a": NaN' in shown and '"d": Infinity' in shown
    out = stepscope("diff", "r:0", "r:1", "--store", store).stdout
    rows = {line.split()[1]: line.split()[2:] for line in out.splitlines() if "root[" in line}
    assert rows["root['b']"] == ["1.0", "NaN"]
    assert rows["root['c']"] == ["null", "NaN"]
    assert rows["root['d']"] == ["Infinity", "-Infinity"]
    assert rows["root['e'][1]"] == ["NaN", "2"]
    assert "root['a']" not in rows  # NaN to NaN is no change


def test_notebook_views_show_them(store: Path) -> None:
    with Store.open(store, read_only=True) as s:
        html = s.checkpoint("r", step=0)._repr_html_()
        diff_html = diff_refs(s, "r:0", "r:1")._repr_html_()
    assert "&quot;a&quot;: NaN" in html and "Infinity" in html
    assert "NaN" in diff_html and "-Infinity" in diff_html and "null" in diff_html


def test_app_timeline_and_diff_pages_show_them(store: Path) -> None:
    at = open_app(store, "timeline", run="r", step="1")
    assert not at.exception  # (its errors are the audit's findings: no budgets recorded)
    assert "NaN" in frames_text(at) and "-Infinity" in frames_text(at)
    at.toggle(key="timeline_full_state").set_value(True).run()
    assert '"d":-Infinity' in at.json[0].proto.body
    at = open_app(store, "diff", a="r:0", b="r:1")
    assert not at.exception and not at.error
    table = frames_text(at)
    assert "NaN" in table and "Infinity" in table
    changed = [(left, right) for tag, left, right in _split_rows(at) if tag == "replace"]
    assert changed == [('  "b": 1.0,', '  "b": NaN,'), ('  "c": null,', '  "c": NaN,'),
                       ('  "d": Infinity,', '  "d": -Infinity,'), ("    NaN", "    2")]  # fmt: skip


def _split_rows(at: AppTest) -> list[tuple[str, str, str]]:
    """The Diff page's side-by-side rows: (how they differ, line of A, line of B), read back."""
    body = next(b for b in html_bodies(at) if "ss-split" in b)
    cells = r'<tr class="(\w+)"><td class="no">\d*</td><td class="l">(.*?)</td>'
    cells += r'<td class="no">\d*</td><td class="r">(.*?)</td></tr>'
    return [(tag, html.unescape(a), html.unescape(b)) for tag, a, b in re.findall(cells, body)]
