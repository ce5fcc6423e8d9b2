"""docs/runtime.md's example runs and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from tests.conftest import REPO


def test_runtime_doc_example_runs(tmp_path: Path) -> None:
    text = (REPO / "docs" / "runtime.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/runtime.md", "exec"), {"__name__": "doc_example"})
    claimed = re.search(r"This prints `(.*?)`", text)
    assert claimed is not None
    assert out.getvalue().strip() == claimed.group(1)
    assert (tmp_path / "reminders.sqlite").exists()  # conftest chdirs into tmp_path
