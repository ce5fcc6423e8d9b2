"""The native shape: table ``checkpoints`` with the six-item columns or ``(run_id, step_index,
payload)``; optional ``effects`` and ``tool_calls`` with the canonical columns.

See docs/native-shape.md. Extra columns are ignored; missing optional ones are NULL (the audit
reports checkpoints that lack contract items).
"""

from __future__ import annotations

from collections.abc import Iterator

from debugger.contract import TABLE_COLUMNS
from debugger.errors import FlavourError
from loaders.base import Flavour, SourceReader, TablePlan
from loaders.filter import Selection
from loaders.sqlmap import Source, json_guard, projection

COLUMN_FORM = {"run_id", "step_index", "working_state"}
PAYLOAD_FORM = {"run_id", "step_index", "payload"}


def _columns(reader: SourceReader, table: str) -> set[str]:
    return set(reader.columns(table)) if table in reader.tables() else set()


class NativeFlavour(Flavour[SourceReader]):
    """Stepscope's own shape (what ``debugger.runtime`` writes)."""

    name = "native"
    filters = True

    @classmethod
    def detect(cls, reader: SourceReader) -> bool:
        cols = _columns(reader, "checkpoints")
        return COLUMN_FORM.issubset(cols) or PAYLOAD_FORM.issubset(cols)

    def check(self, reader: SourceReader) -> None:
        """The columns ``--run``/``--since`` need are there (no rows are read)."""
        if self.detect(reader):
            self._where(reader)

    def plans(self, reader: SourceReader) -> Iterator[TablePlan]:
        if not self.detect(reader):
            raise FlavourError(
                "table 'checkpoints' needs columns run_id, step_index and working_state "
                "(or payload)",
                "add those columns, or pass --mapping FILE (see `stepscope import --help`)",
            )
        yield self._checkpoints(reader)
        for table in ("effects", "tool_calls"):
            if table in reader.tables():
                yield self._plain(reader, table)

    def _checkpoints(self, reader: SourceReader) -> TablePlan:
        schema = reader.schema("checkpoints")
        names = set(schema.names)
        if COLUMN_FORM.issubset(names):
            sources = {c: Source(column=c) for c in TABLE_COLUMNS["checkpoints"] if c in names}
            reason = "CAST(NULL AS VARCHAR)"
        else:
            sources = {
                c: (Source(column=c) if c in names else Source(column="payload", path=f"$.{c}"))
                for c in TABLE_COLUMNS["checkpoints"]
            }
            reason = json_guard([("payload", schema.field("payload").type)])
        return TablePlan(
            table="checkpoints",
            batches=reader.scan(
                "checkpoints", batch_rows=self.batch_rows, where=self._where(reader)
            ),
            select_sql=projection("checkpoints", sources, schema, reason),
            # rows whose source gives no parent are chained in time order
            derive_parents="parent_id" not in names,
            total=None if self.rows else reader.count("checkpoints"),
        )

    def _plain(self, reader: SourceReader, table: str) -> TablePlan:
        schema = reader.schema(table)
        sources = {c: Source(column=c) for c in TABLE_COLUMNS[table] if c in schema.names}
        return TablePlan(
            table=table,
            batches=reader.scan(table, batch_rows=self.batch_rows, where=self._where(reader)),
            select_sql=projection(table, sources, schema, "CAST(NULL AS VARCHAR)"),
            total=None if self.rows else reader.count(table),
        )

    def _where(self, reader: SourceReader) -> Selection | None:
        """``--run``/``--since`` on a native table: ``run_id``, and the checkpoints'
        ``created_at`` column."""
        has_time = "created_at" in _columns(reader, "checkpoints")
        time = ("checkpoints", "run_id", "created_at" if has_time else None)
        return self.selection("run_id", time)
