"""``stepscope import`` on LangGraph databases, through the CLI, as a user would run it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.native import stepscope, stepscope_json
from tests.langgraph.conftest import Written
from tests.langgraph.graphs import EXPECTED_STATUS

pytestmark = pytest.mark.postgres


def test_cli_import_runs_and_show(written: Written, tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    report = stepscope_json("import", written.source, "--store", store)
    assert report["flavour"] == "langgraph"
    assert report["kind"] == written.saver_name
    runs = stepscope_json("runs", "--store", store)
    rows = runs if isinstance(runs, list) else runs["runs"]
    statuses = {r["run_id"]: r["status"] for r in rows}
    assert {k: statuses[k] for k in EXPECTED_STATUS} == EXPECTED_STATUS
    shown = stepscope("show", "rich", "--step", "3", "--store", store)
    assert shown.exit_code == 0, shown.stderr
    assert "pydantic:tests.langgraph.graphs.Ticket" in shown.stdout


def test_cli_flavor_langgraph_on_a_native_file_is_one_line(tmp_path: Path) -> None:
    from tests.fixtures.native import native_rows, write_native_sqlite

    path = write_native_sqlite(tmp_path / "native.sqlite", native_rows())
    result = stepscope("import", str(path), "--flavor", "langgraph", "--store",
                       str(tmp_path / "s.duckdb"))  # fmt: skip
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "langgraph flavour" in result.stderr
