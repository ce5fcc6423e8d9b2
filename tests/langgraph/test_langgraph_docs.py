"""docs/langgraph.md's example runs and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from tests.conftest import REPO


def test_langgraph_doc_example_runs(tmp_path: Path) -> None:
    text = (REPO / "docs" / "langgraph.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/langgraph.md", "exec"), {"__name__": "doc_example"})
    claimed = re.search(r"This prints `(.*?)`", text)
    assert claimed is not None
    assert out.getvalue().strip() == claimed.group(1)
    assert (tmp_path / "agent.sqlite").exists()  # conftest chdirs into tmp_path


def test_every_quarantine_reason_is_documented() -> None:
    text = (REPO / "docs" / "langgraph.md").read_text(encoding="utf-8")
    source = (REPO / "loaders" / "langgraph" / "decode.py").read_text(encoding="utf-8")
    stems = re.findall(r'DecodeError\(\s*f?"([^"{]+)', source)
    assert len(stems) >= 6
    missing = [s.strip() for s in stems if s.strip().rstrip(":") not in text]
    assert not missing, f"docs/langgraph.md lacks: {missing}"
