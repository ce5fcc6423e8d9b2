"""Reads of checkpoints, effects, tool calls, the quarantine and the sources.

The store's reads live here and in :mod:`debugger.store.run_reads`; pages and notebooks never
write SQL of their own.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from debugger.contract import pending_entries
from debugger.errors import NotFound
from debugger.json_text import loads
from debugger.model import Budgets, Checkpoint, Effect, ToolCall
from debugger.store import metadata_split
from debugger.store.schema import LARGE_STATE_BYTES, RUN_SHIFT, STEP_OFFSET
from debugger.store.state_parts import join, text_hash

if TYPE_CHECKING:
    import pandas as pd  # DataFrames come from DuckDB's .df(), which imports pandas itself

_CKPT_COLS = (
    "c.run_id, c.checkpoint_id, c.parent_id, c.step_index, c.schema_version, c.created_at, "
    "coalesce(CAST(c.working_state AS VARCHAR), l.working_state) AS ws, c.state_hash, "
    "c.state_bytes, c.tokens_spent, c.steps_spent, c.wall_clock_ms, "
    "CAST(c.pending_effects AS VARCHAR), c.model_version, CAST(c.tool_versions AS VARCHAR), "
    "CAST(c.metadata AS VARCHAR), c.ckpt_key"
)
"""The checkpoint columns (see :func:`checkpoint_from_row`), then ``ckpt_key``: a split
state's text is NULL here and put together by :func:`with_split_states`."""
_CKPT_FROM = "checkpoint_rows c LEFT JOIN large_states l ON l.ckpt_key = c.ckpt_key"

PARTS_AT_ONCE = 1_000
"""Parts fetched by one statement through the ``part_num`` index (a literal IN list)."""

PART_CACHE_CHARS = 32 * 1024 * 1024
"""Characters of parts kept in memory between reads (the oldest read go first)."""

PartKey = tuple[str | None, int]
"""A part in memory: the store's file (its path) and the part's number there."""

_part_cache: OrderedDict[PartKey, str] = OrderedDict()
_part_cache_chars = 0
_store_files: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, str | None] = (
    weakref.WeakKeyDictionary()
)


def _store_file(con: duckdb.DuckDBPyConnection) -> str | None:
    """The path of the store ``con`` reads (asked once per connection)."""
    if con not in _store_files:
        row = con.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()
        _store_files[con] = str(row[0]) if row and row[0] is not None else None
    return _store_files[con]


def _cached_parts(file: str | None, wanted: list[int]) -> tuple[dict[int, str], list[int]]:
    """The parts among ``wanted`` (numbers) read before, and the numbers still to fetch.

    Parts read stay in memory across the store's connections: the app opens the store for
    each page, and the neighbouring checkpoints of a run, which the Timeline reads one
    after the other, share most of their messages. A file may be replaced by another store
    under the same path, so a state put together from memory is checked against its hash
    (:func:`split_texts`).
    """
    found = {}
    missing = []
    for n in wanted:
        text = _part_cache.get((file, n))
        if text is None:
            missing.append(n)
        else:
            found[n] = text
            _part_cache.move_to_end((file, n))
    return found, missing


def clear_part_cache() -> None:
    """Forget every part read (a benchmark's cold read, a test's)."""
    global _part_cache_chars
    _part_cache.clear()
    _part_cache_chars = 0


def _forget_parts(file: str | None, nums: list[int]) -> None:
    global _part_cache_chars
    for n in nums:
        text = _part_cache.pop((file, n), None)
        if text is not None:
            _part_cache_chars -= len(text)


def _remember_parts(file: str | None, parts: dict[int, str]) -> None:
    global _part_cache_chars
    for n, text in parts.items():
        if (file, n) not in _part_cache:
            _part_cache[(file, n)] = text
            _part_cache_chars += len(text)
    while _part_cache_chars > PART_CACHE_CHARS and _part_cache:
        _, text = _part_cache.popitem(last=False)
        _part_cache_chars -= len(text)


STRETCH_GAP = 8
"""Parts whose numbers lie at most this far apart are read as one stretch of rows."""

STRETCH_MIN_PARTS = 4
"""A stretch of fewer parts than this is read through the index instead."""

STRETCHES_AT_ONCE = 8
"""Stretches read by one statement (DuckDB prunes row groups by each range's bounds; past
about ten ranges a statement slows more than another statement costs)."""


