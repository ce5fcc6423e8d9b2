"""docs/app.md's Python example runs on the sample store and prints what the doc says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "app.md"


def test_the_python_example_prints_what_the_doc_shows(sample_store: Path) -> None:
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    code = block.group(1)
    expected = [line.strip()[2:] for line in code.splitlines() if line.strip().startswith("# ")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"STORE": str(sample_store)})
    assert out.getvalue().splitlines() == expected


def test_every_page_and_url_parameter_is_documented() -> None:
    from debugger.ui import diff, imports, runs, sql, timeline

    text = DOC.read_text()
    for page in (runs, timeline, diff, imports, sql):
        assert f"## {page.TITLE}" in text
    for param in ("?run=", "&step=", "&checkpoint=", "?a=", "&b="):
        assert param in text
