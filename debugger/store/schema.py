"""The store's own schema: an append-only list of migrations, each run in a transaction.

The store records the versions it has applied in ``store_migrations`` and migrates itself
on open, as it tells its users to do with their checkpoints. A store written by a newer
Stepscope (a version this code does not know) is refused rather than misread.

Physical layout, and why:

- ``checkpoint_rows`` holds every checkpoint; ``lookup_key`` (run number << 32 | step offset)
  is a single BIGINT with an ART index, because DuckDB does not use a two-column index for
  point lookups (it scans every row group).
- States of ``SPLIT_MIN_BYTES`` or more whose array elements can be shared (messages) are
  stored as a skeleton (``split_states``) plus parts kept once by content hash
  (``state_parts``): :mod:`debugger.store.state_parts`.
- Other states of ``LARGE_STATE_BYTES`` or more live in ``large_states`` in a column stored
  uncompressed: DuckDB compresses long strings with ZSTD per segment, so fetching one 1 MB
  state otherwise decompresses its neighbours too. Smaller ones are compressed with
  dictionary+FSST, which DuckDB decompresses one string at a time.
- The file keeps DuckDB's block size (256 KiB): smaller blocks cut a small store's unused
  block tails but make DuckDB train FSST on more, smaller segments, a slower import
  (docs/store.md has the figures).
- ``checkpoints`` is a view joining the three, so SQL over ``working_state`` sees every state.
- The JSON documents of ``checkpoint_rows`` are stored as the text that was validated
  (VARCHAR), so an import parses each once; the view presents them as JSON.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from debugger.errors import StoreError

LARGE_STATE_BYTES = 32 * 1024
"""States at least this large that do not split are stored uncompressed in ``large_states``."""

STEP_OFFSET = 1 << 31
"""Added to step_index in lookup_key so that negative steps (LangGraph's -1) fit."""

RUN_SHIFT = 1 << 32
"""run_num is multiplied by this in lookup_key."""

ROW_GROUP_SIZE = 8_192
"""Rows per DuckDB row group in the store (DuckDB's default is 122,880).

DuckDB writes an append's full row groups into the file while the transaction runs; the
rest waits in memory until the commit, and a commit that leaves the table's last group part
filled has the next commit rewrite it. With 122,880-row groups of large states nothing is
written before the commit, and each commit rewrites the growing last group. Batches are a
power of two rows, so imports commit at group boundaries. Each full
group is compressed on one thread: at 8,192 rows (16 MB of 2 KB states) a 20,000-row import
fills two and compresses them on two cores, where 16,384 gave it one (its import 0.38 ->
0.30 s; the file 5% larger; 200,000 rows and the 1M store's reads unchanged:
benchmarks/README.md). A store written with another size keeps its groups. DuckDB does not
keep the size in the file: the store is attached with it."""


@dataclass(frozen=True)
class StoreMigration:
    """One step of the store's own schema history."""

    version: int
    name: str
    apply: Callable[[duckdb.DuckDBPyConnection], None]


_V1_ROWS = """
        CREATE TABLE checkpoint_rows (
            ckpt_key BIGINT, lookup_key BIGINT, run_id VARCHAR, checkpoint_id VARCHAR,
            parent_id VARCHAR, step_index BIGINT, schema_version INTEGER,
            created_at TIMESTAMP, working_state JSON, state_hash VARCHAR,
            state_bytes BIGINT, tokens_spent BIGINT, steps_spent BIGINT,
            wall_clock_ms BIGINT, pending_effects JSON, model_version VARCHAR,
            tool_versions JSON, metadata JSON, source_id BIGINT
        )"""

_V1_VIEW = """
        CREATE VIEW checkpoints AS
        SELECT c.run_id, c.checkpoint_id, c.parent_id, c.step_index, c.schema_version,
               c.created_at, coalesce(c.working_state, l.working_state::JSON) AS working_state,
               c.state_hash, c.state_bytes, c.tokens_spent, c.steps_spent, c.wall_clock_ms,
               c.pending_effects, c.model_version, c.tool_versions, c.metadata, c.source_id
        FROM checkpoint_rows c LEFT JOIN large_states l USING (ckpt_key)"""


def _create_tables(
    con: duckdb.DuckDBPyConnection, rows_sql: str, view_sql: str, more: tuple[str, ...] = ()
) -> None:
    """Every table, sequence, index and view, with ``checkpoint_rows``, the ``checkpoints``
    view and the statements ``more`` (the state tables of version 4, the run macro of
    version 6) as given (they are what changed between versions)."""
    con.execute("CREATE SEQUENCE IF NOT EXISTS source_seq START 1")
    con.execute("CREATE SEQUENCE IF NOT EXISTS run_seq START 1")
    con.execute("CREATE SEQUENCE IF NOT EXISTS ckpt_seq START 1")
    con.execute(
        """
        CREATE TABLE sources (
            source_id BIGINT, kind VARCHAR, flavour VARCHAR, location VARCHAR,
            imported_at TIMESTAMP, rows_read BIGINT, imported BIGINT,
            already_present BIGINT, quarantined BIGINT, report JSON
        )"""
    )
    con.execute("CREATE TABLE run_keys (run_id VARCHAR, run_num BIGINT)")
    con.execute(rows_sql)
    con.execute(
        "CREATE TABLE large_states (ckpt_key BIGINT, "
        "working_state VARCHAR USING COMPRESSION uncompressed)"
    )
    con.execute("CREATE INDEX checkpoint_lookup ON checkpoint_rows (lookup_key)")
    con.execute("CREATE INDEX large_state_key ON large_states (ckpt_key)")
    for sql in more:
        con.execute(sql)
    con.execute(view_sql)
    con.execute(
        """
        CREATE TABLE effects (
            run_id VARCHAR, effect_id VARCHAR, step_index BIGINT, idempotency_key VARCHAR,
            tool VARCHAR, args JSON, status VARCHAR, result JSON, created_at TIMESTAMP,
            source_id BIGINT
        )"""
    )
    con.execute(
        """
        CREATE TABLE tool_calls (
            run_id VARCHAR, call_id VARCHAR, step_index BIGINT, seq BIGINT, kind VARCHAR,
            name VARCHAR, request JSON, response JSON, error VARCHAR,
            idempotency_key VARCHAR, is_write BOOLEAN, source_id BIGINT
        )"""
    )
    con.execute(
        """
        CREATE TABLE quarantine (
            source_id BIGINT, source VARCHAR, source_table VARCHAR, source_key VARCHAR,
            reason VARCHAR, raw VARCHAR, quarantined_at TIMESTAMP
        )"""
    )
    con.execute(
        """
        CREATE TABLE runs (
            run_id VARCHAR, run_num BIGINT, agent VARCHAR, status VARCHAR,
            status_reason VARCHAR, first_step BIGINT, last_step BIGINT,
            checkpoint_count BIGINT, first_at TIMESTAMP, last_at TIMESTAMP,
            tokens_spent BIGINT, steps_spent BIGINT, wall_clock_ms BIGINT, limits JSON,
            model_versions JSON, schema_versions JSON, last_error VARCHAR,
            pending_count BIGINT, head_checkpoint_id VARCHAR, replay_of VARCHAR,
            replay_from_step BIGINT
        )"""
    )


def _v1_initial(con: duckdb.DuckDBPyConnection) -> None:
    _create_tables(con, _V1_ROWS, _V1_VIEW)


_V2_ROWS = """
    CREATE TABLE checkpoint_rows (
        ckpt_key BIGINT, lookup_key BIGINT, run_id VARCHAR {c}, checkpoint_id VARCHAR {c},
        parent_id VARCHAR {c}, step_index BIGINT, schema_version INTEGER,
        created_at TIMESTAMP, working_state VARCHAR {u}, state_hash VARCHAR {c},
        state_bytes BIGINT, tokens_spent BIGINT, steps_spent BIGINT,
        wall_clock_ms BIGINT, pending_effects VARCHAR {c}, model_version VARCHAR {c},
        tool_versions VARCHAR {c}, metadata VARCHAR {c}, source_id BIGINT
    )""".format(c="USING COMPRESSION dict_fsst", u="USING COMPRESSION uncompressed")

_V2_VIEW = """
    CREATE VIEW checkpoints AS
    SELECT c.run_id, c.checkpoint_id, c.parent_id, c.step_index, c.schema_version,
           c.created_at, CAST(coalesce(c.working_state, l.working_state) AS JSON) AS working_state,
           c.state_hash, c.state_bytes, c.tokens_spent, c.steps_spent, c.wall_clock_ms,
           CAST(c.pending_effects AS JSON) AS pending_effects, c.model_version,
           CAST(c.tool_versions AS JSON) AS tool_versions, CAST(c.metadata AS JSON) AS metadata,
           c.source_id
    FROM checkpoint_rows c LEFT JOIN large_states l USING (ckpt_key)"""


def _v2_documents_as_text(con: duckdb.DuckDBPyConnection) -> None:
    """Store the checkpoints' JSON documents as the text that was validated, compressed one way.

    A JSON column parses every value again on insert, after validation had parsed it
    already; the ``checkpoints`` view still shows them as JSON.

    States are stored uncompressed, like the large ones: compressing them would be most of
    an import's time (DuckDB compresses at commit, on one thread), and it buys no read speed
    (ZSTD, which DuckDB picks for 2 KB strings on its own, slows a point lookup, as it
    decompresses a whole vector of states). The cost is disk: about the states' size, half
    of what the same rows take in SQLite. The other text columns are small and repetitive;
    they are forced to dictionary+FSST, which skips DuckDB trying every other method on
    every segment.
    """
    con.execute("DROP VIEW checkpoints")
    con.execute("DROP INDEX checkpoint_lookup")
    con.execute("ALTER TABLE checkpoint_rows RENAME TO checkpoint_rows_v1")
    con.execute(_V2_ROWS)
    con.execute(
        """
        INSERT INTO checkpoint_rows
        SELECT ckpt_key, lookup_key, run_id, checkpoint_id, parent_id, step_index,
               schema_version, created_at, CAST(working_state AS VARCHAR), state_hash,
               state_bytes, tokens_spent, steps_spent, wall_clock_ms,
               CAST(pending_effects AS VARCHAR), model_version, CAST(tool_versions AS VARCHAR),
               CAST(metadata AS VARCHAR), source_id
        FROM checkpoint_rows_v1 ORDER BY ckpt_key"""
    )
    con.execute("DROP TABLE checkpoint_rows_v1")
    con.execute("CREATE INDEX checkpoint_lookup ON checkpoint_rows (lookup_key)")
    con.execute(_V2_VIEW)


def _v3_state_hashes_xxh3(con: duckdb.DuckDBPyConnection) -> None:
    """Re-hash every state with XXH3-128 (was MD5), and rename the checkpoints named by it.

    MD5 was a large part of an import's time (see :mod:`debugger.store.state_hash`). A checkpoint
    imported without an id of its own is named ``left(md5(run|step|time|state_hash), 20)``;
    those names are recomputed with the new hash, and the parents and run heads that point
    at them follow, so re-importing the same source still finds every row already present.
    """
    from debugger.store import state_hash

    row = con.execute("SELECT count(*) FROM checkpoint_rows").fetchone()
    if not row or not row[0]:
        # a new store: nothing to re-hash (and registering the function costs DuckDB's
        # slow import of pandas before a new store's first import could start)
        return
    # reading every state would otherwise fill DuckDB's cache (80% of RAM by default), some
    # GB for a store of 1M checkpoints. Migrations run as a store is opened,
    # before anything could set the limit, so it is reset to the default after.
    con.execute("SET memory_limit = '512MB'")
    try:
        content = "left(md5(concat_ws('|', c.run_id, c.step_index, c.created_at, {})), 20)"
        with state_hash.registered(con):
            con.execute(
                f"""
                CREATE OR REPLACE TEMP TABLE _rehash AS
                SELECT ckpt_key, run_id, checkpoint_id, new_hash,
                       checkpoint_id = {content.format("c.state_hash")} AS named_by_content,
                       {content.format("new_hash")} AS new_id
                FROM (SELECT c.*, {state_hash.SQL_NAME}(coalesce(c.working_state, l.working_state))
                             AS new_hash
                      FROM checkpoint_rows c LEFT JOIN large_states l USING (ckpt_key)) c"""
            )
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _renamed AS SELECT run_id, checkpoint_id AS old_id, "
            "new_id FROM _rehash WHERE named_by_content"
        )
        con.execute(
            """
            UPDATE checkpoint_rows AS c SET state_hash = r.new_hash,
                checkpoint_id = CASE WHEN r.named_by_content THEN r.new_id ELSE c.checkpoint_id END
            FROM _rehash r WHERE c.ckpt_key = r.ckpt_key"""
        )
        con.execute(
            """
            UPDATE checkpoint_rows AS c SET parent_id = r.new_id FROM _renamed r
            WHERE c.run_id = r.run_id AND c.parent_id = r.old_id"""
        )
        con.execute(
            """
            UPDATE runs SET head_checkpoint_id = r.new_id FROM _renamed r
            WHERE runs.run_id = r.run_id AND runs.head_checkpoint_id = r.old_id"""
        )
        con.execute("DROP TABLE _rehash")
        con.execute("DROP TABLE _renamed")
    finally:
        con.execute("RESET memory_limit")


