"""A flavour declares the reader capability it needs; a source without it is refused early."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from debugger.errors import SourceError
from loaders import ImportOptions
from loaders.base import SourceReader, SqlReader
from loaders.importer import check_source
from loaders.langgraph import LangGraphFlavour
from loaders.native import NativeFlavour
from loaders.parquet import ParquetReader
from loaders.postgres import PostgresReader
from loaders.sqlite import SqliteReader


def test_flavours_declare_what_they_read() -> None:
    assert LangGraphFlavour.requires is SqlReader
    assert NativeFlavour.requires is SourceReader
    assert issubclass(SqliteReader, SqlReader) and SqliteReader.dialect == "sqlite"
    assert issubclass(PostgresReader, SqlReader) and PostgresReader.dialect == "postgres"
    assert not issubclass(ParquetReader, SqlReader)


def test_langgraph_flavour_on_parquet_is_a_source_error_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.parquet"
    table = pa.table({"thread_id": ["t"], "checkpoint_ns": [""], "checkpoint_id": ["c"],
                      "parent_checkpoint_id": [None]})  # fmt: skip
    pq.write_table(table, path)
    with pytest.raises(SourceError) as err:
        check_source(str(path), ImportOptions(flavour="langgraph"))
    assert "langgraph flavour reads a SQL database" in err.value.message
    assert "parquet" in err.value.message
    assert "--flavor auto" in err.value.hint


def test_the_registry_knows_what_each_flavour_reads_without_importing_it(tmp_path: Path) -> None:
    from loaders.jsonfiles import JsonFilesReader
    from loaders.registry import FLAVOURS, may_read

    pq.write_table(pa.table({"run_id": ["r"]}), tmp_path / "t.parquet")
    sqlite3.connect(tmp_path / "t.sqlite").execute("CREATE TABLE t (a)").connection.close()
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "h.json").write_text("{}")
    readers = [
        ParquetReader(str(tmp_path / "t.parquet")),
        SqliteReader(tmp_path / "t.sqlite"),
        JsonFilesReader(tmp_path / "json"),
    ]
    for name in FLAVOURS:
        for reader in readers:
            assert may_read(name, reader) == FLAVOURS[name].fits(reader), (name, reader.kind)
    for reader in readers:
        reader.close()


def test_a_native_parquet_import_imports_no_other_flavour(tmp_path: Path) -> None:
    """Nor another reader: the SQLite and JSON files' readers are imported for their own
    sources only (~13 ms of a small import)."""
    pq.write_table(pa.table({"run_id": ["r"], "step_index": [0], "working_state": ["{}"]}),
                   tmp_path / "t.parquet")  # fmt: skip
    code = (
        "import sys\n"
        "from loaders.importer import check_source\n"
        f"print(check_source({str(tmp_path / 't.parquet')!r}))\n"
        "print(sorted(m for m in sys.modules if m.endswith('.flavour')))\n"
        "print(sorted(m for m in ('loaders.sqlite', 'loaders.jsonfiles') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["native", "[]", "[]"]


def test_a_sql_flavour_is_passed_over_only_when_its_detect_would_be_false(tmp_path: Path) -> None:
    import inspect

    from loaders.registry import _SQL_SHAPE, FLAVOURS, may_detect
    from tests.fixtures.native import native_rows, write_native_sqlite
    from tests.fixtures.runtime_sources import RUNTIME_SOURCES

    for name, where in _SQL_SHAPE.items():  # each detect asks the function the registry asks
        assert where.rpartition(":")[2] in inspect.getsource(FLAVOURS[name].detect), name
    paths = [write_native_sqlite(tmp_path / "native.sqlite", native_rows())]
    paths += [
        source.write(tmp_path / kind)
        for kind, source in RUNTIME_SOURCES.items()
        if source.flavour in ("adk", "crewai") or kind == "openai-agents-session"
    ]
    detected = set()
    for path in paths:
        with SqliteReader(path) as reader:
            for name in _SQL_SHAPE:
                if FLAVOURS[name].detect(reader):
                    assert may_detect(name, reader), (name, path.name)
                    detected.add(name)
                if path.name == "native.sqlite":
                    assert not may_detect(name, reader), name
    assert detected == {"adk", "openai-agents", "crewai"}
