"""Inserting a staged batch's valid rows: identities, duplicates, run numbers, parents.

Reads ``_v`` (see :mod:`debugger.store.stage`) and the store's tables, in the caller's
transaction; each function notes in ``_touched`` the runs whose rows it inserted.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from debugger.contract import TABLE_COLUMNS
from debugger.store import metadata_split, state_write
from debugger.store.refresh import update_changed_checkpoints, update_changed_rows
from debugger.store.schema import LARGE_STATE_BYTES, RUN_SHIFT, STEP_OFFSET
from debugger.store.stage import CONTENT_ID, checkpoint_values
from debugger.store.state_parts import SPLIT_MIN_BYTES
from debugger.store.validate import ColumnTypes

ID_COLUMN = {"checkpoints": "checkpoint_id", "effects": "effect_id", "tool_calls": "call_id"}
TARGET = {"checkpoints": "checkpoint_rows", "effects": "effects", "tool_calls": "tool_calls"}


def typed_with_ids(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """Create ``_typed``: valid rows of ``_v``, each with its identity and occurrence number.

    Returns the name to read them by: ``_typed``, or the view ``_typed_ids`` when every row
    has an id of its own and no id is repeated (the rows are then ``_v``'s valid ones).

    A row without an id of its own is named after its content plus its occurrence: the
    same email really sent three times is three rows, and a re-import names them the same.
    Occurrences continue across the import's batches through ``_occ_<table>``, which
    counts, per content, the rows named so far.
    """
    id_col = ID_COLUMN[table]
    nameless = con.execute("SELECT count(*) FROM _v WHERE _why IS NULL AND given_id IS NULL")
    row = nameless.fetchone()
    if not row or not row[0]:
        # every row has its id: no content names, no occurrences (the window that numbers
        # them would carry each row's documents through a sort)
        twice = con.execute(
            "SELECT count(*) - count(DISTINCT (run_id, given_id)) FROM _v WHERE _why IS NULL"
        ).fetchone()
        if not (twice and twice[0]):
            # a view: a table would copy every row's documents once more
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW _typed_ids AS "
                f"SELECT *, given_id AS {id_col}, 1 AS _dup FROM _v WHERE _why IS NULL"
            )
            return "_typed_ids"
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _typed AS
            SELECT *, given_id AS {id_col},
                   row_number() OVER (PARTITION BY run_id, given_id ORDER BY _key) AS _dup
            FROM _v WHERE _why IS NULL"""
        )
        return "_typed"
    con.execute(f"CREATE TEMP TABLE IF NOT EXISTS _occ_{table} (_content VARCHAR, n BIGINT)")
    id_expr = (
        "coalesce(given_id, _content || '#' || (coalesce(o.n, 0) + row_number() OVER ("
        "PARTITION BY t._content, t.given_id IS NULL ORDER BY t._key)))"
    )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _typed AS
        WITH t1 AS (SELECT *, CASE WHEN given_id IS NULL THEN {CONTENT_ID[table]} END AS _content
                    FROM _v WHERE _why IS NULL),
        t2 AS (SELECT t.*, {id_expr} AS {id_col}
               FROM t1 t LEFT JOIN _occ_{table} o USING (_content))
        SELECT *, row_number() OVER (PARTITION BY run_id, {id_col} ORDER BY _key) AS _dup
        FROM t2"""
    )
    # a sum: occurrences of earlier batches plus this batch's (a maximum lost the third
    # copy of a record whose copies were each in another batch)
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _occ_{table} AS
        SELECT _content, sum(n) AS n FROM (
            SELECT _content, n FROM _occ_{table}
            UNION ALL
            SELECT _content, count(*) FROM _typed WHERE given_id IS NULL GROUP BY _content
        ) GROUP BY _content"""
    )
    return "_typed"