_V4_ROWS = _V2_ROWS.replace(
    "working_state VARCHAR USING COMPRESSION uncompressed",
    "working_state VARCHAR USING COMPRESSION dict_fsst",
)

_V4_PARTS = (
    "CREATE TABLE split_states (ckpt_key BIGINT, skeleton VARCHAR USING COMPRESSION dict_fsst, "
    "cuts INTEGER[], refs BIGINT[])",
    "CREATE TABLE state_parts (part_hash BIGINT, part VARCHAR USING COMPRESSION dict_fsst)",
    "CREATE INDEX split_state_key ON split_states (ckpt_key)",
    "CREATE INDEX state_part_hash ON state_parts (part_hash)",
)

_SPLIT_TEXTS = """
    SELECT s.ckpt_key,
           string_agg(substring(s.skeleton, u.a + 1, u.b - u.a) || coalesce(p.part, ''), ''
                      ORDER BY u.i) AS text
    FROM (SELECT * FROM split_states{where}) s,
         LATERAL (SELECT i, CASE WHEN i = 1 THEN 0 ELSE s.cuts[i - 1] END AS a,
                         coalesce(s.cuts[i], length(s.skeleton)) AS b, s.refs[i] AS ref
                  FROM (SELECT unnest(generate_series(1, len(s.refs) + 1)) AS i)) u
    LEFT JOIN state_parts p ON p.{part_key} = u.ref
    GROUP BY s.ckpt_key"""

