"""Writing imported rows into the store: validate, deduplicate, insert, a batch at a time.

A flavour hands over a *staged* relation: the canonical columns of one table (any SQL type;
values are validated here, not trusted), plus ``_key`` (how to find the row in the source) and
optionally ``_reason`` (a reason the flavour already found, such as an undecodable value) and
``_raw_text`` (the raw row for the quarantine). Validation is plain SQL over the whole batch,
so it runs vectorised in DuckDB instead of row by row in Python. The caller's transaction
spans several batches (``debugger.store.session.COMMIT_BYTES``).

Every row read ends in exactly one of: imported, updated (same identity already in the store,
content changed: :mod:`debugger.store.refresh`), already present (same identity and content
already in the store, or twice in the source), quarantined (with its reason). The counts are
returned so the report can show ``read = imported + updated + already present + quarantined``.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from debugger.contract import TABLE_COLUMNS
from debugger.model import TableCounts
from debugger.store import state_hash
from debugger.store.refresh import update_changed_checkpoints, update_changed_rows
from debugger.store.schema import LARGE_STATE_BYTES, RUN_SHIFT, STEP_OFFSET

RAW_LIMIT = 4096
"""Raw rows kept in quarantine are cut to this many characters."""

_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
)
"""Staged column types that hold integers already: no text round trip to check them.
(UBIGINT and HUGEINT may not fit the store's BIGINT, so they take the text path.)"""
_TIMESTAMP_FREE_OF_ZONE = (
    r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]00(:?00)?)?"
)
"""A timestamp text in UTC or without a zone. DuckDB's TIMESTAMP cast reads it correctly
(the store's session time zone is UTC) and costs a tenth of the TIMESTAMPTZ cast, which is
kept for texts with another offset or a zone name (the TIMESTAMP cast would drop those)."""

ColumnTypes = dict[str, str]
"""Staged column name -> DuckDB type name (as ``DESCRIBE`` gives it)."""


def staged_types(con: duckdb.DuckDBPyConnection) -> ColumnTypes:
    """The DuckDB type of every column of ``_staged`` (reads no rows)."""
    desc = con.execute("SELECT * FROM _staged LIMIT 0").description
    return {str(d[0]): str(d[1]).upper() for d in desc}


def _is_int(types: ColumnTypes, col: str) -> bool:
    return types.get(col, "VARCHAR") in _INTEGER_TYPES


def _is_null(types: ColumnTypes, col: str) -> bool:
    return types.get(col) == '"NULL"'


def _text(col: str) -> str:
    return f"nullif(trim(CAST({col} AS VARCHAR)), '')"


def _int_check(types: ColumnTypes, col: str, required: bool, non_negative: bool) -> list[str]:
    checks = []
    if required:
        checks.append(f"WHEN {col} IS NULL THEN 'missing {col}'")
    if _is_null(types, col):
        return checks
    if not _is_int(types, col):
        checks.append(
            f"WHEN {col} IS NOT NULL AND NOT "
            f"regexp_full_match(trim(CAST({col} AS VARCHAR)), '-?[0-9]+') "
            f"THEN '{col} is not an integer: ' || left(CAST({col} AS VARCHAR), 40)"
        )
        # a run of digits beyond 64 bits matches but does not fit
        checks.append(
            f"WHEN {col} IS NOT NULL AND {_int(types, col)} IS NULL "
            f"THEN '{col} does not fit 64 bits: ' || left(CAST({col} AS VARCHAR), 40)"
        )
    if non_negative:
        checks.append(
            f"WHEN {_int(types, col)} < 0 THEN 'negative {col}: ' || CAST({col} AS VARCHAR)"
        )
    return checks


def _json_check(
    col: str, required: bool, json_type: str | None, written: bool = False
) -> list[str]:
    checks = []
    if required:
        checks.append(f"WHEN {col} IS NULL THEN 'missing {col}'")
    if not written:  # see JSON_WRITTEN
        checks.append(
            f"WHEN {col} IS NOT NULL AND NOT json_valid(CAST({col} AS VARCHAR)) "
            f"THEN '{col} is not valid JSON'"
        )
    if json_type:
        checks.append(
            f"WHEN {col} IS NOT NULL AND json_type(CAST({col} AS VARCHAR)) <> '{json_type}' "
            f"THEN '{col} is not a JSON {json_type.lower()}'"
        )
    return checks


