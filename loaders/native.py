"""The native shape: table ``checkpoints`` with the six-item columns or ``(run_id, step_index,
payload)``; optional ``effects`` and ``tool_calls`` with the canonical columns.

See docs/native-shape.md. Extra columns are ignored; missing optional ones are NULL (the audit
reports checkpoints that lack contract items). The checkpoints' columns may go by the common
names of ``ALIASES`` (``step``, ``state``, ...): what a first checkpointing sketch writes
imports without a mapping file.
"""

from __future__ import annotations

from collections.abc import Iterator

from debugger.contract import TABLE_COLUMNS
from debugger.errors import FlavourError
from debugger.store.state_parts import SPLIT_MIN_BYTES
from loaders.base import BATCH_ROWS, Flavour, SourceReader, TablePlan, WholeTable
from loaders.filter import Selection
from loaders.sqlmap import Source, json_guard, projection

COLUMN_FORM = ("run_id", "step_index", "working_state")
PAYLOAD_FORM = ("run_id", "step_index", "payload")

ALIASES: dict[str, tuple[str, ...]] = {
    "run_id": ("run", "thread_id", "session_id"),
    "checkpoint_id": ("id",),
    "parent_id": ("parent", "parent_checkpoint_id"),
    "step_index": ("step", "step_number", "step_no"),
    "schema_version": ("version",),
    "created_at": ("ts", "timestamp"),
    "working_state": ("state",),
    "tokens_spent": ("tokens",),
    "wall_clock_ms": ("elapsed_ms",),
    "pending_effects": ("pending",),
    "model_version": ("model",),
    "metadata": ("meta",),
    "payload": ("record",),
}
"""Other names a column of ``checkpoints`` may have, by canonical name (docs/native-shape.md).

The canonical name wins when both are present; two aliases of one name and no canonical
one is ambiguous, and the import says so rather than guess."""


def _columns(reader: SourceReader, table: str) -> set[str]:
    return set(reader.columns(table)) if table in reader.tables() else set()


def resolve(columns: set[str]) -> dict[str, str]:
    """Each canonical name found in ``columns`` (itself or an alias) -> the column holding it.

    Raises:
        FlavourError: two aliases of one canonical name, and not the name itself.
    """
    found = {}
    for name in (*TABLE_COLUMNS["checkpoints"], "payload"):
        if name in columns:
            found[name] = name
            continue
        present = [a for a in ALIASES.get(name, ()) if a in columns]
        if len(present) > 1:
            raise FlavourError(
                f"table 'checkpoints' has columns {' and '.join(present)}: both may be {name}",
                f"name the one that is {name} `{name}`, or pass --mapping FILE",
            )
        if present:
            found[name] = present[0]
    return found


def _form(columns: set[str]) -> tuple[str, ...] | None:
    """The form ``columns`` are in (by canonical name), or None."""
    try:
        names = resolve(columns)
    except FlavourError:
        return COLUMN_FORM  # detected; plans() reports the ambiguity
    for form in (COLUMN_FORM, PAYLOAD_FORM):
        if all(c in names for c in form):
            return form
    return None


class NativeFlavour(Flavour[SourceReader]):
    """Stepscope's own shape (what ``debugger.runtime`` writes)."""

    name = "native"
    filters = True

    @classmethod
    def detect(cls, reader: SourceReader) -> bool:
        return _form(_columns(reader, "checkpoints")) is not None

    def avoids_pa_array(self, reader: SourceReader) -> bool:
        return reader.arrow_native

    def check(self, reader: SourceReader) -> None:
        """No two aliases name one column, and the columns ``--run``/``--since`` need are
        there (no rows are read)."""
        resolve(_columns(reader, "checkpoints"))
        if self.detect(reader):
            self._where(reader, resolve(_columns(reader, "checkpoints")).get("run_id"))

    def plans(self, reader: SourceReader) -> Iterator[TablePlan]:
        if not self.detect(reader):
            raise FlavourError(
                "table 'checkpoints' needs columns run_id, step_index and working_state "
                "(or payload), or an alias of each",
                "add those columns, or pass --mapping FILE (see `stepscope import --help`)",
            )
        yield self._checkpoints(reader)
        for table in ("effects", "tool_calls"):
            if table in reader.tables():
                yield self._plain(reader, table)

    def _checkpoints(self, reader: SourceReader) -> TablePlan:
        schema = reader.schema("checkpoints")
        names = resolve(set(schema.names))
        if _form(set(schema.names)) == COLUMN_FORM:
            sources = {
                c: Source(column=names[c]) for c in TABLE_COLUMNS["checkpoints"] if c in names
            }
            reason = "CAST(NULL AS VARCHAR)"
        else:
            payload = names["payload"]
            sources = {
                c: (
                    Source(column=names[c]) if c in names else Source(column=payload, path=f"$.{c}")
                )
                for c in TABLE_COLUMNS["checkpoints"]
            }
            reason = json_guard([(payload, schema.field(payload).type)])
        where = self._where(reader, names.get("run_id"))
        return TablePlan(
            table="checkpoints",
            batches=reader.scan("checkpoints", batch_rows=self.batch_rows, where=where),
            select_sql=projection("checkpoints", sources, schema, reason),
            # rows whose source gives no parent are chained in time order
            derive_parents="parent_id" not in names,
            total=None if self.rows else reader.count("checkpoints"),
            whole=self._whole(reader, names, where),
            gather=self.batch_rows >= BATCH_ROWS,
        )

    def _whole(
        self, reader: SourceReader, names: dict[str, str], where: Selection | None
    ) -> WholeTable | None:
        """The checkpoints as one table DuckDB reads, where the reader can give it: not for
        a selection (applied batch by batch), nor where states may be split (they are cut
        a batch at a time, in Python: ``debugger.store.state_write.cut``), nor when smaller
        batches than the default were asked for (a bound on memory)."""
        state = names.get("working_state") or names.get("payload")
        if where is not None or state is None or self.batch_rows < BATCH_ROWS:
            return None
        return reader.whole_table("checkpoints", (state, SPLIT_MIN_BYTES))

    def _plain(self, reader: SourceReader, table: str) -> TablePlan:
        schema = reader.schema(table)
        sources = {c: Source(column=c) for c in TABLE_COLUMNS[table] if c in schema.names}
        return TablePlan(
            table=table,
            batches=reader.scan(
                table, batch_rows=self.batch_rows, where=self._where(reader, "run_id")
            ),
            select_sql=projection(table, sources, schema, "CAST(NULL AS VARCHAR)"),
            total=None if self.rows else reader.count(table),
        )

    def _where(self, reader: SourceReader, run_column: str | None) -> Selection | None:
        """``--run``/``--since`` on a native table: its run column (``run_id``, or the
        checkpoints' alias of it; None in the payload form), and the checkpoints' time
        column (``created_at`` or its alias)."""
        names = resolve(_columns(reader, "checkpoints"))
        time = ("checkpoints", names.get("run_id"), names.get("created_at"))
        return self.selection(run_column, time)
