"""A Parquet column of any type a writer gives it is read the same by DuckDB (the table
read whole) and by pyarrow (in batches): the same checkpoints, ids, times, documents and
quarantine reasons either way.

Each case puts one canonical column in another Arrow type (as pandas, polars, DuckDB or
Spark write them: floats for integers with gaps, dictionaries for categories, nanosecond
and zoned times, structs for documents, text where a number belongs). A difference between
the two ways names a checkpoint differently, so a re-import the other way would add it again
(the INT96 times did: tests/loaders/test_loaders_sources.py).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from debugger.store import Store
from debugger.store.session import ImportSession
from loaders import ImportOptions, import_source

N = 6
T0 = dt.datetime(2026, 11, 1, 10, 0, 0, 123456)
TIMES = [T0 + dt.timedelta(seconds=i) for i in range(N)]
NANOS = [1_793_527_200_123_456_789 + i for i in range(N)]  # 2026-11-01 10:00:00.123456789
KEY_TO_INT = pa.map_(pa.string(), pa.int64())


def _texts(pattern: str) -> pa.Array:
    return pa.array([pattern.format(i) for i in range(N)])


CASES: dict[str, tuple[str, pa.Array]] = {
    "time_ms": ("created_at", pa.array(TIMES, pa.timestamp("ms"))),
    "time_s": ("created_at", pa.array(TIMES, pa.timestamp("s"))),
    "time_ns_zoned": ("created_at", pa.array(NANOS, pa.timestamp("ns", "Europe/Paris"))),
    "time_us_zoned": ("created_at", pa.array(TIMES, pa.timestamp("us", "America/New_York"))),
    "date": ("created_at", pa.array([dt.date(2026, 11, 1 + i) for i in range(N)], pa.date32())),
    "time_text_ns": ("created_at", _texts("2026-11-01T10:00:0{}.123456789Z")),
    "time_text_offset": ("created_at", _texts("2026-11-01 10:00:0{}+02:00")),
    "time_epoch_ms": ("created_at", pa.array([1_793_527_200_123 + 1000 * i for i in range(N)])),
    "time_epoch_seconds": ("created_at", pa.array([1_793_527_200.5 + i for i in range(N)])),
    "time_epoch_ns": ("created_at", pa.array(NANOS)),
    "time_epoch_decimal": (
        "created_at",
        pa.array([decimal.Decimal(f"1793527200.{i}") for i in range(N)], pa.decimal128(12, 1)),
    ),
    "step_int32": ("step_index", pa.array(range(N), pa.int32())),
    "step_uint64": ("step_index", pa.array(range(N), pa.uint64())),
    "step_float": ("step_index", pa.array([0.0, 1.0, 2.0, 3.5, 4.0, 5.0])),
    "step_text": ("step_index", pa.array(["0", "1", "two", "3", "4", "5"])),
    "step_decimal": ("step_index", pa.array(map(decimal.Decimal, range(N)), pa.decimal128(10, 2))),
    "run_integer": ("run_id", pa.array([7] * N)),
    "run_dictionary": ("run_id", pa.array(["r"] * N).dictionary_encode()),
    "state_struct": ("working_state", pa.array([{"a": i, "b": [1, 2]} for i in range(N)])),
    "state_map": ("working_state", pa.array([[("k", i)] for i in range(N)], KEY_TO_INT)),
    "state_list": ("working_state", pa.array([[i, i + 1] for i in range(N)])),
    "state_bad": (
        "working_state",
        pa.array(['{"a": 1}', "not json", None, "[1]", '{"a": NaN}', '{"x": "\\u00e9"}']),
    ),
    "state_deep": ("working_state", pa.array(['{"a": 1}'] * (N - 1) + ["[" * 300 + "]" * 300])),
    "metadata_struct": ("metadata", pa.array([{"agent": "a", "n": i} for i in range(N)])),
    "pending_list": ("pending_effects", pa.array([[{"tool": "t", "key": k}] for k in "abcdef"])),
    "tokens_float": ("tokens_spent", pa.array([1.0, 2.5, None, 4.0, 5.0, 6.0])),
    "tokens_text": ("tokens_spent", pa.array(["1", "x", None, "4", "5.0", "6"])),
    "schema_version_bool": ("schema_version", pa.array([True] * N)),
    "id_integer": ("checkpoint_id", pa.array(range(100, 100 + N))),
    "parent_given": ("parent_id", pa.array([None, *(str(100 + i) for i in range(N - 1))])),
    "model_dictionary": ("model_version", pa.array(["m1", "m2"] * (N // 2)).dictionary_encode()),
}  # fmt: skip


NESTED_STATES = frozenset({"state_struct", "state_map", "state_list"})
"""States in a nested column: their sizes are not one chunk's, so DuckDB never reads such a
table whole (``ParquetReader.whole_table``); both ways are batches."""


def _table(column: str, values: pa.Array) -> pa.Table:
    columns = {
        "run_id": pa.array(["r"] * N),
        "step_index": pa.array(range(N)),
        "created_at": pa.array(TIMES, pa.timestamp("us")),
        "working_state": pa.array([json.dumps({"s": i}) for i in range(N)]),
    }
    columns[column] = values
    return pa.table(columns)


def _stored(path: Path, source: Path, batch_rows: int) -> tuple[Any, ...]:
    with Store.open(path) as store:
        report = import_source(store, str(source), ImportOptions(batch_rows=batch_rows))
        rows = store.sql(
            "SELECT run_id, checkpoint_id, parent_id, step_index, created_at, working_state, "
            "state_hash, tokens_spent, schema_version, metadata, pending_effects, model_version "
            "FROM checkpoints ORDER BY run_id, step_index, checkpoint_id"
        )
        quarantined = store.sql("SELECT source_key, reason FROM quarantine ORDER BY 1, 2")
    return report.total, rows, quarantined


@pytest.mark.parametrize("case", CASES)
def test_a_column_of_any_type_is_read_the_same_whole_and_in_batches(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pq.write_table(_table(*CASES[case]), tmp_path / "c.parquet")
    passes: list[int] = []
    add_whole = ImportSession.add_whole

    def counted(self: ImportSession, *args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        return add_whole(self, *args, **kwargs)

    monkeypatch.setattr(ImportSession, "add_whole", counted)
    whole = _stored(tmp_path / "whole.duckdb", tmp_path / "c.parquet", 16_384)
    whole_read = [] if case in NESTED_STATES else [1]
    assert passes == whole_read  # DuckDB read the table itself
    batches = _stored(tmp_path / "batches.duckdb", tmp_path / "c.parquet", 1_024)  # never whole
    assert passes == whole_read
    assert whole == batches
    total = whole[0]
    assert total.read == total.imported + total.quarantined == N