SPLIT_TEXTS = _SPLIT_TEXTS.format(part_key="part_num", where="")
"""Every split text in SQL: the skeleton's pieces with the parts between them
(offsets count characters, as ``substring`` and Python do). The Python read
(:func:`debugger.store.reads.split_texts`) joins them the same way, for the texts it needs.
DuckDB computes this for every split state of the store whenever a query reads
``working_state`` from the view (it pushes no filter into it): docs/store.md says so.
Before version 5 a state referred to its parts by hash (``part_key`` ``part_hash``)."""


def split_texts_sql(where: str) -> str:
    """:data:`SPLIT_TEXTS` of the ``split_states`` rows ``where`` selects (a ``WHERE ...``
    on ``ckpt_key``): the states' keys are >= 0, the metadata's below
    (:mod:`debugger.store.metadata_split`)."""
    return _SPLIT_TEXTS.format(part_key="part_num", where=f" {where}")


_VIEW = """
    CREATE VIEW checkpoints AS
    SELECT c.run_id, c.checkpoint_id, c.parent_id, c.step_index, c.schema_version,
           c.created_at,
           CAST(coalesce(c.working_state, l.working_state, r.text) AS JSON) AS working_state,
           c.state_hash, c.state_bytes, c.tokens_spent, c.steps_spent, c.wall_clock_ms,
           CAST(c.pending_effects AS JSON) AS pending_effects, c.model_version,
           CAST(c.tool_versions AS JSON) AS tool_versions, CAST({metadata} AS JSON) AS metadata,
           c.source_id
    FROM checkpoint_rows c LEFT JOIN large_states l USING (ckpt_key)
    LEFT JOIN ({split_texts}) r USING (ckpt_key){join_metadata}"""

