"""docs/notebook.ipynb runs from top to bottom on the sample histories, without an error cell."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "docs" / "notebook.ipynb"
SAMPLE = REPO / "sample_checkpoints" / "data" / "native.sqlite"


@pytest.mark.slow
@pytest.mark.skipif(not SAMPLE.exists(), reason="sample_checkpoints/data/native.sqlite not built")
def test_notebook_executes_without_error_cells(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        nb, timeout=240, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    client.execute()
    errors = [
        f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []
    html = "".join(
        out["data"]["text/html"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if "text/html" in out.get("data", {})
    )
    # The crashed run's card, its pending refund, and the diffs rendered as HTML views.
    assert "Run crash-at-step-7" in html
    assert "refund-T-1077-ORD-1077" in html
    assert "clean-completed:6 -&gt; clean-completed:7" in html
    assert "crash-at-step-7~replay-1:7" in html
