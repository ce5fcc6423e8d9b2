"""What a LangGraph import changes in the process while it runs, and puts back after it:
DuckDB leaves the decoding thread a core, and the GIL is handed over more often."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from debugger.store import Store
from loaders import ImportOptions, import_source
from loaders.importer import SWITCH_INTERVAL
from tests.langgraph.conftest import Written

pytestmark = pytest.mark.postgres


def test_import_leaves_the_reader_a_core_and_puts_the_settings_back(
    written: Written, tmp_path: Path
) -> None:
    cores = os.cpu_count() or 1
    seen: list[tuple[int, float]] = []
    with Store.open(tmp_path / "s.duckdb") as store:

        def threads() -> int:
            return int(store._con.execute("SELECT current_setting('threads')").fetchall()[0][0])

        before = (threads(), sys.getswitchinterval())

        def progress(table: str, done: int, total: int | None) -> None:
            seen.append((threads(), sys.getswitchinterval()))

        report = import_source(store, written.source, ImportOptions(progress=progress))
        after = (threads(), sys.getswitchinterval())
    assert report.total.imported > 0 and seen
    assert after == before
    during = {(max(1, min(before[0], cores - 1)), min(before[1], SWITCH_INTERVAL))}
    assert set(seen) == during
