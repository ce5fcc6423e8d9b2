"""Writing large states as skeletons and shared parts (:mod:`debugger.store.state_parts`).

An import, a re-import that changed a state and the store's migration to version 4 all go
the same way, in the caller's transaction:

1. :func:`cut` reads ``(ckpt_key, text)`` rows of states of ``SPLIT_MIN_BYTES`` or more and
   adds the ones that split to the temp table ``_split`` (``ckpt_key, skeleton, cuts,
   refs``),
   their parts to ``_new_parts``; it may be called several times (the migration reads the
   store's states a range at a time);
2. :func:`settle` stores the parts the store does not hold yet, under their hash and the
   next numbers, drops from ``_split`` any state one of whose parts has the hash of another
   text (a 64-bit collision, never seen: that state is then stored whole, so every state
   comes back exactly), and puts the parts' numbers in ``_split`` in place of their hashes.

The caller then writes ``_split``'s rows to ``split_states`` and leaves their
``working_state`` NULL; the other states are stored whole as before.

A batch whose reader cut its states as it wrote them (``debugger.contract.GIVEN_STATE_SPLIT``)
skips step 1 for those states: :func:`take_given` copies their cut and parts into the same
temp tables, in SQL, and step 2 settles them like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb
import pyarrow as pa

from debugger.contract import GIVEN_STATE_PARTS, GIVEN_STATE_SPLIT
from debugger.store import arrays, state_parts

GIVEN = "s._state_skeleton IS NOT NULL"
"""The condition on a ``_staged`` row ``s`` whose reader handed its state's cut over."""


