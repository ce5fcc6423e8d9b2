"""Re-importing a source that changed: stored checkpoints whose mapped row differs are updated.

A live LangGraph database gains writes on checkpoints already imported (an ``__error__``, an
``__interrupt__``, a tool's answer, a child that turns a head into history). Their mapped row
changes (metadata, pending effects), their identity does not. So a checkpoint already in the
store is compared with the batch's row on its content (the state's hash, the documents' text
and the other columns), and only the rows that differ are rewritten: a re-import ends where
a fresh import of the same source would, and an unchanged source costs one comparison per
row. The comparison is narrow first (identity, the state's hash, step and time), so a batch
of new rows never reads the stored documents or stages its own.
"""

from __future__ import annotations

import duckdb

from debugger.store import metadata_split, state_write
from debugger.store.schema import LARGE_STATE_BYTES, RUN_SHIFT, STEP_OFFSET, split_texts_sql
from debugger.store.state_parts import SPLIT_MIN_BYTES
from debugger.store.validate import staged_types

_NARROW = (
    "x.state_hash IS DISTINCT FROM v.state_hash",
    "x.step_index IS DISTINCT FROM v.step_index",
    "x.created_at IS DISTINCT FROM v.created_at",
)
"""Stored columns compared with the batch's narrow staged keys (``_v``): no document read."""
_COMPARED = (
    # a source without parents has them derived in the store (ingest.derive_parents)
    "(s.parent_id IS NOT NULL AND x.parent_id IS DISTINCT FROM s.parent_id)",
    "x.schema_version IS DISTINCT FROM s.schema_version",
    "x.tokens_spent IS DISTINCT FROM s.tokens_spent",
    "x.steps_spent IS DISTINCT FROM s.steps_spent",
    "x.wall_clock_ms IS DISTINCT FROM s.wall_clock_ms",
    "x.model_version IS DISTINCT FROM s.model_version",
    "CAST(x.pending_effects AS VARCHAR) IS DISTINCT FROM s.pending_effects",
    "CAST(x.tool_versions AS VARCHAR) IS DISTINCT FROM s.tool_versions",
    "{metadata} IS DISTINCT FROM s.metadata",
)
"""With ``_NARROW``, every stored column a source row decides (not the store's own keys and
source id). ``{metadata}``: the stored document's text (:func:`_stored_metadata`)."""


def _stored_metadata(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    """The stored metadata's text as the comparison reads it, and the join it needs.

    A document kept as a stub (:mod:`debugger.store.metadata_split`) is compared by its
    whole text, put together in SQL for the candidates only; a store that keeps none (all
    but LangGraph functional-API chats) joins nothing.
    """
    row = con.execute("SELECT EXISTS (SELECT 1 FROM split_states WHERE ckpt_key < 0)").fetchone()
    if not (row and row[0]):
        return "CAST(x.metadata AS VARCHAR)", ""
    texts = split_texts_sql("WHERE ckpt_key IN (SELECT -1 - ckpt_key FROM _cand)")
    join = f"LEFT JOIN ({texts}) xm ON xm.ckpt_key = -1 - x.ckpt_key"
    return "coalesce(xm.text, x.metadata)", join


def update_changed_checkpoints(
    con: duckdb.DuckDBPyConnection, source_id: int, values_sql: str, keep: str
) -> int:
    """Rewrite stored checkpoints of the batch ``_v`` whose content changed; returns how many.

    Narrow first: the batch's rows that are stored already are found on the staged keys
    alone (``_cand``); a batch of new checkpoints (a thread that goes on from the previous
    batch) stops there. Only for those rows are the documents staged and compared.

    Args:
        con: The import's connection (``_v``, ``_staged`` and ``_bruns`` exist).
        source_id: The import's source (the updated rows now belong to it).
        values_sql: The typed value columns of ``_staged`` (``ingest.checkpoint_values``).
        keep: An extra filter on ``_v`` rows (the first copy of a checkpoint repeated in
            the batch), or an empty string.
    """
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _cand AS
        SELECT x.ckpt_key, v._pos, v.run_id,
               x.state_hash IS DISTINCT FROM v.state_hash AS state_changed,
               ({" OR ".join(_NARROW)}) AS key_changed
        FROM _v v
        JOIN checkpoint_rows x ON x.run_id = v.run_id AND x.checkpoint_id = v.checkpoint_id
        WHERE v._why IS NULL AND x.run_id IN (SELECT run_id FROM _bruns) {keep}"""
    )
    row = con.execute("SELECT count(*) FROM _cand").fetchone()
    if not (row and row[0]):
        return 0
    metadata, join_metadata = _stored_metadata(con)
    compared = " OR ".join(_COMPARED).replace("{metadata}", metadata)
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _upd AS
        SELECT c.ckpt_key, c._pos, c.run_id, c.state_changed
        FROM _cand c
        JOIN checkpoint_rows x ON x.run_id = c.run_id AND x.ckpt_key = c.ckpt_key
        JOIN (SELECT _pos, {values_sql} FROM _staged
              WHERE _pos IN (SELECT _pos FROM _cand)) s ON s._pos = c._pos
        {join_metadata}
        WHERE x.run_id IN (SELECT run_id FROM _cand)
          AND (c.key_changed OR {compared})"""
    )
    row = con.execute("SELECT count(*) FROM _upd").fetchone()
    n = int(row[0]) if row else 0
    if n == 0:
        return 0
    split = _split_changed_states(con, state_write.has_given(staged_types(con)))
    not_split = " AND u.ckpt_key NOT IN (SELECT ckpt_key FROM _split)" if split else ""
    con.execute(
        f"""
        UPDATE checkpoint_rows AS x SET
            lookup_key = k.run_num * {RUN_SHIFT} + (v.step_index + {STEP_OFFSET}),
            parent_id = coalesce(s.parent_id, x.parent_id), step_index = v.step_index,
            schema_version = s.schema_version, created_at = v.created_at,
            working_state = CASE WHEN NOT u.state_changed THEN x.working_state
                                 WHEN v.state_bytes < {LARGE_STATE_BYTES}{not_split}
                                 THEN s.ws END,
            state_hash = v.state_hash, state_bytes = v.state_bytes,
            tokens_spent = s.tokens_spent, steps_spent = s.steps_spent,
            wall_clock_ms = s.wall_clock_ms, pending_effects = s.pending_effects,
            model_version = s.model_version, tool_versions = s.tool_versions,
            metadata = s.metadata, source_id = ?
        FROM _upd u JOIN _v v ON v._pos = u._pos JOIN run_keys k ON k.run_id = v.run_id
        JOIN (SELECT _pos, {values_sql} FROM _staged) s ON s._pos = u._pos
        WHERE x.ckpt_key = u.ckpt_key""",
        [source_id],
    )
    _refresh_large_states(con, split)
    # the rows took the batch's whole documents: their old split ones go, large ones are cut
    con.execute("DELETE FROM split_states WHERE ckpt_key IN (SELECT -1 - ckpt_key FROM _upd)")
    row = con.execute("SELECT min(ckpt_key), max(ckpt_key) FROM _upd").fetchone()
    if row:
        metadata_split.split(con, row[0], row[1], "AND ckpt_key IN (SELECT ckpt_key FROM _upd)")
    con.execute("INSERT INTO _touched SELECT DISTINCT run_id FROM _upd")
    return n


