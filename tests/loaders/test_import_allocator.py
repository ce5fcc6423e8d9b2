"""An import takes Arrow's buffers from the system allocator, and leaves the process's
choice of pool as it found it (loaders.importer._system_allocator)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.fixtures.native import native_rows, write_native_parquet


def _pools_during(tmp_path: Path) -> list[str]:
    src = write_native_parquet(tmp_path / "native.parquet", native_rows())
    seen: list[str] = []

    def progress(table: str, done: int, total: int | None) -> None:
        seen.append(pa.default_memory_pool().backend_name)

    with Store.open(tmp_path / "s.duckdb", read_only=False) as store:
        report = import_source(store, str(src), ImportOptions(progress=progress))
    assert report.total.imported == 15
    return seen


def test_the_import_uses_the_system_pool_and_restores_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    before = pa.default_memory_pool().backend_name
    assert before != "system"  # pyarrow's own default (mimalloc or jemalloc) in this process
    assert set(_pools_during(tmp_path)) == {"system"}
    assert pa.default_memory_pool().backend_name == before


def test_a_pool_the_user_chose_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
    before = pa.default_memory_pool().backend_name
    assert set(_pools_during(tmp_path)) == {before}
    assert pa.default_memory_pool().backend_name == before
