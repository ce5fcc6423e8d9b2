"""``--run``/``--since`` on Parquet: skip what the footers and partitions rule out, then
filter the batches that are read.

A Parquet dataset has no query engine in front of it, so the selection is done the way a
dataset scanner pushes a filter down: a file whose hive partition value (``run_id=...``)
cannot match is not opened, a row group whose min/max statistics of the run column rule
out every selected run is not read, and the rows of the groups that are read are filtered
in Arrow. ``--since`` first reads only the run and time columns of the checkpoints (row
groups whose newest time is older are skipped) to find the runs active since then.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from datetime import UTC
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from debugger.store.validate import as_timestamp
from loaders.filter import RunFilter, Selection, has_wildcard, like_pattern, literal_prefix


class _Part(Protocol):
    """A file of a dataset (``loaders.parquet.ParquetFilePart``)."""

    @property
    def path(self) -> str: ...

    @property
    def partition(self) -> dict[str, str | None]: ...


def _stats(meta: Any, group: int, column: str) -> tuple[Any, Any] | None:
    """(min, max) of a column in a row group, when the footer has them."""
    rg = meta.row_group(group)
    for j in range(rg.num_columns):
        col = rg.column(j)
        if col.path_in_schema == column:
            st = col.statistics
            if st is not None and st.has_min_max:
                return st.min, st.max
            return None
    return None


class RunTest:
    """Whether files, row groups and rows can hold a selected run."""

    def __init__(self, flt: RunFilter, active: set[str] | None) -> None:
        self.filter = flt
        self.active = sorted(active) if active is not None else None
        self.exact = [p for p in flt.runs if not has_wildcard(p)]
        self.globs = [p for p in flt.runs if has_wildcard(p)]

    def run(self, run: str | None) -> bool:
        """One run id (a partition value)."""
        if run is None:
            return False
        if self.active is not None and not self._in_active(run):
            return False
        return self.filter.matches(run)

    def _in_active(self, run: str) -> bool:
        assert self.active is not None
        i = bisect.bisect_left(self.active, run)
        return i < len(self.active) and self.active[i] == run

    def span(self, low: Any, high: Any) -> bool:
        """Whether a row group with run ids in [low, high] can hold a selected run."""
        if not isinstance(low, str) or not isinstance(high, str):
            return True
        if self.active is not None:
            i = bisect.bisect_left(self.active, low)
            if i == len(self.active) or self.active[i] > high:
                return False
        if not self.filter.runs:
            return True
        for p in self.filter.runs:
            prefix = literal_prefix(p)
            if low[: len(prefix)] <= prefix <= high[: len(prefix)]:
                return True
        return False

    def mask(self, runs: pa.Array) -> pa.Array:
        """Which rows of a batch (its run column) are selected."""
        keep = pc.is_valid(runs)
        if self.filter.runs:
            hit = pc.is_in(runs, value_set=pa.array(self.exact, type=pa.string()))
            for g in self.globs:
                hit = pc.or_(hit, pc.match_like(runs, like_pattern(g)))
            keep = pc.and_(keep, hit)
        if self.active is not None:
            keep = pc.and_(keep, pc.is_in(runs, value_set=pa.array(self.active, pa.string())))
        return pc.fill_null(keep, False)


def groups(meta: Any, part: _Part, sel: Selection, test: RunTest) -> list[int]:
    """The row groups of a file that may hold a selected run (none when its partition
    rules it out)."""
    if sel.run_column in part.partition:
        return list(range(meta.num_row_groups)) if test.run(part.partition[sel.run_column]) else []
    out = []
    for i in range(meta.num_row_groups):
        st = _stats(meta, i, sel.run_column)
        if st is None or test.span(*st):
            out.append(i)
    return out


def selected(
    batch: pa.RecordBatch, keys: pa.Array, sel: Selection, test: RunTest
) -> tuple[pa.RecordBatch, pa.Array]:
    """The selected rows of a batch and their keys."""
    if sel.run_column in batch.schema.names:
        runs = batch.column(sel.run_column)
        if not pa.types.is_string(runs.type):
            runs = runs.cast(pa.string())
        keep = test.mask(runs)
        return batch.filter(keep), keys.filter(keep)
    return batch, keys


def active_runs(files: Sequence[_Part], sel: Selection, schema: pa.Schema) -> set[str] | None:
    """The runs with a checkpoint at or after ``since`` (None without ``since``).

    Reads two columns, skipping row groups whose newest time is older; text times are read
    as the store reads them (ISO, UTC when there is no offset) by DuckDB.
    """
    since = sel.filter.since
    run_col, time_col = sel.time_run_column, sel.time_column
    if since is None or run_col is None or time_col is None:
        return None
    time_type = schema.field(time_col).type
    found: set[str] = set()
    for part in files:
        for batch in _two_columns(part, run_col, time_col, time_type, since):
            found.update(_active_in(batch, since))
    return found


def _two_columns(part: _Part, run_col: str, time_col: str, time_type: pa.DataType,
                 since: Any) -> Iterator[pa.Table]:  # fmt: skip
    pf = pq.ParquetFile(part.path)
    meta = pf.metadata
    present = set(pf.schema_arrow.names)
    if run_col not in present and run_col not in part.partition:
        return
    if time_col not in present:
        return
    keep = []
    for i in range(meta.num_row_groups):
        st = _stats(meta, i, time_col) if pa.types.is_timestamp(time_type) else None
        if st is None or _newest_after(st[1], since):
            keep.append(i)
    if not keep:
        return
    cols = [c for c in (run_col, time_col) if c in present]
    table = pf.read_row_groups(keep, columns=cols)
    if run_col not in present:
        value = part.partition[run_col]
        table = table.append_column(run_col, pa.array([value] * table.num_rows, pa.string()))
    yield table.select([run_col, time_col])


def _newest_after(newest: Any, since: Any) -> bool:
    try:
        if newest.tzinfo is None:
            return bool(newest >= since.astimezone(UTC).replace(tzinfo=None))
        return bool(newest >= since)
    except (AttributeError, TypeError):
        return True


def _active_in(table: pa.Table, since: Any) -> set[str]:
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("_t", table)
        cols = table.schema.names
        run, when = f'"{cols[0]}"', f'"{cols[1]}"'
        # read as the store reads the time (debugger.store.validate): text, a timestamp,
        # or an epoch number; in UTC
        desc = con.execute("SELECT * FROM _t LIMIT 0").description or []
        expr = as_timestamp({when: str(desc[1][1]).upper()}, when)
        naive = since.astimezone(UTC).replace(tzinfo=None)
        rows = con.execute(
            f"SELECT DISTINCT CAST({run} AS VARCHAR) FROM _t WHERE {expr} >= ?", [naive]
        ).fetchall()
    finally:
        con.close()
    return {r[0] for r in rows if r[0] is not None}