def _ts(types: ColumnTypes, col: str) -> str:
    t = types.get(col, "VARCHAR")
    if t == "TIMESTAMP WITH TIME ZONE":
        return f"({col} AT TIME ZONE 'UTC')"
    if t.startswith("TIMESTAMP") or t == "DATE":
        return f"CAST({col} AS TIMESTAMP)"
    if _is_null(types, col):
        return "CAST(NULL AS TIMESTAMP)"
    text = f"CAST({col} AS VARCHAR)"
    return (
        f"(CASE WHEN regexp_full_match({text}, '{_TIMESTAMP_FREE_OF_ZONE}') "
        f"THEN TRY_CAST({text} AS TIMESTAMP) "
        f"ELSE TRY_CAST({text} AS TIMESTAMPTZ) AT TIME ZONE 'UTC' END)"
    )


def _ts_check(types: ColumnTypes, col: str) -> list[str]:
    t = types.get(col, "VARCHAR")
    if t.startswith("TIMESTAMP") or t == "DATE" or _is_null(types, col):
        return []
    return [
        f"WHEN {col} IS NOT NULL AND {_ts(types, col)} IS NULL "
        f"THEN '{col} is not a timestamp: ' || left(CAST({col} AS VARCHAR), 40)"
    ]


def _required_text(col: str) -> list[str]:
    return [f"WHEN {_text(col)} IS NULL THEN 'missing {col}'"]


def _int(types: ColumnTypes, col: str) -> str:
    if _is_int(types, col):
        return f"CAST({col} AS BIGINT)"
    return f"TRY_CAST(CAST({col} AS VARCHAR) AS BIGINT)"


JSON_WRITTEN = "_json_written"
"""Optional staged column (any value): the batch's JSON documents were serialized by the
reader itself (orjson, as the LangGraph flavour writes the states it decodes), so they are
valid JSON and ``json_valid`` need not parse them again: on 1,024 20 KB states that parse
was 18 of the 28 ms of staging. Their JSON types (object, array) are still checked."""


def reasons(table: str, types: ColumnTypes) -> list[str]:
    """The ``WHEN ... THEN reason`` checks of ``table``, first failing one wins."""
    written = JSON_WRITTEN in types
    if table == "checkpoints":
        return [
            *_required_text("run_id"),
            *_int_check(types, "step_index", True, False),
            # lookup_key keeps 32 bits for the step: a larger one would land in another run
            f"WHEN NOT ({_int(types, 'step_index')} "
            f"BETWEEN {-STEP_OFFSET} AND {STEP_OFFSET - 1}) "
            f"THEN 'step_index out of range: ' || CAST(step_index AS VARCHAR)",
            *_json_check("working_state", True, None, written),
            *_int_check(types, "schema_version", False, True),
            *_ts_check(types, "created_at"),
            *_int_check(types, "tokens_spent", False, True),
            *_int_check(types, "steps_spent", False, True),
            *_int_check(types, "wall_clock_ms", False, True),
            *_json_check("pending_effects", False, "ARRAY", written),
            *_json_check("tool_versions", False, "OBJECT", written),
            *_json_check("metadata", False, "OBJECT", written),
        ]
    if table == "effects":
        return [
            *_required_text("run_id"),
            *_int_check(types, "step_index", True, False),
            *_required_text("tool"),
            "WHEN status IS NULL OR lower(CAST(status AS VARCHAR)) NOT IN "
            "('pending', 'committed', 'failed', 'unknown') "
            "THEN 'effect status must be pending, committed, failed or unknown: ' "
            "|| coalesce(left(CAST(status AS VARCHAR), 40), 'missing')",
            *_json_check("args", False, None, written),
            *_json_check("result", False, None, written),
            *_ts_check(types, "created_at"),
        ]
    return [
        *_required_text("run_id"),
        *_int_check(types, "step_index", True, False),
        *_int_check(types, "seq", True, True),
        "WHEN kind IS NULL OR lower(CAST(kind AS VARCHAR)) NOT IN ('tool', 'model') "
        "THEN 'call kind must be tool or model: ' "
        "|| coalesce(left(CAST(kind AS VARCHAR), 40), 'missing')",
        *_required_text("name"),
        *_json_check("request", False, None, written),
        *_json_check("response", False, None, written),
        "WHEN is_write IS NOT NULL AND TRY_CAST(CAST(is_write AS VARCHAR) AS BOOLEAN) IS NULL "
        "THEN 'is_write is not a boolean'",
    ]