def stretches(nums: list[int]) -> tuple[list[tuple[int, int]], list[int]]:
    """Split part numbers into stretches of rows worth reading whole and the rest.

    Parts are numbered in the order an import first met them, so the parts one state
    refers to mostly have consecutive numbers (a run's messages, as its import met them):
    a stretch reads them by range, which DuckDB answers from the row groups' bounds on
    ``part_num`` (about half the time of looking each one up in the index). Parts shared
    with runs imported long before lie elsewhere, one or a few together: those go through
    the index.

    Returns:
        (the stretches as inclusive ``(first, last)`` numbers, the numbers outside them).
    """
    found: list[tuple[int, int]] = []
    rest: list[int] = []
    group: list[int] = []
    for n in [*sorted(set(nums)), None]:
        if n is not None and group and n - group[-1] <= STRETCH_GAP:
            group.append(n)
            continue
        if len(group) >= STRETCH_MIN_PARTS:
            found.append((group[0], group[-1]))
        else:
            rest.extend(group)
        group = [n] if n is not None else []
    return found, rest


def _fetch_parts(con: duckdb.DuckDBPyConnection, nums: list[int]) -> dict[int, str]:
    """Parts by number from ``state_parts``: each stretch by range, the rest through the
    ``part_num`` index (:func:`stretches`).

    The numbers are integers the store wrote, so they go into the statement as literals:
    DuckDB prunes row groups by a literal range and looks a literal IN list up in the
    index, where a joined or unnested list scans the table.
    """
    ranges, rest = stretches(nums)
    wanted = set(nums)
    parts: dict[int, str] = {}
    for i in range(0, len(ranges), STRETCHES_AT_ONCE):
        where = " OR ".join(
            f"part_num BETWEEN {int(a)} AND {int(b)}" for a, b in ranges[i : i + STRETCHES_AT_ONCE]
        )
        rows = con.execute(f"SELECT part_num, part FROM state_parts WHERE {where}").fetchall()
        parts.update((int(n), text) for n, text in rows if n in wanted)
    for i in range(0, len(rest), PARTS_AT_ONCE):
        listed = ",".join(str(int(n)) for n in rest[i : i + PARTS_AT_ONCE])
        rows = con.execute(
            f"SELECT part_num, part FROM state_parts WHERE part_num IN ({listed})"
        ).fetchall()
        parts.update((int(n), text) for n, text in rows)
    return parts


def split_texts(con: duckdb.DuckDBPyConnection, wanted: Mapping[int, str | None]) -> dict[int, str]:
    """The texts of the split states among ``wanted`` (ckpt_key to its state hash),
    rebuilt from their parts; keys of states that are not split are left out.

    A state rebuilt with parts from memory is checked against its state hash (XXH3-128 of
    the text, ~10 us for 100 KB): memory is kept by file path, and another store may have
    been written under the same path since. On a mismatch its parts are read again.
    """
    keys = list(wanted)
    if not keys:
        return {}
    if len(keys) == 1:
        found = con.execute(
            "SELECT ckpt_key, skeleton, cuts, refs FROM split_states WHERE ckpt_key = ?", keys
        ).fetchall()
    else:
        found = con.execute(
            "SELECT ckpt_key, skeleton, cuts, refs FROM split_states "
            "WHERE ckpt_key IN (SELECT unnest(?::BIGINT[]))",
            [keys],
        ).fetchall()
    if not found:
        return {}
    file = _store_file(con)
    parts, missing = _cached_parts(file, list(dict.fromkeys(n for *_, refs in found for n in refs)))
    from_memory = bool(parts)
    fetched = _fetch_parts(con, missing)
    _remember_parts(file, fetched)
    parts.update(fetched)
    out = {}
    for key, skeleton, cuts, refs in found:
        text = join(skeleton, cuts, refs, parts)
        expected = wanted.get(int(key))
        if from_memory and expected is not None and text_hash(text) != expected:
            _forget_parts(file, refs)
            again = _fetch_parts(con, list(dict.fromkeys(refs)))
            _remember_parts(file, again)
            text = join(skeleton, cuts, refs, again)
        out[int(key)] = text
    return out


