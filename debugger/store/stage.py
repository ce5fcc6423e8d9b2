"""Staging a batch: its typed values, its identities and its reasons, in one pass.

:func:`stage_sql` gives ``_v``, every row of ``_staged`` once with its typed canonical
values and ``_why`` (the first failing check of :mod:`debugger.store.validate`, or NULL).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from debugger.contract import GIVEN_STATE_HASH
from debugger.store import state_hash
from debugger.store.validate import (
    ColumnTypes,
    as_int,
    as_text,
    as_timestamp,
    reasons,
    staged_types,
)


def _doc(col: str, default: str | None = None) -> str:
    """A JSON document column as its text (validated by the checks, stored as written)."""
    expr = f"CAST({col} AS VARCHAR)"
    return f"coalesce({expr}, '{default}')" if default else expr


def _json(col: str) -> str:
    # TRY_: typed values are computed for every row, the rejected ones included
    return f"TRY_CAST(CAST({col} AS VARCHAR) AS JSON)"


def checkpoint_keys(types: ColumnTypes) -> str:
    """The narrow, typed columns of a checkpoint: identity, order and the state's hash."""
    given = GIVEN_STATE_HASH in types
    hashed = GIVEN_STATE_HASH if given else f"{state_hash.SQL_NAME}(CAST(working_state AS VARCHAR))"
    return f"""
        {as_text("run_id")} AS run_id, {as_int(types, "step_index")} AS step_index,
        {as_timestamp(types, "created_at")} AS created_at, {as_text("checkpoint_id")} AS given_id,
        {hashed} AS state_hash,
        strlen(CAST(working_state AS VARCHAR)) AS state_bytes"""


def checkpoint_values(types: ColumnTypes) -> str:
    """The other typed columns of a checkpoint, the state and documents among them."""
    return f"""
        {as_text("parent_id")} AS parent_id, {as_int(types, "schema_version")} AS schema_version,
        CAST(working_state AS VARCHAR) AS ws,
        coalesce({as_int(types, "tokens_spent")}, 0) AS tokens_spent,
        coalesce({as_int(types, "steps_spent")}, 0) AS steps_spent,
        coalesce({as_int(types, "wall_clock_ms")}, 0) AS wall_clock_ms,
        {_doc("pending_effects", "[]")} AS pending_effects,
        {as_text("model_version")} AS model_version,
        {_doc("tool_versions", "{}")} AS tool_versions,
        {_doc("metadata", "{}")} AS metadata"""


def typed(table: str, types: ColumnTypes) -> str:
    """The typed, canonical values of a row of ``_staged`` (NULL where a value is not valid)."""
    if table == "checkpoints":
        return f"{checkpoint_keys(types)}, {checkpoint_values(types)}"
    if table == "effects":
        return f"""
        {as_text("run_id")} AS run_id, {as_int(types, "step_index")} AS step_index,
        {as_text("idempotency_key")} AS idempotency_key, {as_text("tool")} AS tool,
        {_json("args")} AS args, lower(CAST(status AS VARCHAR)) AS status,
        {_json("result")} AS result, {as_timestamp(types, "created_at")} AS created_at,
        {as_text("effect_id")} AS given_id"""
    return f"""
        {as_text("run_id")} AS run_id, {as_int(types, "step_index")} AS step_index,
        {as_int(types, "seq")} AS seq, lower(CAST(kind AS VARCHAR)) AS kind,
        {as_text("name")} AS name,
        {_json("request")} AS request, {_json("response")} AS response,
        {as_text("error")} AS error, {as_text("idempotency_key")} AS idempotency_key,
        coalesce(TRY_CAST(CAST(is_write AS VARCHAR) AS BOOLEAN), false) AS is_write,
        {as_text("call_id")} AS given_id"""


# Identity of a row when the source gives none: a hash of its content. Effects and tool
# calls also get an occurrence number, so that the same email really sent twice stays two
# rows while a re-import of the same source still adds nothing.
CONTENT_ID: dict[str, str] = {
    # state_hash is the state's XXH3-128 (debugger.store.state_hash), computed once for both
    "checkpoints": "left(md5(concat_ws('|', run_id, step_index, created_at, state_hash)), 20)",
    "effects": "left(md5(concat_ws('|', run_id, step_index, idempotency_key, tool, "
    "CAST(args AS VARCHAR), status, CAST(result AS VARCHAR), created_at)), 20)",
    "tool_calls": "left(md5(concat_ws('|', run_id, step_index, seq, kind, name, "
    "CAST(request AS VARCHAR), CAST(response AS VARCHAR), error, idempotency_key)), 20)",
}


def _why(table: str, types: ColumnTypes) -> str:
    cases = "\n".join(reasons(table, types))
    return f"CASE WHEN _reason IS NOT NULL THEN _reason {cases} ELSE NULL END"


def stage_sql(table: str, types: ColumnTypes) -> str:
    """The SELECT over ``_staged`` that gives ``_v``: every row once, typed, with ``_why``.

    The only pass over the batch's wide values: each JSON document is parsed once (by
    ``json_valid``) and each state hashed once; what follows reads ``_v``. It needs nothing
    from the store, so an import runs it for the next batch on a connection of its own
    while the store's connection inserts this one (:meth:`ImportSession.stage`).
    """
    if table == "checkpoints":
        # narrow: the states stay in the source batch until the insert reads them from there
        return f"""
            WITH t AS (SELECT _key, _pos, {_why(table, types)} AS _why, {checkpoint_keys(types)}
                       FROM _staged)
            SELECT *, coalesce(given_id, {CONTENT_ID["checkpoints"]}) AS checkpoint_id FROM t"""
    return f"SELECT _key, _pos, {_why(table, types)} AS _why, {typed(table, types)} FROM _staged"


@dataclass(frozen=True)
class Prestaged:
    """A batch's ``_v`` computed on another connection (see :func:`stage_sql`)."""

    rows: pa.Table
    """The rows of ``_v``, in the batch's order."""
    types: ColumnTypes
    """The staged columns' types, which the insert's casts depend on."""


def stage_batch(
    con: duckdb.DuckDBPyConnection, table: str, prestaged: Prestaged | None
) -> tuple[int, int, ColumnTypes]:
    """Make ``_v`` available: computed here (a temp table) or handed over (an Arrow view).

    Returns:
        (rows read, rows quarantined, the staged columns' types).
    """
    if prestaged is None:
        types = staged_types(con)
        # a checkpoint's state_hash() is callable: the import session registers it for the
        # whole database (effects and tool calls do not use it)
        con.execute(f"CREATE OR REPLACE TEMP TABLE _v AS {stage_sql(table, types)}")
    else:
        types = prestaged.types
        # copied once into a temp table: the statements below read _v six times, and each
        # scan of a Python object waits for the GIL, which the reader's decoding holds
        # (DuckDB threads block behind it for up to a switch interval each time)
        con.register("_v_arrow", prestaged.rows)
        try:
            con.execute("CREATE OR REPLACE TEMP TABLE _v AS SELECT * FROM _v_arrow")
        finally:
            con.unregister("_v_arrow")
        # counted on the Arrow rows: no statement (and no wait for the GIL) for it
        why = prestaged.rows.column("_why")
        return prestaged.rows.num_rows, len(why) - why.null_count, types
    row = con.execute("SELECT count(*), count(_why) FROM _v").fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), types