def _doc(col: str, default: str | None = None) -> str:
    """A JSON document column as its text (validated by the checks, stored as written)."""
    expr = f"CAST({col} AS VARCHAR)"
    return f"coalesce({expr}, '{default}')" if default else expr


def _json(col: str) -> str:
    # TRY_: typed values are computed for every row, the rejected ones included
    return f"TRY_CAST(CAST({col} AS VARCHAR) AS JSON)"


GIVEN_STATE_HASH = "_state_hash"
"""Optional staged column: the state's hash, computed by a reader that made the state's text.

The LangGraph flavour writes each state's JSON in Python and hashes it there (2 us for
20 KB). Computed here instead, the hash is a Python function that needs the GIL, which the
reader's decoding holds nearly all the time: staging a batch took 0.25 s instead of 0.08 s.
It must be :func:`debugger.store.state_hash.of_text` of exactly the ``working_state`` text.
"""


def checkpoint_keys(types: ColumnTypes) -> str:
    """The narrow, typed columns of a checkpoint: identity, order and the state's hash."""
    given = GIVEN_STATE_HASH in types
    hashed = GIVEN_STATE_HASH if given else f"{state_hash.SQL_NAME}(CAST(working_state AS VARCHAR))"
    return f"""
        {_text("run_id")} AS run_id, {_int(types, "step_index")} AS step_index,
        {_ts(types, "created_at")} AS created_at, {_text("checkpoint_id")} AS given_id,
        {hashed} AS state_hash,
        strlen(CAST(working_state AS VARCHAR)) AS state_bytes"""


def checkpoint_values(types: ColumnTypes) -> str:
    """The other typed columns of a checkpoint, the state and documents among them."""
    return f"""
        {_text("parent_id")} AS parent_id, {_int(types, "schema_version")} AS schema_version,
        CAST(working_state AS VARCHAR) AS ws,
        coalesce({_int(types, "tokens_spent")}, 0) AS tokens_spent,
        coalesce({_int(types, "steps_spent")}, 0) AS steps_spent,
        coalesce({_int(types, "wall_clock_ms")}, 0) AS wall_clock_ms,
        {_doc("pending_effects", "[]")} AS pending_effects,
        {_text("model_version")} AS model_version,
        {_doc("tool_versions", "{}")} AS tool_versions,
        {_doc("metadata", "{}")} AS metadata"""


def typed(table: str, types: ColumnTypes) -> str:
    """The typed, canonical values of a row of ``_staged`` (NULL where a value is not valid)."""
    if table == "checkpoints":
        return f"{checkpoint_keys(types)}, {checkpoint_values(types)}"
    if table == "effects":
        return f"""
        {_text("run_id")} AS run_id, {_int(types, "step_index")} AS step_index,
        {_text("idempotency_key")} AS idempotency_key, {_text("tool")} AS tool,
        {_json("args")} AS args, lower(CAST(status AS VARCHAR)) AS status,
        {_json("result")} AS result, {_ts(types, "created_at")} AS created_at,
        {_text("effect_id")} AS given_id"""
    return f"""
        {_text("run_id")} AS run_id, {_int(types, "step_index")} AS step_index,
        {_int(types, "seq")} AS seq, lower(CAST(kind AS VARCHAR)) AS kind,
        {_text("name")} AS name,
        {_json("request")} AS request, {_json("response")} AS response,
        {_text("error")} AS error, {_text("idempotency_key")} AS idempotency_key,
        coalesce(TRY_CAST(CAST(is_write AS VARCHAR) AS BOOLEAN), false) AS is_write,
        {_text("call_id")} AS given_id"""


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
ID_COLUMN = {"checkpoints": "checkpoint_id", "effects": "effect_id", "tool_calls": "call_id"}
TARGET = {"checkpoints": "checkpoint_rows", "effects": "effects", "tool_calls": "tool_calls"}


@dataclass
class BatchResult:
    """Counts of one batch, plus the reasons its quarantined rows were rejected."""

    counts: TableCounts
    reasons: dict[str, int]