_V4_VIEW = _VIEW.format(
    split_texts=_SPLIT_TEXTS.format(part_key="part_hash", where=""),
    metadata="c.metadata",
    join_metadata="",
)
_V5_VIEW = _VIEW.format(split_texts=SPLIT_TEXTS, metadata="c.metadata", join_metadata="")
_V6_VIEW = _VIEW.format(
    split_texts=split_texts_sql("WHERE ckpt_key >= 0"),
    metadata="coalesce(m.text, c.metadata)",
    join_metadata=(
        f"\n    LEFT JOIN ({split_texts_sql('WHERE ckpt_key < 0')}) m "
        "ON m.ckpt_key = -1 - c.ckpt_key"
    ),
)

_RUN_DOCUMENTS = split_texts_sql("WHERE ckpt_key IN (SELECT -1 - ckpt_key FROM c)")
_V6_RUN_MACRO = (
    "CREATE MACRO checkpoints_of(run) AS TABLE\n"
    "    WITH c AS (SELECT * FROM checkpoint_rows WHERE run_id = run)\n"
    + _VIEW.format(
        split_texts=split_texts_sql("WHERE ckpt_key IN (SELECT ckpt_key FROM c)"),
        metadata="coalesce(m.text, c.metadata)",
        join_metadata=f"\n    LEFT JOIN ({_RUN_DOCUMENTS}) m ON m.ckpt_key = -1 - c.ckpt_key",
    )
    .replace("CREATE VIEW checkpoints AS", "", 1)
    .replace("FROM checkpoint_rows c LEFT JOIN", "FROM c LEFT JOIN", 1)
)
"""``checkpoints_of('<run>')``: the ``checkpoints`` view's rows of one run, its split texts
rebuilt for that run alone. The view rebuilds every split text of the store whenever a query
reads ``working_state`` or ``metadata`` (DuckDB pushes no filter into the rebuild: 4.4-14 s
for one run of a 20,000-checkpoint message-heavy store, and it grows with the store); the
macro takes the run first (one run of the 1M-checkpoint message-heavy store: 50-90 ms)."""