def start(con: duckdb.DuckDBPyConnection) -> None:
    """Create the empty temp tables ``_split`` and ``_new_parts``."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _split "
        "(ckpt_key BIGINT, skeleton VARCHAR, cuts INTEGER[], refs BIGINT[])"
    )
    con.execute("CREATE OR REPLACE TEMP TABLE _new_parts (part_hash BIGINT, part VARCHAR)")


def cut(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> int:
    """Split the states ``sql`` selects (``ckpt_key, text, bytes``); returns how many split.

    The rows are read at once (the caller bounds them: one import batch, or one range of
    the migration), so the connection is free for the writes that follow.
    """
    return cut_texts(con, con.execute(sql, params or []).fetchall())


def cut_texts(con: duckdb.DuckDBPyConnection, rows: Iterable[tuple[Any, str | None, int]]) -> int:
    """Step 1 for ``(key, text, bytes)`` rows the caller read: add those that split to
    ``_split`` and their parts to ``_new_parts``; returns how many split."""
    keys: list[int] = []
    skeletons: list[str] = []
    cuts: list[list[int]] = []
    refs: list[list[int]] = []
    parts: dict[int, str] = {}
    for key, text, nbytes in rows:
        if text is None:
            continue
        cut_ = state_parts.split(text, nbytes)
        if cut_ is None:
            continue
        keys.append(int(key))
        skeletons.append(cut_.skeleton)
        cuts.append(cut_.cuts)
        refs.append(cut_.refs)
        for h, part in cut_.parts.items():
            # two states of a batch whose parts collide: the second keeps its text whole
            if parts.setdefault(h, part) != part:
                for column in (keys, skeletons, cuts, refs):
                    column.pop()
                break
    if not keys:
        return 0
    # assembled from buffers: pa.table/pa.array of Python lists would import pandas
    split = pa.Table.from_arrays(
        [
            arrays.or_pa_array(arrays.int64s(keys), keys, pa.int64()),
            arrays.or_pa_array(arrays.utf8(skeletons), skeletons, pa.large_string()),
            arrays.int_lists(cuts, pa.int32()),
            arrays.int_lists(refs, pa.int64()),
        ],
        names=["ckpt_key", "skeleton", "cuts", "refs"],
    )
    hashes, texts = list(parts), list(parts.values())
    new_parts = pa.Table.from_arrays(
        [
            arrays.or_pa_array(arrays.int64s(hashes), hashes, pa.int64()),
            arrays.or_pa_array(arrays.utf8(texts), texts, pa.large_string()),
        ],
        names=["part_hash", "part"],
    )
    con.register("_split_in", split)
    con.register("_parts_in", new_parts)
    try:
        con.execute("INSERT INTO _split SELECT * FROM _split_in")
        con.execute("INSERT INTO _new_parts SELECT * FROM _parts_in")
    finally:
        con.unregister("_split_in")
        con.unregister("_parts_in")
    return len(keys)


def has_given(columns: Any) -> bool:
    """Whether a batch's staged columns (names) carry its reader's cut."""
    return all(c in columns for c in (*GIVEN_STATE_SPLIT, *GIVEN_STATE_PARTS))


def take_given(con: duckdb.DuckDBPyConnection, rows_sql: str) -> int:
    """Step 1 for states the reader cut: add their cut to ``_split`` and the parts they
    refer to (from any row of ``_staged``) to ``_new_parts``, in the order the batch
    carries them (parts are stored in it); returns how many.

    Args:
        rows_sql: ``SELECT key, skeleton, cuts, refs`` over the rows to take.
    """
    row = con.execute(f"INSERT INTO _split {rows_sql}").fetchone()
    n = int(row[0]) if row else 0
    if n:
        con.execute(
            """
            INSERT INTO _new_parts
            SELECT part_hash, part FROM (
                SELECT _pos, unnest(_state_part_hashes) AS part_hash,
                       unnest(_state_parts) AS part,
                       unnest(range(len(_state_part_hashes))) AS i
                FROM _staged WHERE _state_part_hashes IS NOT NULL)
            WHERE part_hash IN (SELECT unnest(refs) FROM _split)
            ORDER BY _pos, i"""
        )
    return n


def split_rows(
    con: duckdb.DuckDBPyConnection, where: str, rows_sql: str, given_sql: str | None = None
) -> int:
    """The whole of steps 1 and 2 for one selection: how many states split.

    Args:
        where: the ``FROM ... WHERE ...`` that selects the candidate rows (counted first, so
            a batch without states of ``SPLIT_MIN_BYTES`` or more costs one count).
        rows_sql: the ``SELECT key, text, bytes`` over the same rows, for :func:`cut`;
            with ``given_sql``, only those whose reader handed no cut over.
        given_sql: the ``SELECT key, skeleton, cuts, refs`` of the rows whose reader
            handed their cut over (:func:`take_given`), when the batch has such columns.
    """
    row = con.execute(f"SELECT count(*) {where}").fetchone()
    candidates = int(row[0]) if row else 0
    if not candidates:
        return 0
    start(con)
    n = take_given(con, given_sql) if given_sql else 0
    if n < candidates:  # not all cut by their reader: the others' texts are read back
        n += cut(con, rows_sql)
    if not n:
        return 0
    return settle(con)


LOOKUP_AT_ONCE = 2_000
"""New part hashes looked up in ``state_parts`` per statement, as a literal list."""
SCAN_ROWS_PER_HASH = 300
"""Below this many stored parts per new hash, the new parts are looked up by one scan of
``state_parts`` joined with them, not by a literal list. Binding a literal costs ~7 us
(2,000 hashes: 15 ms), scanning a stored part ~23 ns (1M parts: 23 ms); a young store's
batches (an import's first thousands of checkpoints) take the scan (2,000 hashes against
4,000 parts: 1.2 against 11 ms)."""


def settle(con: duckdb.DuckDBPyConnection, numbered: bool = True) -> int:
    """Store the new parts and drop states whose parts collide; returns the states split.

    The store's parts these new ones may repeat are looked up first, their hashes written
    into the statement as a literal ``IN`` list: DuckDB looks such a list up in the
    ``state_parts`` index, where ``IN (SELECT ...)`` scans the whole table, once per batch
    (on a store of a million message-heavy checkpoints, an import batch's settling took
    a median of 92 ms that way and 32 ms this way, 500 parts, load 6; adding to a large
    store slowed with its size).

    New parts are numbered on from the store's highest ``part_num``, in the order the
    batch first met them, and ``_split``'s references become those numbers (``numbered``;
    the migration to version 4 keeps the hashes, which version 5 then numbers).
    """
    hashes = [
        int(r[0]) for r in con.execute("SELECT DISTINCT part_hash FROM _new_parts").fetchall()
    ]
    num = ", part_num" if numbered else ""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _old_parts (part_hash BIGINT, part VARCHAR"
        + (", part_num BIGINT)" if numbered else ")")
    )
    row = con.execute("SELECT count(*) FROM state_parts").fetchone()
    stored = int(row[0]) if row else 0
    if stored < SCAN_ROWS_PER_HASH * len(hashes):
        # few parts stored: one scan of them costs less than binding a list of literals
        con.execute(
            f"INSERT INTO _old_parts SELECT part_hash, part{num} FROM state_parts "
            "WHERE part_hash IN (SELECT part_hash FROM _new_parts)"
        )
        hashes = []
    for i in range(0, len(hashes), LOOKUP_AT_ONCE):
        listed = ",".join(str(h) for h in hashes[i : i + LOOKUP_AT_ONCE])
        con.execute(
            f"INSERT INTO _old_parts SELECT part_hash, part{num} FROM state_parts "
            f"WHERE part_hash IN ({listed})"
        )
    bad = con.execute(
        """
        SELECT list(DISTINCT part_hash) FROM (
            SELECT part_hash FROM (
                SELECT part_hash, part FROM _new_parts
                UNION SELECT part_hash, part FROM _old_parts
            ) GROUP BY part_hash HAVING count(*) > 1
        )"""
    ).fetchone()
    colliding = bad[0] if bad and bad[0] else []
    if colliding:
        con.execute(
            "DELETE FROM _split WHERE list_has_any(refs, $bad::BIGINT[])", {"bad": colliding}
        )
    new = """
        SELECT part_hash, any_value(part) AS part, min(rowid) AS seen FROM _new_parts
        WHERE part_hash NOT IN (SELECT part_hash FROM _old_parts)
          AND NOT list_contains($bad::BIGINT[], part_hash)
        GROUP BY part_hash"""
    if numbered:
        _number(con, new, colliding, stored)
    else:
        con.execute(
            f"INSERT INTO state_parts SELECT part_hash, part FROM ({new}) ORDER BY seen",
            {"bad": colliding},
        )
    con.execute("DROP TABLE _old_parts")
    row = con.execute("SELECT count(*) FROM _split").fetchone()
    return int(row[0]) if row else 0


def _number(con: duckdb.DuckDBPyConnection, new: str, colliding: list[int], stored: int) -> None:
    """Store the ``new`` parts numbered after the store's last, and put the parts' numbers
    in ``_split`` in place of their hashes (``_old_parts`` has the stored parts' numbers)."""
    row = con.execute("SELECT max(part_num) FROM state_parts").fetchone() if stored else None
    first = int(row[0]) + 1 if row and row[0] is not None else 0
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _added AS
        SELECT part_hash, part, {first} + row_number() OVER (ORDER BY seen) - 1 AS part_num
        FROM ({new})""",
        {"bad": colliding},
    )
    con.execute("INSERT INTO state_parts SELECT * FROM _added ORDER BY part_num")
    # every part a state refers to is stored (new, or found): a missing one is an error,
    # never a shorter list
    numbers = (
        "(SELECT part_hash, part_num FROM _old_parts UNION ALL SELECT * EXCLUDE (part) FROM _added)"
    )
    refs = numbered_refs(
        "_split", numbers, missing="error('a split state refers to a part not stored')"
    )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _split_nums AS
        SELECT s.ckpt_key, s.skeleton, s.cuts, n.refs
        FROM _split s JOIN ({refs}) n ON n.ckpt_key = s.ckpt_key"""
    )
    con.execute("DROP TABLE _split")
    con.execute("ALTER TABLE _split_nums RENAME TO _split")
    con.execute("DROP TABLE _added")


def numbered_refs(states: str, numbers: str, where: str = "", missing: str = "NULL") -> str:
    """SQL of ``ckpt_key, refs`` for the split states of ``states`` (``refs`` the parts'
    hashes), their ``refs`` the parts' numbers in the same order, from ``numbers``
    (``part_hash, part_num``). A part not in ``numbers`` gives ``missing`` in its place.

    One rule for an import's new states (:func:`settle`) and the migration that numbered
    version 4's (``schema._v5_parts_numbered``).
    """
    return f"""
        SELECT u.ckpt_key, list(coalesce(m.part_num, {missing}) ORDER BY u.i) AS refs
        FROM (SELECT ckpt_key, unnest(refs) AS part_hash, generate_subscripts(refs, 1) AS i
              FROM {states} {where}) u
        LEFT JOIN {numbers} m ON m.part_hash = u.part_hash
        GROUP BY u.ckpt_key"""


def drop(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the temp tables."""
    con.execute("DROP TABLE IF EXISTS _split")
    con.execute("DROP TABLE IF EXISTS _new_parts")
