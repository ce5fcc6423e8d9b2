"""Writing imported rows into the store: validate, deduplicate, insert; one transaction a batch.

A flavour hands over a *staged* relation: the canonical columns of one table (any SQL type;
values are validated here, not trusted), plus ``_key`` (how to find the row in the source) and
optionally ``_reason`` (a reason the flavour already found, such as an undecodable value) and
``_raw_text`` (the raw row for the quarantine). Validation is plain SQL over the whole batch,
so it runs vectorised in DuckDB instead of row by row in Python.

Every row read ends in exactly one of: imported, already present (same identity already in the
store, or twice in the source), quarantined (with its reason). The counts are returned so the
report can show ``read = imported + already present + quarantined``.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from debugger.model import TableCounts
from debugger.store.schema import LARGE_STATE_BYTES, RUN_SHIFT, STEP_OFFSET

CHECKPOINT_COLUMNS = (
    "run_id", "checkpoint_id", "parent_id", "step_index", "schema_version", "created_at",
    "working_state", "tokens_spent", "steps_spent", "wall_clock_ms", "pending_effects",
    "model_version", "tool_versions", "metadata",
)  # fmt: skip
EFFECT_COLUMNS = (
    "run_id", "effect_id", "step_index", "idempotency_key", "tool", "args", "status",
    "result", "created_at",
)  # fmt: skip
TOOL_CALL_COLUMNS = (
    "run_id", "call_id", "step_index", "seq", "kind", "name", "request", "response",
    "error", "idempotency_key", "is_write",
)  # fmt: skip
TABLE_COLUMNS = {
    "checkpoints": CHECKPOINT_COLUMNS,
    "effects": EFFECT_COLUMNS,
    "tool_calls": TOOL_CALL_COLUMNS,
}
RAW_LIMIT = 4096
"""Raw rows kept in quarantine are cut to this many characters."""

_INT = "regexp_full_match(trim(CAST({c} AS VARCHAR)), '-?[0-9]+')"


def _text(col: str) -> str:
    return f"nullif(trim(CAST({col} AS VARCHAR)), '')"


def _int_check(col: str, required: bool, non_negative: bool) -> list[str]:
    checks = []
    if required:
        checks.append(f"WHEN {col} IS NULL THEN 'missing {col}'")
    checks.append(
        f"WHEN {col} IS NOT NULL AND NOT {_INT.format(c=col)} "
        f"THEN '{col} is not an integer: ' || left(CAST({col} AS VARCHAR), 40)"
    )
    if non_negative:
        checks.append(
            f"WHEN {col} IS NOT NULL AND TRY_CAST(CAST({col} AS VARCHAR) AS BIGINT) < 0 "
            f"THEN 'negative {col}: ' || CAST({col} AS VARCHAR)"
        )
    return checks


def _json_check(col: str, required: bool, json_type: str | None) -> list[str]:
    checks = []
    if required:
        checks.append(f"WHEN {col} IS NULL THEN 'missing {col}'")
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


def _ts_check(col: str) -> list[str]:
    return [
        f"WHEN {col} IS NOT NULL AND TRY_CAST(CAST({col} AS VARCHAR) AS TIMESTAMPTZ) IS NULL "
        f"THEN '{col} is not a timestamp: ' || left(CAST({col} AS VARCHAR), 40)"
    ]


def _ts(col: str) -> str:
    return f"(TRY_CAST(CAST({col} AS VARCHAR) AS TIMESTAMPTZ) AT TIME ZONE 'UTC')"


def _required_text(col: str) -> list[str]:
    return [f"WHEN {_text(col)} IS NULL THEN 'missing {col}'"]


REASONS: dict[str, list[str]] = {
    "checkpoints": [
        *_required_text("run_id"),
        *_int_check("step_index", True, False),
        # lookup_key keeps 32 bits for the step: a larger one would land in another run
        f"WHEN NOT (TRY_CAST(CAST(step_index AS VARCHAR) AS BIGINT) "
        f"BETWEEN {-STEP_OFFSET} AND {STEP_OFFSET - 1}) "
        f"THEN 'step_index out of range: ' || CAST(step_index AS VARCHAR)",
        *_json_check("working_state", True, None),
        *_int_check("schema_version", False, True),
        *_ts_check("created_at"),
        *_int_check("tokens_spent", False, True),
        *_int_check("steps_spent", False, True),
        *_int_check("wall_clock_ms", False, True),
        *_json_check("pending_effects", False, "ARRAY"),
        *_json_check("tool_versions", False, "OBJECT"),
        *_json_check("metadata", False, "OBJECT"),
    ],
    "effects": [
        *_required_text("run_id"),
        *_int_check("step_index", True, False),
        *_required_text("tool"),
        "WHEN status IS NULL OR lower(CAST(status AS VARCHAR)) NOT IN "
        "('pending', 'committed', 'failed', 'unknown') "
        "THEN 'effect status must be pending, committed, failed or unknown: ' "
        "|| coalesce(left(CAST(status AS VARCHAR), 40), 'missing')",
        *_json_check("args", False, None),
        *_json_check("result", False, None),
        *_ts_check("created_at"),
    ],
    "tool_calls": [
        *_required_text("run_id"),
        *_int_check("step_index", True, False),
        *_int_check("seq", True, True),
        "WHEN kind IS NULL OR lower(CAST(kind AS VARCHAR)) NOT IN ('tool', 'model') "
        "THEN 'call kind must be tool or model: ' "
        "|| coalesce(left(CAST(kind AS VARCHAR), 40), 'missing')",
        *_required_text("name"),
        *_json_check("request", False, None),
        *_json_check("response", False, None),
        "WHEN is_write IS NOT NULL AND TRY_CAST(CAST(is_write AS VARCHAR) AS BOOLEAN) IS NULL "
        "THEN 'is_write is not a boolean'",
    ],
}


def _int(col: str) -> str:
    return f"TRY_CAST(CAST({col} AS VARCHAR) AS BIGINT)"


def _json(col: str, default: str | None = None) -> str:
    expr = f"CAST({col} AS VARCHAR)"
    return f"coalesce({expr}, '{default}')::JSON" if default else f"{expr}::JSON"


# Typed, canonical values of a valid row; `s` is the staged relation.
TYPED: dict[str, str] = {
    "checkpoints": f"""
        {_text("run_id")} AS run_id, {_text("parent_id")} AS parent_id,
        {_int("step_index")} AS step_index, {_int("schema_version")} AS schema_version,
        {_ts("created_at")} AS created_at, CAST(working_state AS VARCHAR) AS ws,
        coalesce({_int("tokens_spent")}, 0) AS tokens_spent,
        coalesce({_int("steps_spent")}, 0) AS steps_spent,
        coalesce({_int("wall_clock_ms")}, 0) AS wall_clock_ms,
        {_json("pending_effects", "[]")} AS pending_effects,
        {_text("model_version")} AS model_version,
        {_json("tool_versions", "{}")} AS tool_versions,
        {_json("metadata", "{}")} AS metadata,
        {_text("checkpoint_id")} AS given_id""",
    "effects": f"""
        {_text("run_id")} AS run_id, {_int("step_index")} AS step_index,
        {_text("idempotency_key")} AS idempotency_key, {_text("tool")} AS tool,
        {_json("args")} AS args, lower(CAST(status AS VARCHAR)) AS status,
        {_json("result")} AS result, {_ts("created_at")} AS created_at,
        {_text("effect_id")} AS given_id""",
    "tool_calls": f"""
        {_text("run_id")} AS run_id, {_int("step_index")} AS step_index,
        {_int("seq")} AS seq, lower(CAST(kind AS VARCHAR)) AS kind, {_text("name")} AS name,
        {_json("request")} AS request, {_json("response")} AS response,
        {_text("error")} AS error, {_text("idempotency_key")} AS idempotency_key,
        coalesce(TRY_CAST(CAST(is_write AS VARCHAR) AS BOOLEAN), false) AS is_write,
        {_text("call_id")} AS given_id""",
}

# Identity of a row when the source gives none: a hash of its content. Effects and tool
# calls also get an occurrence number, so that the same email really sent twice stays two
# rows while a re-import of the same source still adds nothing.
CONTENT_ID: dict[str, str] = {
    # state_hash is md5(ws), computed once for both uses
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
    """Counts of one batch, plus the runs it touched."""

    counts: TableCounts
    reasons: dict[str, int]


def stage_reasons(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Create ``_checked`` from ``_staged``: every staged row with its first failing reason."""
    cases = "\n".join(REASONS[table])
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _checked AS
        SELECT *, CASE WHEN _reason IS NOT NULL THEN _reason {cases} ELSE NULL END AS _why
        FROM _staged"""
    )


def _quarantine(con: duckdb.DuckDBPyConnection, source_id: int, location: str, table: str) -> None:
    # Re-importing a source must not pile up the same rejections: one record per
    # (location, table, key, reason).
    staged = {d[0] for d in con.execute("SELECT * FROM _checked LIMIT 0").description}
    raw = "coalesce(k._raw_text, CAST(to_json(r) AS VARCHAR))"
    if "_raw_text" not in staged:
        raw = "CAST(to_json(r) AS VARCHAR)"
    con.execute(
        f"""
        INSERT INTO quarantine
        SELECT ?, ?, ?, CAST(k._key AS VARCHAR), k._why,
               left({raw}, {RAW_LIMIT}),
               now()::TIMESTAMP
        FROM _checked k LEFT JOIN _raw r ON r._key = k._key
        WHERE k._why IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM quarantine q WHERE q.source = ? AND q.source_table = ?
              AND q.source_key = CAST(k._key AS VARCHAR) AND q.reason = k._why)""",
        [source_id, location, table, location, table],
    )


def _typed_with_ids(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Create ``_typed``: valid rows, typed, each with its identity and occurrence number."""
    id_col = ID_COLUMN[table]
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _typed0 AS
        SELECT _key, {TYPED[table]} FROM _checked WHERE _why IS NULL"""
    )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _typed1 AS "
        f"SELECT *, {CONTENT_ID[table]} AS _content FROM _typed0"
    )
    if table == "checkpoints":
        id_expr = "coalesce(given_id, _content)"
    else:
        # occurrence numbers continue across batches of one import through _occ
        con.execute(f"CREATE TEMP TABLE IF NOT EXISTS _occ_{table} (_content VARCHAR, n BIGINT)")
        id_expr = (
            "coalesce(given_id, _content || '#' || (coalesce(o.n, 0) + "
            "row_number() OVER (PARTITION BY t._content ORDER BY t._key)))"
        )
    join = "" if table == "checkpoints" else f"LEFT JOIN _occ_{table} o USING (_content)"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _typed2 AS "
        f"SELECT t.*, {id_expr} AS {id_col} FROM _typed1 t {join}"
    )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _typed AS
        SELECT *, row_number() OVER (PARTITION BY run_id, {id_col} ORDER BY _key) AS _dup
        FROM _typed2"""
    )
    if table != "checkpoints":
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _occ_{table} AS
            SELECT _content, max(n) AS n FROM (
                SELECT _content, n FROM _occ_{table}
                UNION ALL
                SELECT _content, count(*) FROM _typed1 WHERE given_id IS NULL GROUP BY _content
            ) GROUP BY _content"""
        )


def _mark_new(con: duckdb.DuckDBPyConnection, table: str) -> None:
    id_col = ID_COLUMN[table]
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _new AS
        SELECT t.* FROM _typed t
        WHERE t._dup = 1 AND NOT EXISTS (
            SELECT 1 FROM {TARGET[table]} x
            WHERE x.run_id = t.run_id AND x.{id_col} = t.{id_col})"""
    )


