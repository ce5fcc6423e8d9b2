"""``stepscope demo``: a fresh store with every sample run, never over a real store."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from debugger.cli import main
from debugger.store import Store
from tests.fixtures.sample import SAMPLE_RUN_IDS


def test_demo_builds_a_fresh_store_in_the_working_directory(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["demo", "--no-app"])
    assert result.exit_code == 0, result.output
    assert "13 runs" in result.output
    store_path = tmp_path / "stepscope-demo.duckdb"  # conftest chdirs into tmp_path
    with Store.open(store_path, read_only=True) as store:
        assert sorted(store.runs()["run_id"]) == sorted(SAMPLE_RUN_IDS)
        assert len(store.sources()) == 1
    again = runner.invoke(main, ["demo", "--no-app", "--json"])
    assert again.exit_code == 0, again.output
    doc = json.loads(again.output)
    assert doc["runs"] == 13
    assert doc["statuses"]["parked"] == 1 and doc["statuses"]["crashed"] == 2
    with Store.open(store_path, read_only=True) as store:
        assert len(store.sources()) == 1  # fresh, not re-imported on top
    assert not (tmp_path / "stepscope.duckdb").exists()


def test_demo_refuses_to_replace_another_store(tmp_path: Path) -> None:
    other = tmp_path / "mine.duckdb"
    other.write_bytes(b"not a demo store")
    result = CliRunner().invoke(main, ["demo", "--no-app", "--store", str(other)])
    assert result.exit_code == 2
    assert "is not a demo store" in result.output
    assert other.read_bytes() == b"not a demo store"