MIGRATION_RANGE = 500
"""Checkpoints whose states the migration to version 4 reads at a time (a bound on memory:
500 states of 1 MB are 500 MB of text; message-heavy states are ~100 KB)."""


def _v4_states_split_and_compressed(con: duckdb.DuckDBPyConnection) -> None:
    """Store each shared part of the large states once, and compress the small states.

    States of ``SPLIT_MIN_BYTES`` or more that hold array elements worth sharing (messages)
    are cut into a skeleton (``split_states``) and parts stored once by content hash
    (``state_parts``): see :mod:`debugger.store.state_parts`. The other states stay whole;
    ``checkpoint_rows.working_state`` is rebuilt with dictionary+FSST compression, which
    DuckDB decompresses one string at a time (a point read costs what it did uncompressed,
    where ZSTD decompressed a whole vector). docs/store.md has the figures.
    """
    from debugger.store import state_write
    from debugger.store.state_parts import SPLIT_MIN_BYTES

    for sql in _V4_PARTS:
        con.execute(sql)
    con.execute("SET memory_limit = '512MB'")  # see _v3_state_hashes_xxh3
    try:
        state_write.start(con)
        bounds = con.execute(
            f"SELECT min(ckpt_key), max(ckpt_key) FROM checkpoint_rows "
            f"WHERE state_bytes >= {SPLIT_MIN_BYTES}"
        ).fetchone()
        if bounds and bounds[0] is not None:
            low, high = int(bounds[0]), int(bounds[1])
            for first in range(low, high + 1, MIGRATION_RANGE):
                state_write.cut(
                    con,
                    "SELECT c.ckpt_key, coalesce(c.working_state, l.working_state), c.state_bytes "
                    "FROM checkpoint_rows c LEFT JOIN large_states l USING (ckpt_key) "
                    f"WHERE c.state_bytes >= {SPLIT_MIN_BYTES} AND c.ckpt_key BETWEEN ? AND ?",
                    [first, first + MIGRATION_RANGE - 1],
                )
        state_write.settle(con, numbered=False)  # by hash, as version 4 referred to parts
        con.execute("INSERT INTO split_states SELECT * FROM _split ORDER BY ckpt_key")
        con.execute("DELETE FROM large_states WHERE ckpt_key IN (SELECT ckpt_key FROM _split)")
        con.execute("DROP VIEW checkpoints")
        con.execute("DROP INDEX checkpoint_lookup")
        con.execute("ALTER TABLE checkpoint_rows RENAME TO checkpoint_rows_v3")
        con.execute(_V4_ROWS)
        con.execute(
            """
            INSERT INTO checkpoint_rows
            SELECT * REPLACE (CASE WHEN ckpt_key IN (SELECT ckpt_key FROM _split) THEN NULL
                                   ELSE working_state END AS working_state)
            FROM checkpoint_rows_v3 ORDER BY ckpt_key"""
        )
        con.execute("DROP TABLE checkpoint_rows_v3")
        con.execute("CREATE INDEX checkpoint_lookup ON checkpoint_rows (lookup_key)")
        con.execute(_V4_VIEW)
        state_write.drop(con)
    finally:
        con.execute("RESET memory_limit")