def _number_runs(con: duckdb.DuckDBPyConnection) -> bool:
    """Give the batch's new runs their numbers; True when some of its runs were stored before.

    A run without a number has no checkpoints yet, so its valid rows need no look-up in
    ``checkpoint_rows``: a fresh import skips that anti-join entirely.
    """
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _bruns AS SELECT DISTINCT {_text('run_id')} AS run_id "
        "FROM _checked WHERE _why IS NULL"
    )
    row = con.execute("SELECT count(*) FROM _bruns JOIN run_keys USING (run_id)").fetchone()
    con.execute(
        "INSERT INTO run_keys SELECT run_id, nextval('run_seq') FROM _bruns "
        "WHERE run_id NOT IN (SELECT run_id FROM run_keys)"
    )
    return bool(row and row[0])


def _insert_checkpoints(con: duckdb.DuckDBPyConnection, source_id: int) -> None:
    """Insert the batch's new checkpoints (``_checked`` rows that pass) into the store.

    Materialises the wide rows once (``_v``: typed, hashed, identified); identity, in-batch
    duplicates, the already-present check and write-order numbering run on narrow columns
    (``_keep``), so no sort carries the states along.
    """
    seen_before = _number_runs(con)
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _v AS
        WITH t AS (
            SELECT _key, {TYPED["checkpoints"]}, md5(ws) AS state_hash, strlen(ws) AS state_bytes
            FROM _checked WHERE _why IS NULL
        )
        SELECT *, coalesce(given_id, {CONTENT_ID["checkpoints"]}) AS checkpoint_id FROM t"""
    )
    # the anti-join only looks at the batch's runs, and only when one was stored before
    present = (
        "AND NOT EXISTS (SELECT 1 FROM checkpoint_rows x "
        "WHERE x.run_id IN (SELECT run_id FROM _bruns) "
        "AND x.run_id = t.run_id AND x.checkpoint_id = t.checkpoint_id)"
        if seen_before
        else ""
    )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _keep AS
        WITH t AS (
            SELECT _key, run_id, checkpoint_id, step_index, created_at FROM _v
            QUALIFY row_number() OVER (PARTITION BY run_id, checkpoint_id ORDER BY _key) = 1
        ),
        n AS (SELECT * FROM t WHERE true {present})
        -- ckpt_key is the write order (head and parent tie-breaks): numbered after sorting,
        -- because nextval() in a parallel projection hands out keys in no particular order
        SELECT n._key, n.run_id,
               (SELECT coalesce(max(ckpt_key), 0) FROM checkpoint_rows) + row_number() OVER (
                   ORDER BY n.run_id, n.step_index, n.created_at, n._key) AS ckpt_key,
               k.run_num * {RUN_SHIFT} + (n.step_index + {STEP_OFFSET}) AS lookup_key
        FROM n JOIN run_keys k USING (run_id)"""
    )
    con.execute(
        f"""
        INSERT INTO checkpoint_rows
        SELECT k.ckpt_key, k.lookup_key, v.run_id, v.checkpoint_id, v.parent_id, v.step_index,
               v.schema_version, v.created_at,
               CASE WHEN v.state_bytes < {LARGE_STATE_BYTES} THEN v.ws::JSON END,
               v.state_hash, v.state_bytes, v.tokens_spent, v.steps_spent, v.wall_clock_ms,
               v.pending_effects, v.model_version, v.tool_versions, v.metadata, ?
        FROM _v v JOIN _keep k USING (_key) ORDER BY k.ckpt_key""",
        [source_id],
    )
    con.execute(
        f"INSERT INTO large_states SELECT k.ckpt_key, v.ws FROM _v v JOIN _keep k USING (_key) "
        f"WHERE v.state_bytes >= {LARGE_STATE_BYTES} ORDER BY k.ckpt_key"
    )
    con.execute("INSERT INTO _touched SELECT DISTINCT run_id FROM _keep")