def insert_other(
    con: duckdb.DuckDBPyConnection, table: str, source_id: int, typed: str = "_typed"
) -> tuple[int, int]:
    """Insert the new rows of ``typed`` (see :func:`typed_with_ids`) into ``table`` and
    update the stored ones whose content changed; returns how many of each.

    The look-up of rows already stored runs only when one of the batch's runs has rows in
    ``table`` already (a first import of a source skips it).
    """
    id_col = ID_COLUMN[table]
    cols = ", ".join(TABLE_COLUMNS[table])
    row = con.execute(
        f"SELECT count(*) FROM (SELECT DISTINCT run_id FROM {typed}) b "
        f"WHERE EXISTS (SELECT 1 FROM {TARGET[table]} x WHERE x.run_id = b.run_id)"
    ).fetchone()
    new = "_dup = 1"
    updated = 0
    if row and row[0]:
        cols_t = TABLE_COLUMNS[table]
        updated = update_changed_rows(con, TARGET[table], typed, id_col, cols_t, source_id)
        new += (
            f" AND NOT EXISTS (SELECT 1 FROM {TARGET[table]} x "
            f"WHERE x.run_id = t.run_id AND x.{id_col} = t.{id_col})"
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE _new AS SELECT * FROM {typed} t WHERE {new}")
        new, source = "true", "_new"
    else:
        source = typed
    con.execute(f"INSERT INTO _touched SELECT DISTINCT run_id FROM {source} t WHERE {new}")
    inserted = con.execute(
        f"INSERT INTO {table} ({cols}, source_id) SELECT {cols}, ? FROM {source} t WHERE {new}",
        [source_id],
    ).fetchone()
    return (int(inserted[0]) if inserted else 0), updated


@dataclass(frozen=True)
class BatchFacts:
    """What the statements after validation need to know of a batch's valid checkpoints,
    counted in one scan of ``_v`` (each count a statement of its own cost ~1 ms)."""

    to_split: int
    """States of ``SPLIT_MIN_BYTES`` or more (cut into parts)."""
    large: int
    """States of ``LARGE_STATE_BYTES`` or more (kept in ``large_states``)."""
    repeats: int
    """Rows whose (run, checkpoint) came earlier in the batch."""


def batch_facts(con: duckdb.DuckDBPyConnection) -> BatchFacts:
    """:class:`BatchFacts` of the valid rows of ``_v``."""
    row = con.execute(
        f"""SELECT count(*) FILTER (WHERE state_bytes >= {SPLIT_MIN_BYTES}),
                   count(*) FILTER (WHERE state_bytes >= {LARGE_STATE_BYTES}),
                   count(*) - count(DISTINCT (run_id, checkpoint_id))
            FROM _v WHERE _why IS NULL"""
    ).fetchone()
    assert row is not None
    return BatchFacts(int(row[0]), int(row[1]), int(row[2]))


def _number_runs(con: duckdb.DuckDBPyConnection) -> bool:
    """Give the batch's new runs their numbers; True when some of its runs were stored before.

    A run without a number has no checkpoints yet, so its valid rows need no look-up in
    ``checkpoint_rows``: a fresh import skips that anti-join entirely.

    New runs are numbered in the order the import first met them (then by run id), so the
    same import gives the same numbers every time: ``nextval`` over a DISTINCT numbered them
    in whatever order the hash table and threads gave. One statement moves the sequence past
    as many numbers as there are new runs (the least of them the base), and the order is a
    ``row_number``.
    """
    # a CREATE ... AS answers with its row count
    made = con.execute(
        "CREATE OR REPLACE TEMP TABLE _bruns AS SELECT run_id, min(_pos) AS _first FROM _v "
        "WHERE _why IS NULL GROUP BY run_id"
    ).fetchone()
    batch_runs = int(made[0]) if made else 0
    made = con.execute(
        "CREATE OR REPLACE TEMP TABLE _nruns AS SELECT run_id, _first FROM _bruns "
        "WHERE run_id NOT IN (SELECT run_id FROM run_keys)"
    ).fetchone()
    # the batch's runs that have a number already are those of _bruns not in _nruns
    new = int(made[0]) if made else 0
    if new:
        # the store's connection is the only one that writes: the numbers are consecutive
        base = con.execute(f"SELECT min(nextval('run_seq')) FROM range({new})").fetchone()
        assert base is not None
        con.execute(
            "INSERT INTO run_keys SELECT run_id, ? - 1 + row_number() OVER "
            "(ORDER BY _first, run_id) FROM _nruns",
            [int(base[0])],
        )
    return batch_runs > new


def insert_checkpoints(
    con: duckdb.DuckDBPyConnection,
    source_id: int,
    types: ColumnTypes,
    chain: bool = False,
    facts: BatchFacts | None = None,
) -> tuple[int, int, bool]:
    """Insert the new, valid checkpoints of ``_v`` into the store, update the stored ones
    whose content changed (:mod:`debugger.store.refresh`); returns how many of each, and
    whether their parents were given here.

    ``chain``: the batch holds every checkpoint of the source (a whole table's pass) and
    the source has no parent column. When none of its runs has rows stored already, each
    row without a parent of its own (a payload may give one) gets the checkpoint before it
    in its run, as the rows go in: the chain :func:`derive_parents` would draw after the
    import (the same order, the same rows), without its update of the rows just written
    (and the second derivation of their runs).

    ``ckpt_key`` (the write order: head and parent tie-breaks) is ``_pos``, the row's place
    in the import, handed over by the session; so no sort or window runs over the batch.
    Duplicates within the batch and rows already stored are filtered on narrow columns,
    and only when the batch can have them. ``facts``: the batch's, when the caller counted
    them already.
    """
    seen_before = _number_runs(con)
    facts = facts or batch_facts(con)
    filters = ""
    if facts.repeats:
        # the same checkpoint twice in the batch: the first read is kept, as when the two
        # are in different batches (by _pos, the import's order: a key need not follow it,
        # a Parquet file's keys start from a hash of its path)
        filters += (
            " AND v._pos IN (SELECT min(_pos) FROM _v WHERE _why IS NULL "
            "GROUP BY run_id, checkpoint_id)"
        )
    updated = 0
    if seen_before:
        updated = update_changed_checkpoints(con, source_id, checkpoint_values(types), filters)
        # the anti-join only looks at the batch's runs, and only when one was stored before
        filters += (
            " AND NOT EXISTS (SELECT 1 FROM checkpoint_rows x "
            "WHERE x.run_id IN (SELECT run_id FROM _bruns) "
            "AND x.run_id = v.run_id AND x.checkpoint_id = v.checkpoint_id)"
        )
    parent, join_parent = "s.parent_id", ""
    chained = chain and not seen_before
    if chained:
        # on the narrow columns of the rows that go in (a window in the insert would carry
        # every state through its sort)
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _par AS
            SELECT v._pos, lag(v.checkpoint_id) OVER (
                PARTITION BY v.run_id ORDER BY v.created_at NULLS FIRST, v.step_index, v._pos
            ) AS prev
            FROM _v v WHERE v._why IS NULL {filters}"""
        )
        # a parent the row gives (a payload's) is kept, as derive_parents keeps it
        parent, join_parent = "coalesce(s.parent_id, p.prev)", "LEFT JOIN _par p ON p._pos = v._pos"
    split = _split_new_states(con, filters, state_write.has_given(types), facts.to_split)
    whole = f"v.state_bytes < {LARGE_STATE_BYTES}"
    join_split = ""
    if split:
        whole += " AND x.ckpt_key IS NULL"
        join_split = "LEFT JOIN _split x ON x.ckpt_key = v._pos"
    inserted = con.execute(
        f"""
        INSERT INTO checkpoint_rows
        SELECT v._pos, k.run_num * {RUN_SHIFT} + (v.step_index + {STEP_OFFSET}), v.run_id,
               v.checkpoint_id, {parent}, v.step_index, s.schema_version, v.created_at,
               CASE WHEN {whole} THEN s.ws END,
               v.state_hash, v.state_bytes, s.tokens_spent, s.steps_spent, s.wall_clock_ms,
               s.pending_effects, s.model_version, s.tool_versions, s.metadata, ?
        FROM _v v JOIN run_keys k USING (run_id)
        JOIN (SELECT _pos, {checkpoint_values(types)} FROM _staged) s ON s._pos = v._pos
        {join_split} {join_parent}
        WHERE v._why IS NULL {filters}""",
        [source_id],
    ).fetchone()
    if split:
        con.execute("INSERT INTO split_states SELECT * FROM _split ORDER BY ckpt_key")
    n = int(inserted[0]) if inserted else 0
    if n == 0:
        return 0, updated, chained
    if not filters and not facts.large:
        # every valid row went in, none to copy into large_states: the batch's runs are
        # those numbered above
        con.execute("INSERT INTO _touched SELECT run_id FROM _bruns")
        _split_new_metadata(con)
        return n, updated, chained
    if filters:
        # only the rows that went in: the batch's keys are a fresh range of ckpt_key
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _ins AS SELECT ckpt_key AS _pos, run_id "
            "FROM checkpoint_rows "
            "WHERE ckpt_key BETWEEN (SELECT min(_pos) FROM _v) AND (SELECT max(_pos) FROM _v)"
        )
    else:  # every valid row went in
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _ins AS SELECT _pos, run_id FROM _v WHERE _why IS NULL"
        )
    # counted on _v first: the insert reads the batch's texts (a scan of a Python object,
    # which waits for the GIL), and a batch whose large states are all split has none to add
    large = facts.large
    if split and large:  # those split are not large any more
        row = con.execute(
            f"SELECT count(*) FROM _v WHERE _why IS NULL AND state_bytes >= {LARGE_STATE_BYTES} "
            "AND _pos NOT IN (SELECT ckpt_key FROM _split)"
        ).fetchone()
        large = int(row[0]) if row else 0
    if large:
        not_split = "AND s._pos NOT IN (SELECT ckpt_key FROM _split)" if split else ""
        con.execute(
            "INSERT INTO large_states SELECT s._pos, CAST(s.working_state AS VARCHAR) "
            f"FROM _staged s JOIN _ins i ON i._pos = s._pos "
            f"WHERE strlen(CAST(s.working_state AS VARCHAR)) >= {LARGE_STATE_BYTES} {not_split} "
            "ORDER BY s._pos"
        )
    con.execute("INSERT INTO _touched SELECT DISTINCT run_id FROM _ins")
    _split_new_metadata(con)
    return n, updated, chained


def _split_new_metadata(con: duckdb.DuckDBPyConnection) -> None:
    """Store the batch's new large metadata as stubs and split texts
    (:mod:`debugger.store.metadata_split`), once ``_split`` served the states: the batch's
    new rows are its fresh range of ``ckpt_key``."""
    row = con.execute("SELECT min(_pos), max(_pos) FROM _v WHERE _why IS NULL").fetchone()
    if row:
        metadata_split.split(con, row[0], row[1])


def _split_new_states(
    con: duckdb.DuckDBPyConnection, filters: str, given: bool, candidates: int
) -> int:
    """Cut the batch's new states of ``SPLIT_MIN_BYTES`` or more into skeletons and parts
    (:mod:`debugger.store.state_write`); returns how many split (listed in ``_split``).

    Only rows the insert will take (``filters``, as it applies them) are read, so a
    re-import of an unchanged source cuts nothing. A batch without such states costs one
    count. ``given``: the batch carries its reader's cuts, taken as they are for the
    states that have one. ``candidates``: the batch's valid states of that size.
    """
    if not candidates:
        return 0
    rows = (
        "FROM _v v JOIN _staged s ON s._pos = v._pos "
        f"WHERE v._why IS NULL AND v.state_bytes >= {SPLIT_MIN_BYTES} {filters}"
    )
    return state_write.split_rows(
        con,
        f"FROM _v WHERE _why IS NULL AND state_bytes >= {SPLIT_MIN_BYTES}",
        f"SELECT s._pos, CAST(s.working_state AS VARCHAR), v.state_bytes {rows}"
        + (f" AND NOT ({state_write.GIVEN})" if given else ""),
        f"SELECT s._pos, s._state_skeleton, s._state_cuts, s._state_refs {rows} "
        f"AND {state_write.GIVEN}"
        if given
        else None,
    )


def drop_batch_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Free a batch's temp tables now rather than when the next batch replaces them.

    In one call: each call waits for the GIL to come back, which the reader's thread holds
    while it decodes the next batch."""
    names = ("_v", "_ins", "_bruns", "_nruns", "_typed", "_new", "_upd", "_cand", "_split",
             "_new_parts", "_par")  # fmt: skip
    con.execute(
        "DROP VIEW IF EXISTS _typed_ids; "
        + " ".join(f"DROP TABLE IF EXISTS {name};" for name in names)
    )


ALL_TOUCHED = "(SELECT run_id FROM _touched UNION SELECT run_id FROM _derived)"
"""The runs an import session changed, over all its transactions (``_derived`` holds those
of the transactions it committed already)."""


def derive_parents(con: duckdb.DuckDBPyConnection, source_id: int, runs: str = ALL_TOUCHED) -> None:
    """Give rows of a source that carries no parent column the previous checkpoint as parent.

    Used for native sources without ``parent_id``: the chain is the run's checkpoints in
    (created_at, step_index, insertion) order, over the runs of ``runs`` (a table or a
    subquery with a ``run_id`` column).
    """
    con.execute(
        f"""
        UPDATE checkpoint_rows AS c SET parent_id = p.prev
        FROM (
            SELECT ckpt_key, lag(checkpoint_id) OVER (
                PARTITION BY run_id ORDER BY created_at NULLS FIRST, step_index, ckpt_key
            ) AS prev
            FROM checkpoint_rows WHERE run_id IN (SELECT run_id FROM {runs})
        ) p
        WHERE c.ckpt_key = p.ckpt_key AND c.source_id = ? AND c.parent_id IS NULL
          AND p.prev IS NOT NULL""",
        [source_id],
    )