_V5_PARTS = (
    "CREATE TABLE split_states (ckpt_key BIGINT, skeleton VARCHAR USING COMPRESSION dict_fsst, "
    "cuts INTEGER[], refs BIGINT[])",
    "CREATE TABLE state_parts (part_hash BIGINT, part VARCHAR USING COMPRESSION dict_fsst, "
    "part_num BIGINT)",
    "CREATE INDEX split_state_key ON split_states (ckpt_key)",
    "CREATE INDEX state_part_hash ON state_parts (part_hash)",
    "CREATE INDEX state_part_num ON state_parts (part_num)",
)
"""Version 5: ``refs`` are the parts' numbers (``part_num``, given in the order parts are
first stored), no longer their hashes."""

RENUMBER_RANGE = 50_000
"""Split states whose references the migration to version 5 rewrites at a time (a bound on
memory: message-heavy states refer to ~100 parts each)."""


def _v5_parts_numbered(con: duckdb.DuckDBPyConnection) -> None:
    """Number the parts in the order they were stored, and refer to them by number.

    A split state referred to its parts by their 64-bit hash: random numbers, stored
    uncompressed (on the 1M-checkpoint message-heavy store, 766 of its 1,770 MiB), and
    found by two index lookups before the stretch of parts between them could be read. By
    number, the references compress (a state's parts are mostly consecutive numbers) and
    name the stretch themselves (docs/store.md). The hashes stay, for an import to find the
    parts it already has.
    """
    from debugger.store import state_write

    con.execute("SET memory_limit = '512MB'")  # see _v3_state_hashes_xxh3
    try:
        con.execute("DROP VIEW checkpoints")
        # both tables are copied into new ones, which then take the old names: DuckDB
        # indexes no column updated in the same transaction, and (2.0.1) fails to bind a
        # join on a table renamed while a new one holds its old name
        con.execute("DROP INDEX state_part_hash")
        con.execute("DROP INDEX split_state_key")
        con.execute(_V5_PARTS[1].replace("state_parts", "state_parts_v5", 1))
        # numbered in the order they were stored (an insert keeps its scan's order)
        con.execute("INSERT INTO state_parts_v5 SELECT part_hash, part, rowid FROM state_parts")
        con.execute("DROP TABLE state_parts")
        con.execute("ALTER TABLE state_parts_v5 RENAME TO state_parts")
        con.execute(_V5_PARTS[3])
        con.execute(_V5_PARTS[4])
        con.execute(_V5_PARTS[0].replace("split_states", "split_states_v5", 1))
        # a state referring to a part the store lost gets -1 (no part's number) and stays out
        refs = state_write.numbered_refs(
            "split_states", "state_parts", "WHERE ckpt_key BETWEEN $1 AND $2", missing="-1"
        )
        bounds = con.execute("SELECT min(ckpt_key), max(ckpt_key) FROM split_states").fetchone()
        if bounds and bounds[0] is not None:
            for first in range(int(bounds[0]), int(bounds[1]) + 1, RENUMBER_RANGE):
                con.execute(
                    f"""
                    INSERT INTO split_states_v5
                    SELECT s.ckpt_key, s.skeleton, s.cuts, n.refs
                    FROM split_states s JOIN ({refs}) n ON n.ckpt_key = s.ckpt_key
                    WHERE s.ckpt_key BETWEEN $1 AND $2 AND NOT list_contains(n.refs, -1)
                    ORDER BY s.ckpt_key""",
                    [first, first + RENUMBER_RANGE - 1],
                )
        missing = con.execute(
            "SELECT (SELECT count(*) FROM split_states) - (SELECT count(*) FROM split_states_v5)"
        ).fetchone()
        if missing and missing[0]:
            # a state referring to a part the store lost: nothing could rebuild it before
            raise StoreError(
                f"{missing[0]} states of the store refer to parts it does not hold: it cannot "
                "be migrated to version 5 (nothing was changed)",
                "import its sources into a new store, or restore the store from a backup",
            )
        con.execute("DROP TABLE split_states")
        con.execute("ALTER TABLE split_states_v5 RENAME TO split_states")
        con.execute(_V5_PARTS[2])
        con.execute(_V5_VIEW)
    finally:
        with contextlib.suppress(duckdb.Error):  # a failed step's transaction refuses it
            con.execute("RESET memory_limit")