def _split_changed_states(con: duckdb.DuckDBPyConnection, given: bool) -> int:
    """Cut the changed states of ``SPLIT_MIN_BYTES`` or more into skeletons and parts, as
    the insert does (``_split``, keyed by the stored ``ckpt_key``; ``given``: the batch
    carries its reader's cuts); returns how many."""
    rows = (
        "FROM _upd u JOIN _v v ON v._pos = u._pos JOIN _staged s ON s._pos = u._pos "
        f"WHERE u.state_changed AND v.state_bytes >= {SPLIT_MIN_BYTES}"
    )
    return state_write.split_rows(
        con,
        "FROM _upd u JOIN _v v ON v._pos = u._pos "
        f"WHERE u.state_changed AND v.state_bytes >= {SPLIT_MIN_BYTES}",
        f"SELECT u.ckpt_key, CAST(s.working_state AS VARCHAR), v.state_bytes {rows}"
        + (f" AND NOT ({state_write.GIVEN})" if given else ""),
        f"SELECT u.ckpt_key, s._state_skeleton, s._state_cuts, s._state_refs {rows} "
        f"AND {state_write.GIVEN}"
        if given
        else None,
    )


def _refresh_large_states(con: duckdb.DuckDBPyConnection, split: int) -> None:
    """Replace the out-of-row text (whole, or skeleton) of updated checkpoints whose state
    changed. Parts no state refers to any more stay until a prune removes them."""
    row = con.execute("SELECT count(*) FROM _upd WHERE state_changed").fetchone()
    if not (row and row[0]):
        return
    for table in ("large_states", "split_states"):
        con.execute(
            f"DELETE FROM {table} WHERE ckpt_key IN (SELECT ckpt_key FROM _upd WHERE state_changed)"
        )
    not_split = "AND u.ckpt_key NOT IN (SELECT ckpt_key FROM _split)" if split else ""
    con.execute(
        "INSERT INTO large_states SELECT u.ckpt_key, CAST(s.working_state AS VARCHAR) "
        "FROM _staged s JOIN _upd u ON u._pos = s._pos WHERE u.state_changed "
        f"AND strlen(CAST(s.working_state AS VARCHAR)) >= {LARGE_STATE_BYTES} {not_split} "
        "ORDER BY u.ckpt_key"
    )
    if split:
        con.execute("INSERT INTO split_states SELECT * FROM _split ORDER BY ckpt_key")


def update_changed_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    typed: str,
    id_col: str,
    columns: tuple[str, ...],
    source_id: int,
) -> int:
    """Rewrite stored effects or tool calls that the batch ``typed`` names by a given id and
    whose content changed (a tool call answered since the last import); returns how many.

    Rows named by their content (no id in the source) are never changed: another content
    is another row.
    """
    values = [c for c in columns if c not in ("run_id", id_col)]
    differs = " OR ".join(
        f"CAST(x.{c} AS VARCHAR) IS DISTINCT FROM CAST(t.{c} AS VARCHAR)" for c in values
    )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _upd AS
        SELECT t.* FROM {typed} t JOIN {table} x ON x.run_id = t.run_id AND x.{id_col} = t.{id_col}
        WHERE t._dup = 1 AND t.given_id IS NOT NULL AND ({differs})"""
    )
    row = con.execute("SELECT count(*) FROM _upd").fetchone()
    n = int(row[0]) if row else 0
    if n:
        sets = ", ".join(f"{c} = u.{c}" for c in values)
        con.execute(
            f"UPDATE {table} AS x SET {sets}, source_id = ? FROM _upd u "
            f"WHERE x.run_id = u.run_id AND x.{id_col} = u.{id_col}",
            [source_id],
        )
        con.execute("INSERT INTO _touched SELECT DISTINCT run_id FROM _upd")
    return n