def _why(table: str, types: ColumnTypes) -> str:
    cases = "\n".join(reasons(table, types))
    return f"CASE WHEN _reason IS NOT NULL THEN _reason {cases} ELSE NULL END"


def _quarantine(con: duckdb.DuckDBPyConnection, source_id: int, location: str, table: str) -> None:
    """Record the rows of ``_v`` that failed a check, with their reason and raw text."""
    # Re-importing a source must not pile up the same rejections: one record per
    # (location, table, key, reason).
    staged = {d[0] for d in con.execute("SELECT * FROM _staged LIMIT 0").description}
    raw = "coalesce(r._raw_text, CAST(to_json(r) AS VARCHAR))"
    if "_raw_text" not in staged:
        raw = "CAST(to_json(r) AS VARCHAR)"
    con.execute(
        f"""
        INSERT INTO quarantine
        SELECT ?, ?, ?, CAST(k._key AS VARCHAR), k._why,
               left({raw}, {RAW_LIMIT}),
               now()::TIMESTAMP
        FROM _v k LEFT JOIN (SELECT * EXCLUDE (_pos) FROM _raw) r ON r._key = k._key
        WHERE k._why IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM quarantine q WHERE q.source = ? AND q.source_table = ?
              AND q.source_key = CAST(k._key AS VARCHAR) AND q.reason = k._why)""",
        [source_id, location, table, location, table],
    )


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


def _stage(
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
        # (DuckDB threads block behind it for up to the 5 ms switch interval each time)
        con.register("_v_arrow", prestaged.rows)
        try:
            con.execute("CREATE OR REPLACE TEMP TABLE _v AS SELECT * FROM _v_arrow")
        finally:
            con.unregister("_v_arrow")
    row = con.execute("SELECT count(*), count(_why) FROM _v").fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), types


def _typed_with_ids(con: duckdb.DuckDBPyConnection, table: str) -> str:
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
        # them carried each row's documents through a sort: 10 of 62 ms for 4,000 calls)
        twice = con.execute(
            "SELECT count(*) - count(DISTINCT (run_id, given_id)) FROM _v WHERE _why IS NULL"
        ).fetchone()
        if not (twice and twice[0]):
            # a view: copying 4,000 calls with their documents into _typed took 8 ms
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


