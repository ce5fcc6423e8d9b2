"""``stepscope import`` as its own process ends without the interpreter's teardown, and
loses nothing by it: all its output, the exit handlers, a store another process can read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from debugger.store import Store
from tests.fixtures.native import native_rows, write_native_sqlite

CHILD = """
import atexit, sys
mark = sys.argv[-1]
atexit.register(lambda: open(mark, "w").write("handlers ran"))
sys.argv = ["stepscope", "import", sys.argv[1], "--store", sys.argv[2]]
from debugger.cli import main
main()
"""


def test_an_import_process_ends_with_its_output_its_handlers_and_its_store(
    tmp_path: Path,
) -> None:
    source = write_native_sqlite(tmp_path / "n.sqlite", native_rows())
    store, mark = tmp_path / "s.duckdb", tmp_path / "mark"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(source), str(store), str(mark)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()  # a pipe: flushed before the process ended
    assert lines[0] == f"sqlite (native) {source}"
    assert lines[-1].startswith("read 15 rows = 15 imported")
    assert mark.read_text() == "handlers ran"
    with Store.open(store, read_only=True) as s:
        assert len(s.runs()) == 3
    again = subprocess.run(
        [sys.executable, "-m", "debugger.cli", "import", str(source), "--store", str(store)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "15 already present" in again.stdout.splitlines()[-1]