def with_split_states(con: duckdb.DuckDBPyConnection, rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows of ``_CKPT_COLS`` with their split states' texts and split metadata put in
    (``ckpt_key`` dropped)."""
    rows = with_split_metadata(con, rows)
    missing = {int(r[16]): r[7] for r in rows if r[6] is None}
    texts = split_texts(con, missing)
    if not texts:
        return [tuple(r[:16]) for r in rows]
    return [
        (*r[:6], texts.get(int(r[16])), *r[7:16]) if r[6] is None else tuple(r[:16]) for r in rows
    ]


def with_split_metadata(con: duckdb.DuckDBPyConnection, rows: list[Any]) -> list[Any]:
    """Rows with ``metadata`` at 15 and ``ckpt_key`` at 16, each stub replaced by its
    document's whole text (:mod:`debugger.store.metadata_split`); rows without a stub (all
    but a LangGraph functional-API chat's) cost a substring test."""
    wanted = {}
    for r in rows:
        named = metadata_split.stub_hash(r[15])
        if named is not None:
            wanted[metadata_split.key(int(r[16]))] = named
    if not wanted:
        return rows
    texts = split_texts(con, wanted)
    out = []
    for r in rows:
        text = texts.get(metadata_split.key(int(r[16])))
        out.append(r if text is None else (*r[:15], text, *r[16:]))
    return out


# One checkpoint is read without the join: the join to large_states would slow every point
# lookup (benchmarks/store_bench.py), while only states of LARGE_STATE_BYTES or more live
# there. Those are then fetched by their indexed ckpt_key.
_ONE_NAMES = (
    "run_id", "checkpoint_id", "parent_id", "step_index", "schema_version", "created_at",
    "working_state", "state_hash", "state_bytes", "tokens_spent", "steps_spent",
    "wall_clock_ms", "pending_effects", "model_version", "tool_versions", "metadata",
    "ckpt_key",
)  # fmt: skip
"""The columns of :func:`_one`'s rows: those of ``_CKPT_COLS`` (the documents are VARCHAR in
``checkpoint_rows``), then ``ckpt_key``."""


def _newest(row: tuple[Any, ...]) -> tuple[bool, datetime, int]:
    # newest written first: created_at (unknown times last), then insertion order
    created = row[5]
    return (created is not None, created or datetime.min, int(row[-1]))


@dataclass
class Layout:
    """What a connection has learnt of where its store keeps states out of the row.

    A hint, never a truth: a store can gain or lose large states after it was learnt (an
    import or prune through the same :class:`~debugger.store.Store` forgets it), and a stale
    hint costs a statement, never a wrong answer (:func:`_out_of_row` looks in the other
    place when the first has nothing).
    """

    has_large: bool | None = None
    """Whether ``large_states`` holds any row (None: not asked yet)."""


def _has_large(con: duckdb.DuckDBPyConnection, layout: Layout | None) -> bool:
    if layout is None:
        return True
    if layout.has_large is None:
        row = con.execute("SELECT EXISTS (SELECT 1 FROM large_states)").fetchone()
        layout.has_large = bool(row and row[0])
    return layout.has_large


def _one(
    con: duckdb.DuckDBPyConnection, where: str, params: list[Any], layout: Layout | None = None
) -> tuple[Any, ...] | None:
    """The newest checkpoint row matching ``where``, its state fetched if it is out of the row.

    No ORDER BY ... LIMIT in SQL: DuckDB plans that as a Top-N over a sequential scan and
    skips the lookup_key index. A step has one checkpoint, or a few where the run forked, so
    the newest is picked here.

    ``SELECT *``, with the columns picked here by name: DuckDB reads all of a row's columns
    faster than a list of some of them, and faster still than the view's column list with
    its casts (no-ops on ``checkpoint_rows``' VARCHAR columns).
    """
    result = con.execute(f"SELECT * FROM checkpoint_rows c WHERE {where}", params)
    found = result.fetchall()
    if not found:
        return None
    names = [d[0] for d in result.description or ()]
    at = [names.index(n) for n in _ONE_NAMES]
    rows = [tuple(r[i] for i in at) for r in found]
    row = max(rows, key=_newest)
    if metadata_split.MARK in (row[15] or ""):
        row = with_split_metadata(con, [row])[0]
    if row[6] is not None:
        return row[:-1]
    text = _out_of_row(con, int(row[-1]), row[7], int(row[8]), layout)
    return (*row[:6], text, *row[7:-1])


def _out_of_row(
    con: duckdb.DuckDBPyConnection, key: int, state_hash: str, nbytes: int, layout: Layout | None
) -> str | None:
    """A state kept out of its row: whole in ``large_states``, or split.

    Under LARGE_STATE_BYTES it can only be split; from there it is looked for in
    ``large_states`` first, unless the store holds none there (a message-heavy LangGraph
    store: every state that large is split, and the probe was a sixth of a read's time).
    """
    wanted = {key: state_hash}
    if nbytes < LARGE_STATE_BYTES or not _has_large(con, layout):
        text = split_texts(con, wanted).get(key)
        return text if text is not None else _large_state(con, key)
    text = _large_state(con, key)
    return text if text is not None else split_texts(con, wanted).get(key)


def _large_state(con: duckdb.DuckDBPyConnection, key: int) -> str | None:
    found = con.execute("SELECT working_state FROM large_states WHERE ckpt_key = ?", [key])
    row = found.fetchone()
    return row[0] if row else None


def checkpoint_from_row(row: tuple[Any, ...], parse_state: bool = True) -> Checkpoint:
    """Build a :class:`Checkpoint` from a row selected with the checkpoint columns.

    With ``parse_state`` false the working state is left unparsed (``working_state`` is
    None) for a caller that diffs the state's text, ``row[6]`` (see ``debugger.diff.text``).
    """
    return Checkpoint(
        run_id=row[0],
        checkpoint_id=row[1],
        parent_id=row[2],
        step_index=int(row[3]),
        schema_version=row[4],
        created_at=row[5],
        working_state=loads(row[6]) if parse_state else None,
        state_hash=row[7],
        state_bytes=int(row[8]),
        budgets=Budgets(int(row[9]), int(row[10]), int(row[11])),
        pending_effects=pending_entries(loads(row[12], [])),
        model_version=row[13],
        tool_versions=loads(row[14], {}),
        metadata=loads(row[15], {}),
    )


RUN_NUMBERS_AT_ONCE = 250_000
"""Stores with at most this many runs have all their run numbers read on the first lookup."""


def _load_run_numbers(con: duckdb.DuckDBPyConnection, known: dict[str, int]) -> None:
    """Read every run's number in one statement, when there are few.

    A lookup of a run not yet seen otherwise costs a statement of its own, a good part of
    a point lookup; the numbers never change.
    """
    row = con.execute("SELECT count(*) FROM run_keys").fetchone()
    if row and 0 < int(row[0]) <= RUN_NUMBERS_AT_ONCE:
        known.update((str(r), int(n)) for r, n in con.execute(
            "SELECT run_id, run_num FROM run_keys").fetchall())  # fmt: skip


def run_num(
    con: duckdb.DuckDBPyConnection, run_id: str, known: dict[str, int] | None = None
) -> int:
    """Return the store's number for a run, or raise :class:`NotFound`.

    Args:
        con: the store's connection.
        run_id: the run.
        known: numbers already looked up on this connection. A run's number never changes
            once given, so a caller may keep them; that saves a statement per lookup.
    """
    if known is not None and not known:
        _load_run_numbers(con, known)
    if known is not None and run_id in known:
        return known[run_id]
    row = con.execute("SELECT run_num FROM run_keys WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise NotFound(f"no run {run_id!r} in the store", "list the runs with `stepscope runs`")
    if known is not None:
        known[run_id] = int(row[0])
    return int(row[0])


def checkpoint(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    step: int | None = None,
    checkpoint_id: str | None = None,
    known: dict[str, int] | None = None,
    layout: Layout | None = None,
) -> Checkpoint:
    """One checkpoint: by id, by step (the newest written at that step), or the run's head.

    A lookup by step goes through ``lookup_key``, a single indexed BIGINT, so it is a point
    read even in a store of millions of checkpoints. ``known`` is passed to :func:`run_num`,
    ``layout`` (what the caller's connection learnt of the store, kept between reads) to
    :func:`_one`.
    """
    return checkpoint_from_row(checkpoint_row(con, run_id, step, checkpoint_id, known, layout))


def checkpoint_row(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    step: int | None = None,
    checkpoint_id: str | None = None,
    known: dict[str, int] | None = None,
    layout: Layout | None = None,
) -> tuple[Any, ...]:
    """The row of :func:`checkpoint`, its JSON documents still text (see
    :func:`checkpoint_from_row`)."""
    num = run_num(con, run_id, known)
    if checkpoint_id is not None:
        row = _one(con, "c.run_id = ? AND c.checkpoint_id = ?", [run_id, checkpoint_id], layout)
        what = f"checkpoint {checkpoint_id!r}"
    elif step is not None:
        row = None
        if -STEP_OFFSET <= step < STEP_OFFSET:  # no step outside 32 bits is ever stored
            key = num * RUN_SHIFT + step + STEP_OFFSET
            row = _one(con, "c.lookup_key = ?", [key], layout)
        what = f"step {step}"
    else:
        head = con.execute(
            "SELECT head_checkpoint_id FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        if head is None:
            raise NotFound(f"run {run_id!r} has no checkpoints", "import its source again")
        return checkpoint_row(con, run_id, checkpoint_id=head[0], known=known, layout=layout)
    if row is None:
        raise NotFound(
            f"run {run_id!r} has no {what}",
            f"see its steps with `stepscope show {run_id}`",
        )
    return row


def checkpoints(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Checkpoint]:
    """Every checkpoint of a run in write order (created_at, then insertion)."""
    run_num(con, run_id)
    rows = con.execute(
        f"SELECT {_CKPT_COLS} FROM {_CKPT_FROM} WHERE c.run_id = ? "
        "ORDER BY c.created_at NULLS FIRST, c.ckpt_key",
        [run_id],
    ).fetchall()
    return [checkpoint_from_row(r) for r in with_split_states(con, rows)]


def timeline(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """One row per checkpoint of a run: step, time, budgets, effects, calls, state size."""
    run_num(con, run_id)
    return con.execute(
        """
        WITH e AS (SELECT step_index, count(*) AS effects,
                          count(*) FILTER (WHERE status IN ('pending', 'unknown')) AS open_effects
                   FROM effects WHERE run_id = ? GROUP BY step_index),
             t AS (SELECT step_index, count(*) AS calls FROM tool_calls
                   WHERE run_id = ? GROUP BY step_index)
        SELECT c.step_index, c.checkpoint_id, c.parent_id, c.created_at, c.schema_version,
               c.tokens_spent, c.steps_spent, c.wall_clock_ms, c.state_bytes, c.state_hash,
               coalesce(json_array_length(c.pending_effects), 0) AS pending_effects,
               coalesce(e.effects, 0) AS effects, coalesce(e.open_effects, 0) AS open_effects,
               coalesce(t.calls, 0) AS calls, c.model_version
        FROM checkpoint_rows c LEFT JOIN e USING (step_index) LEFT JOIN t USING (step_index)
        WHERE c.run_id = ?
        ORDER BY c.created_at NULLS FIRST, c.ckpt_key""",
        [run_id, run_id, run_id],
    ).df()


def effects(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Effect]:
    """A run's effects in the order they were recorded."""
    rows = con.execute(
        "SELECT run_id, effect_id, step_index, idempotency_key, tool, CAST(args AS VARCHAR), "
        "status, CAST(result AS VARCHAR), created_at FROM effects WHERE run_id = ? "
        "ORDER BY step_index, created_at NULLS FIRST, effect_id",
        [run_id],
    ).fetchall()
    return [
        Effect(r[0], r[1], int(r[2]), r[3], r[4], loads(r[5]), r[6], loads(r[7]), r[8])
        for r in rows
    ]


def tool_calls(
    con: duckdb.DuckDBPyConnection, run_id: str, step: int | None = None
) -> list[ToolCall]:
    """A run's tape (tool and model calls), optionally of one step, in call order."""
    sql = (
        "SELECT run_id, step_index, seq, kind, name, CAST(request AS VARCHAR), "
        "CAST(response AS VARCHAR), error, idempotency_key, is_write FROM tool_calls "
        "WHERE run_id = ?"
    )
    params: list[Any] = [run_id]
    if step is not None:
        sql += " AND step_index = ?"
        params.append(step)
    rows = con.execute(sql + " ORDER BY seq, step_index", params).fetchall()
    return [
        ToolCall(r[0], int(r[1]), int(r[2]), r[3], r[4], loads(r[5]), loads(r[6]), r[7], r[8],
                 bool(r[9]))
        for r in rows
    ]  # fmt: skip


def quarantine(con: duckdb.DuckDBPyConnection, source_id: int | None = None) -> pd.DataFrame:
    """Quarantined rows with their reasons, newest first."""
    where = "WHERE source_id = ?" if source_id is not None else ""
    params = [source_id] if source_id is not None else []
    return con.execute(
        f"SELECT source_id, source, source_table, source_key, reason, raw, quarantined_at "
        f"FROM quarantine {where} ORDER BY quarantined_at DESC, source_table, source_key",
        params,
    ).df()


def sources(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every import so far, with its counts."""
    return con.execute(
        "SELECT source_id, kind, flavour, location, imported_at, rows_read, imported, "
        "already_present, quarantined FROM sources ORDER BY source_id"
    ).df()