def _insert_other(
    con: duckdb.DuckDBPyConnection, table: str, source_id: int, typed: str = "_typed"
) -> tuple[int, int]:
    """Insert the new rows of ``typed`` (see :func:`_typed_with_ids`) into ``table`` and
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


def _number_runs(con: duckdb.DuckDBPyConnection) -> bool:
    """Give the batch's new runs their numbers; True when some of its runs were stored before.

    A run without a number has no checkpoints yet, so its valid rows need no look-up in
    ``checkpoint_rows``: a fresh import skips that anti-join entirely.
    """
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _bruns AS SELECT DISTINCT run_id FROM _v WHERE _why IS NULL"
    )
    row = con.execute("SELECT count(*) FROM _bruns JOIN run_keys USING (run_id)").fetchone()
    con.execute(
        "INSERT INTO run_keys SELECT run_id, nextval('run_seq') FROM _bruns "
        "WHERE run_id NOT IN (SELECT run_id FROM run_keys)"
    )
    return bool(row and row[0])


def _insert_checkpoints(
    con: duckdb.DuckDBPyConnection, source_id: int, types: ColumnTypes
) -> tuple[int, int]:
    """Insert the new, valid checkpoints of ``_v`` into the store, update the stored ones
    whose content changed (:mod:`debugger.store.refresh`); returns how many of each.

    ``ckpt_key`` (the write order: head and parent tie-breaks) is ``_pos``, the row's place
    in the import, handed over by the session; so no sort or window runs over the batch.
    Duplicates within the batch and rows already stored are filtered on narrow columns,
    and only when the batch can have them.
    """
    seen_before = _number_runs(con)
    row = con.execute(
        "SELECT count(*) - count(DISTINCT (run_id, checkpoint_id)) FROM _v WHERE _why IS NULL"
    ).fetchone()
    filters = ""
    if row and row[0]:
        # the same checkpoint twice in the batch: the first (in source order) is kept
        filters += (
            " AND v._key IN (SELECT min(_key) FROM _v WHERE _why IS NULL "
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
    inserted = con.execute(
        f"""
        INSERT INTO checkpoint_rows
        SELECT v._pos, k.run_num * {RUN_SHIFT} + (v.step_index + {STEP_OFFSET}), v.run_id,
               v.checkpoint_id, s.parent_id, v.step_index, s.schema_version, v.created_at,
               CASE WHEN v.state_bytes < {LARGE_STATE_BYTES} THEN s.ws END,
               v.state_hash, v.state_bytes, s.tokens_spent, s.steps_spent, s.wall_clock_ms,
               s.pending_effects, s.model_version, s.tool_versions, s.metadata, ?
        FROM _v v JOIN run_keys k USING (run_id)
        JOIN (SELECT _pos, {checkpoint_values(types)} FROM _staged) s ON s._pos = v._pos
        WHERE v._why IS NULL {filters}""",
        [source_id],
    ).fetchone()
    n = int(inserted[0]) if inserted else 0
    if n == 0:
        return 0, updated
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
    large = con.execute(
        f"SELECT count(*) FROM _v WHERE _why IS NULL AND state_bytes >= {LARGE_STATE_BYTES}"
    ).fetchone()
    if large and large[0]:
        con.execute(
            "INSERT INTO large_states SELECT s._pos, CAST(s.working_state AS VARCHAR) "
            f"FROM _staged s JOIN _ins i ON i._pos = s._pos "
            f"WHERE strlen(CAST(s.working_state AS VARCHAR)) >= {LARGE_STATE_BYTES} ORDER BY s._pos"
        )
    con.execute("INSERT INTO _touched SELECT DISTINCT run_id FROM _ins")
    return n, updated


def ingest_batch(
    con: duckdb.DuckDBPyConnection,
    table: str,
    source_id: int,
    location: str,
    prestaged: Prestaged | None = None,
) -> BatchResult:
    """Validate and insert the rows of ``_staged`` (and ``_raw``) into ``table``.

    The caller has registered ``_raw`` (the source batch, with ``_pos``: each row's place in
    the import) and created ``_staged`` (its canonical projection); this runs in the
    caller's transaction. ``prestaged`` is the batch's ``_v`` when it was computed on
    another connection (the same rows :func:`stage_sql` gives here); without it, the
    database must have ``state_hash()`` (the import session registers it).

    Returns:
        The batch's counts and its quarantine reasons.
    """
    read, bad, types = _stage(con, table, prestaged)
    found: dict[str, int] = {}
    if bad:
        _quarantine(con, source_id, location, table)
        found = {
            str(k): int(v)
            for k, v in con.execute(
                "SELECT _why, count(*) FROM _v WHERE _why IS NOT NULL GROUP BY _why"
            ).fetchall()
        }
    valid = read - bad
    updated = 0
    if table == "checkpoints":
        imported, updated = _insert_checkpoints(con, source_id, types)
    else:
        imported, updated = _insert_other(con, table, source_id, _typed_with_ids(con, table))
    _drop_batch_tables(con)
    counts = TableCounts(
        read=read,
        imported=imported,
        already_present=valid - imported - updated,
        quarantined=bad,
        updated=updated,
    )
    return BatchResult(counts=counts, reasons=found)


def _drop_batch_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Free a batch's temp tables now rather than when the next batch replaces them."""
    con.execute("DROP VIEW IF EXISTS _typed_ids")
    for name in ("_v", "_ins", "_bruns", "_typed", "_new", "_upd"):
        con.execute(f"DROP TABLE IF EXISTS {name}")


def derive_parents(con: duckdb.DuckDBPyConnection, source_id: int) -> None:
    """Give rows of a source that carries no parent column the previous checkpoint as parent.

    Used for native sources without ``parent_id``: the chain is the run's checkpoints in
    (created_at, step_index, insertion) order.
    """
    con.execute(
        """
        UPDATE checkpoint_rows AS c SET parent_id = p.prev
        FROM (
            SELECT ckpt_key, lag(checkpoint_id) OVER (
                PARTITION BY run_id ORDER BY created_at NULLS FIRST, step_index, ckpt_key
            ) AS prev
            FROM checkpoint_rows WHERE run_id IN (SELECT run_id FROM _touched)
        ) p
        WHERE c.ckpt_key = p.ckpt_key AND c.source_id = ? AND c.parent_id IS NULL
          AND p.prev IS NOT NULL""",
        [source_id],
    )