def _insert_other(con: duckdb.DuckDBPyConnection, table: str, source_id: int) -> None:
    cols = ", ".join(TABLE_COLUMNS[table])
    con.execute(f"INSERT INTO {table} ({cols}, source_id) SELECT {cols}, ? FROM _new", [source_id])


def ingest_batch(
    con: duckdb.DuckDBPyConnection, table: str, source_id: int, location: str
) -> BatchResult:
    """Validate and insert the rows of ``_staged`` (and ``_raw``) into ``table``.

    The caller has registered ``_raw`` (the source batch) and created ``_staged`` (its
    canonical projection); this runs in the caller's transaction.

    Returns:
        The batch's counts and its quarantine reasons.
    """
    stage_reasons(con, table)
    _quarantine(con, source_id, location, table)
    if table == "checkpoints":
        _insert_checkpoints(con, source_id)
        counted = "(SELECT count(*) FROM _keep), (SELECT count(*) FROM _v)"
    else:
        _typed_with_ids(con, table)
        _mark_new(con, table)
        _insert_other(con, table, source_id)
        con.execute("INSERT INTO _touched SELECT DISTINCT run_id FROM _new")
        counted = "(SELECT count(*) FROM _new), (SELECT count(*) FROM _typed)"
    row = con.execute(f"SELECT (SELECT count(*) FROM _checked), {counted}").fetchone()
    assert row is not None
    read, imported, valid = (int(x) for x in row)
    reasons = dict(
        con.execute(
            "SELECT _why, count(*) FROM _checked WHERE _why IS NOT NULL GROUP BY _why"
        ).fetchall()
    )
    _drop_batch_tables(con)
    counts = TableCounts(
        read=read,
        imported=imported,
        already_present=valid - imported,
        quarantined=read - valid,
    )
    return BatchResult(counts=counts, reasons={str(k): int(v) for k, v in reasons.items()})


def _drop_batch_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Free a batch's temp tables now rather than when the next batch replaces them."""
    for name in ("_checked", "_v", "_keep", "_bruns", "_typed0", "_typed1", "_typed2",
                 "_typed", "_new"):  # fmt: skip
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
