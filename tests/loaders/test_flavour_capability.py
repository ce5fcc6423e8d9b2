"""A flavour declares the reader capability it needs; a source without it is refused early."""

from __future__ import annotations

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