METADATA_RANGE = 500
"""Documents the migration to version 6 cuts at a time (a bound on memory)."""


def _v6_metadata_split(con: duckdb.DuckDBPyConnection) -> None:
    """Store large metadata with ``internal_channels`` as a stub and a split text, and add
    the ``checkpoints_of(run)`` macro (:data:`_V6_RUN_MACRO`).

    A LangGraph functional-API chat kept its whole history in every checkpoint's metadata
    (:mod:`debugger.store.metadata_split`); the view puts the text back. The documents
    already stored are cut here, a few hundred at a time.
    """
    from debugger.store import metadata_split, state_write

    con.execute("DROP VIEW checkpoints")
    con.execute(_V6_VIEW)
    con.execute(_V6_RUN_MACRO)
    keys = [
        int(r[0])
        for r in con.execute(
            f"SELECT ckpt_key FROM checkpoint_rows WHERE {metadata_split.CANDIDATES} "
            "ORDER BY ckpt_key"
        ).fetchall()
    ]
    for i in range(0, len(keys), METADATA_RANGE):
        some = keys[i : i + METADATA_RANGE]  # in order: the range holds these and no other
        metadata_split.split(con, some[0], some[-1])
    state_write.drop(con)


MIGRATIONS: list[StoreMigration] = [
    StoreMigration(1, "initial tables, lookup index, large-state side table", _v1_initial),
    StoreMigration(2, "checkpoint documents stored as validated text", _v2_documents_as_text),
    StoreMigration(3, "state hashes are XXH3-128", _v3_state_hashes_xxh3),
    StoreMigration(
        4,
        "large states split into shared parts, small ones compressed",
        _v4_states_split_and_compressed,
    ),
    StoreMigration(5, "split states refer to their parts by number", _v5_parts_numbered),
    StoreMigration(
        6, "large metadata split into shared parts; checkpoints_of(run)", _v6_metadata_split
    ),
]
"""Append-only. Never edit a released step; add the next one."""

