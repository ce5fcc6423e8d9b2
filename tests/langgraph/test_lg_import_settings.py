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


def test_a_message_heavy_import_never_imports_pandas(tmp_path: Path) -> None:
    """``pa.array`` imports pandas (~0.35 s of the GIL while the walk starts): the walk's
    batches and the store's split states are built from buffers, so a LangGraph import
    whose states are cut into shared parts runs without it."""
    import subprocess

    from tests.langgraph import react_heavy
    from tests.langgraph.patterns_model import sqlite_saver

    src = tmp_path / "heavy.sqlite"
    with sqlite_saver(src) as saver:
        react_heavy.build(saver, threads=2, turns=8)
    code = (
        "import sys\nfrom debugger.store import Store\nfrom loaders import import_source\n"
        f"with Store.open({str(tmp_path / 's.duckdb')!r}) as s:\n"
        f"    n = import_source(s, {str(src)!r}).total.imported\n"
        "    split = s._con.execute('SELECT count(*) FROM split_states').fetchall()[0][0]\n"
        "print(n > 0, split > 0, 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]