CURRENT_VERSION = MIGRATIONS[-1].version


def applied_version(con: duckdb.DuckDBPyConnection) -> int:
    """Return the highest store schema version applied (0 for an empty file)."""
    # duckdb_tables(), not information_schema: its first use binds the view, a cost on
    # every Store.open (the app opens the store on each page)
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() "
        "WHERE database_name = current_database() AND table_name = 'store_migrations'"
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = con.execute("SELECT max(version) FROM store_migrations").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _create_current(con: duckdb.DuckDBPyConnection) -> None:
    """A new store's schema as every migration would leave it, built directly.

    Running the steps on an empty file would slow every first import (version 2 rebuilds
    the table version 1 made); ``tests/store/test_store_open.py`` checks that
    both ways give the same tables, indexes and views.
    """
    _create_tables(con, _V4_ROWS, _V6_VIEW, (*_V5_PARTS, _V6_RUN_MACRO))


FRESH_SCHEMA: tuple[int, Callable[[duckdb.DuckDBPyConnection], None]] = (6, _create_current)
"""How a new store is built at once, and the version that leaves it at. The migrations
after that version run on it as on any store, so a new migration needs no change here."""


MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS store_migrations "
    "(version INTEGER, name VARCHAR, applied_at TIMESTAMP)"
)


def _record(con: duckdb.DuckDBPyConnection, steps: list[StoreMigration]) -> None:
    """Record ``steps`` as applied (one statement), creating the record's table if the store
    has none yet: in the caller's transaction, so a step and its record go in together."""
    con.execute(MIGRATIONS_TABLE)
    values = ", ".join("(?, ?, now()::TIMESTAMP)" for _ in steps)
    params = [v for step in steps for v in (step.version, step.name)]
    con.execute(f"INSERT INTO store_migrations VALUES {values}", params)


def migrate(con: duckdb.DuckDBPyConnection, done: int | None = None) -> list[int]:
    """Apply every pending store migration, each in its own transaction with its record.

    A new store is built at once up to ``FRESH_SCHEMA``'s version (each version recorded,
    in one transaction); the migrations after it run as on any store. ``done``: the
    version the store is at, when the caller has read it (:func:`applied_version`).

    Returns:
        The versions applied now (empty when the store was current).
    """
    if done is None:
        done = applied_version(con)
    applied = []
    fresh_version, build = FRESH_SCHEMA
    # a list that stops before the fresh build's version (a test playing an older
    # Stepscope) builds step by step, as that version did
    if done == 0 and fresh_version <= MIGRATIONS[-1].version:
        steps = [step for step in MIGRATIONS if step.version <= fresh_version]
        con.execute("BEGIN")
        try:
            build(con)
            _record(con, steps)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied = [step.version for step in steps]
        done = fresh_version
    for step in MIGRATIONS:
        if step.version <= done:
            continue
        con.execute("BEGIN")
        try:
            step.apply(con)
            _record(con, [step])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(step.version)
    return applied
