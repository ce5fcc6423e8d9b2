"""Retention: deleting what a store no longer needs, and giving the disk back.

Checkpoints hold run content (a customer's messages, a tool's answers), and a debugging
store is a copy of it, so it should expire as the runs do. :func:`prune` applies the rules
of :class:`PruneRules` in one transaction:

- ``runs``: these runs go entirely;
- ``older_than`` / ``completed_older_than``: a run whose newest checkpoint is older than the
  cutoff goes entirely (completed runs may expire earlier than the in-flight ones, which
  someone may still resume);
- ``keep_last``: of every other run, the newest N checkpoints stay (always the head), older
  ones go, with the effects and tool calls of the steps before the oldest one kept.

A run that goes takes its checkpoints, large states, effects, tape (``tool_calls``),
quarantined rows and its replays (recursively) with it; a replay that started from a step
no longer kept goes too. The ``runs`` rows of trimmed runs are derived again. ``sources``
rows stay: they are the history of imports.

DuckDB does not give deleted space back to the file system (a CHECKPOINT reuses the blocks
but keeps the file's size), so :func:`compact` rewrites the store into a new file with
``COPY FROM DATABASE`` (tables, views, indexes and sequences as they were) and swaps it in
with one atomic rename.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from debugger.errors import StepscopeError
from debugger.store.derive import derive_runs
from debugger.store.schema import ROW_GROUP_SIZE

__all__ = [
    "PruneReport",
    "PruneRules",
    "compact",
    "parse_cutoff",
    "prune",
    "source_retention",
]

_AGE = re.compile(r"^\s*(\d+)\s*(s|min|h|d|w)\s*$", re.I)
_UNITS = {"s": "seconds", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_cutoff(text: str, now: datetime | None = None) -> datetime:
    """A cutoff time (naive UTC, as the store keeps times) from an age or a date.

    ``90d``, ``12h``, ``2w``, ``30min``, ``45s`` are ages before ``now`` (default: the current
    time); ``2026-01-31`` or an ISO 8601 time (``2026-01-31T12:00:00+01:00``) is a date.

    Raises:
        StepscopeError: neither an age nor a date.
    """
    now = now or datetime.now(UTC).replace(tzinfo=None)
    m = _AGE.match(str(text))
    if m:
        return now - timedelta(**{_UNITS[m[2].lower()]: int(m[1])})
    try:
        when = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise StepscopeError(
            f"{text!r} is neither an age nor a date",
            "write an age such as 90d, 12h, 2w, 30min, or a date such as 2026-01-31",
        ) from None
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


@dataclass(frozen=True)
class PruneRules:
    """What to delete; every rule given applies (a run goes when any rule says so)."""

    keep_last: int | None = None
    """Checkpoints kept per run, newest first (the head always stays); None: all."""
    older_than: datetime | None = None
    """Runs whose newest checkpoint is older than this (UTC) go entirely."""
    completed_older_than: datetime | None = None
    """Completed runs whose newest checkpoint is older than this (UTC) go entirely."""
    runs: tuple[str, ...] = ()
    """Runs to delete entirely, whatever their age."""

    @property
    def empty(self) -> bool:
        """True when no rule is set (nothing would be deleted)."""
        return (
            self.keep_last is None
            and self.older_than is None
            and self.completed_older_than is None
            and not self.runs
        )


@dataclass(frozen=True)
class PruneReport:
    """What a prune deleted (or, for a dry run, would delete)."""

    dry_run: bool
    deleted_runs: dict[str, str]
    """Runs deleted entirely, with the reason."""
    trimmed_runs: list[str]
    """Runs that lost older checkpoints (``keep_last``)."""
    checkpoints: int
    effects: int
    tool_calls: int
    quarantined: int
    """Quarantined rows of the deleted runs."""
    bytes_before: int | None = None
    """Store file size before (after a real prune with compaction)."""
    bytes_after: int | None = None
    """Store file size after compaction."""
    missing_runs: list[str] = field(default_factory=list)
    """Runs named with ``runs`` that the store does not hold."""

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return asdict(self)


# the run a quarantined row belongs to: its run_id (native, mapped) or thread_id (LangGraph),
# from the raw row, which may be cut short (so not always valid JSON)
_QUARANTINE_RUN = (
    "coalesce(try(json_extract_string(raw, '$.run_id')), "
    "try(json_extract_string(raw, '$.thread_id')), "
    'nullif(regexp_extract(raw, \'"(?:run_id|thread_id)"\\s*:\\s*"([^"]*)"\', 1), \'\'))'
)


def _runs_to_delete(con: duckdb.DuckDBPyConnection, rules: PruneRules) -> dict[str, str]:
    rows = con.execute("SELECT run_id, status, last_at, replay_of FROM runs").fetchall()
    chosen: dict[str, str] = {}
    asked = set(rules.runs)
    for run_id, status, last_at, _ in rows:
        if run_id in asked:
            chosen[run_id] = "named with --run"
        elif last_at is not None and rules.older_than and last_at < rules.older_than:
            chosen[run_id] = (
                f"newest checkpoint {last_at:%Y-%m-%d} is before {rules.older_than:%Y-%m-%d}"
            )
        elif (
            last_at is not None
            and status == "completed"
            and rules.completed_older_than
            and last_at < rules.completed_older_than
        ):
            chosen[run_id] = (
                f"completed, newest checkpoint {last_at:%Y-%m-%d} is before "
                f"{rules.completed_older_than:%Y-%m-%d}"
            )
    return chosen


def _with_replays(con: duckdb.DuckDBPyConnection, chosen: dict[str, str]) -> dict[str, str]:
    """``chosen`` plus every replay of a chosen run, recursively."""
    replays: dict[str, list[str]] = defaultdict(list)
    for run_id, original in con.execute(
        "SELECT run_id, replay_of FROM runs WHERE replay_of IS NOT NULL"
    ).fetchall():
        replays[original].append(run_id)
    out = dict(chosen)
    todo = list(chosen)
    while todo:
        original = todo.pop()
        for replay in replays.get(original, []):
            if replay not in out:
                out[replay] = f"a replay of {original}, which goes"
                todo.append(replay)
    return out


def _plan(con: duckdb.DuckDBPyConnection, rules: PruneRules) -> PruneReport:
    """Fill the temp tables ``_prune_runs`` and ``_prune_ckpts`` and count what they hold."""
    deleted = _runs_to_delete(con, rules)
    con.execute("CREATE OR REPLACE TEMP TABLE _prune_runs (run_id VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE _prune_ckpts (ckpt_key BIGINT, run_id VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE _kept_from (run_id VARCHAR, step BIGINT)")
    if rules.keep_last is not None:
        _plan_trim(con, list(deleted), rules.keep_last)
        # a replay started from a step no longer kept has lost what it is compared with
        for run_id, original, step in con.execute(
            "SELECT r.run_id, r.replay_of, k.step FROM runs r "
            "JOIN _kept_from k ON k.run_id = r.replay_of WHERE r.replay_from_step < k.step"
        ).fetchall():
            deleted.setdefault(run_id, f"replays {original} from step before {step}, not kept")
    deleted = _with_replays(con, deleted)
    if deleted:
        con.execute("INSERT INTO _prune_runs SELECT unnest($ids)", {"ids": sorted(deleted)})
    con.execute("DELETE FROM _prune_ckpts WHERE run_id IN (SELECT run_id FROM _prune_runs)")
    con.execute("DELETE FROM _kept_from WHERE run_id IN (SELECT run_id FROM _prune_runs)")
    return _count(con, rules, deleted)


def _plan_trim(con: duckdb.DuckDBPyConnection, deleted: list[str], keep: int) -> None:
    con.execute(
        """
        INSERT INTO _prune_ckpts
        SELECT x.ckpt_key, x.run_id FROM (
            SELECT c.ckpt_key, c.run_id, c.checkpoint_id, row_number() OVER (
                PARTITION BY c.run_id ORDER BY c.created_at DESC NULLS LAST, c.ckpt_key DESC
            ) AS newest
            FROM checkpoint_rows c WHERE NOT list_contains($deleted, c.run_id)
        ) x JOIN runs r ON r.run_id = x.run_id
        WHERE x.newest > $keep AND x.checkpoint_id IS DISTINCT FROM r.head_checkpoint_id""",
        {"deleted": deleted, "keep": keep},
    )
    con.execute(
        """
        INSERT INTO _kept_from
        SELECT run_id, min(step_index) FROM checkpoint_rows
        WHERE run_id IN (SELECT DISTINCT run_id FROM _prune_ckpts)
          AND ckpt_key NOT IN (SELECT ckpt_key FROM _prune_ckpts)
        GROUP BY run_id"""
    )


def _count(
    con: duckdb.DuckDBPyConnection, rules: PruneRules, deleted: dict[str, str]
) -> PruneReport:
    def one(sql: str) -> int:
        row = con.execute(sql).fetchone()
        return int(row[0]) if row else 0

    kept = con.execute("SELECT run_id FROM _kept_from ORDER BY run_id").fetchall()
    trimmed = [r for (r,) in kept]
    held = {r for (r,) in con.execute("SELECT run_id FROM run_keys").fetchall()}
    return PruneReport(
        dry_run=True,
        deleted_runs=dict(sorted(deleted.items())),
        trimmed_runs=trimmed,
        checkpoints=one(
            "SELECT count(*) FROM checkpoint_rows WHERE run_id IN (SELECT run_id FROM _prune_runs)"
        )
        + one("SELECT count(*) FROM _prune_ckpts"),
        effects=one(f"SELECT count(*) FROM effects e WHERE {_GONE.format(t='e')}"),
        tool_calls=one(f"SELECT count(*) FROM tool_calls t WHERE {_GONE.format(t='t')}"),
        quarantined=one(
            f"SELECT count(*) FROM quarantine WHERE {_QUARANTINE_RUN} IN "
            "(SELECT run_id FROM _prune_runs)"
        ),
        missing_runs=sorted(set(rules.runs) - held),
    )


_GONE = (
    "({t}.run_id IN (SELECT run_id FROM _prune_runs) OR EXISTS (SELECT 1 FROM _kept_from k "
    "WHERE k.run_id = {t}.run_id AND {t}.step_index < k.step))"
)
"""The effects or tool calls (alias ``t``) that go: their run goes, or their step is before
the oldest checkpoint kept."""


def _delete(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _gone_keys AS SELECT ckpt_key FROM _prune_ckpts "
        "UNION ALL SELECT ckpt_key FROM checkpoint_rows "
        "WHERE run_id IN (SELECT run_id FROM _prune_runs)"
    )
    con.execute("DELETE FROM large_states WHERE ckpt_key IN (SELECT ckpt_key FROM _gone_keys)")
    # a checkpoint's split state, and its split metadata (metadata_split.key)
    con.execute(
        "DELETE FROM split_states WHERE ckpt_key IN "
        "(SELECT ckpt_key FROM _gone_keys UNION ALL SELECT -1 - ckpt_key FROM _gone_keys)"
    )
    # a part goes when no state kept refers to it (also those a re-import left behind)
    con.execute(
        "DELETE FROM state_parts WHERE part_num NOT IN "
        "(SELECT DISTINCT unnest(refs) FROM split_states)"
    )
    con.execute("DELETE FROM checkpoint_rows WHERE ckpt_key IN (SELECT ckpt_key FROM _gone_keys)")
    con.execute(f"DELETE FROM effects e WHERE {_GONE.format(t='e')}")
    con.execute(f"DELETE FROM tool_calls t WHERE {_GONE.format(t='t')}")
    con.execute(
        f"DELETE FROM quarantine WHERE {_QUARANTINE_RUN} IN (SELECT run_id FROM _prune_runs)"
    )
    for table in ("runs", "run_keys"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM _prune_runs)")
    con.execute("CREATE OR REPLACE TEMP TABLE _touched AS SELECT run_id FROM _kept_from")
    derive_runs(con)


def prune(con: duckdb.DuckDBPyConnection, rules: PruneRules, dry_run: bool) -> PruneReport:
    """Apply the rules in one transaction (a dry run only counts); see the module docstring.

    Returns:
        What went (or would go). The file is not compacted here: see :func:`compact`.
    """
    con.execute("BEGIN TRANSACTION")
    try:
        report = _plan(con, rules)
        if not dry_run:
            _delete(con)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("ROLLBACK" if dry_run else "COMMIT")
    return report if dry_run else PruneReport(**{**asdict(report), "dry_run": False})


COMPACT_MEMORY_LIMIT = "1GB"
"""DuckDB's memory while it compacts. Each table is held until its commit (see
:func:`compact`): without a limit, the 1M-checkpoint message-heavy store (2.6 GB after its
migration, 1.0 GB compacted) took 5.4 GB of memory; with it 1.2 GB, in 45 s instead of 23."""


def compact(path: str) -> tuple[int, int]:
    """Rewrite the store at ``path`` into a new file and swap it in atomically.

    The store must not be open anywhere. The copy is written beside the store (the same
    file system, so the rename is atomic), flushed to disk, then renamed over the store; if
    anything fails before the rename, the store is untouched and the copy removed.

    Returns:
        The file's size before and after, in bytes.
    """
    store = Path(path)
    before = store.stat().st_size
    fresh = store.with_name(f".{store.name}.compact-{os.getpid()}")
    # DuckDB's default is .tmp in the working directory, wherever the command was run
    spill = store.with_name(f".{store.name}.compact-{os.getpid()}.tmp")
    fresh.unlink(missing_ok=True)
    try:
        con = duckdb.connect(":memory:")
        try:
            con.execute("SET enable_progress_bar = false")
            # each table written once, at its commit: written as it came, a table whose
            # source ended in short row groups had them merged and written again, leaving
            # the first copy as free blocks (a 17 MB store copied to 25 MB); held until its
            # commit, a table is spilled to disk past the limit, beside the store
            con.execute("SET enable_optimistic_write = false")
            con.execute(f"SET memory_limit = '{COMPACT_MEMORY_LIMIT}'")
            con.execute(f"SET temp_directory = '{_quoted(spill)}'")
            con.execute(f"ATTACH '{_quoted(store)}' AS old (READ_ONLY)")
            # the store's row groups, which DuckDB keeps no record of (docs/store.md)
            con.execute(f"ATTACH '{_quoted(fresh)}' AS fresh (ROW_GROUP_SIZE {ROW_GROUP_SIZE})")
            con.execute("COPY FROM DATABASE old TO fresh")
            con.execute("DETACH fresh")
            con.execute("DETACH old")
        finally:
            con.close()
        with fresh.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(fresh, store)
    except BaseException:
        # the copy and its WAL (DuckDB makes it at the copy's commit: a disk that filled
        # then left an empty one beside the store)
        for left in (fresh, fresh.with_name(f"{fresh.name}.wal")):
            with contextlib.suppress(OSError):
                left.unlink()
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return before, store.stat().st_size


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def source_retention(con: duckdb.DuckDBPyConnection, since: datetime) -> list[dict[str, Any]]:
    """Per import location: its checkpoints, the oldest and newest, and those written since
    ``since`` (the growth), for the audit's retention warning."""
    rows = con.execute(
        """
        SELECT s.location, count(*) AS checkpoints, min(c.created_at) AS oldest,
               max(c.created_at) AS newest,
               count(*) FILTER (WHERE c.created_at >= $since) AS recent
        FROM checkpoint_rows c JOIN sources s USING (source_id)
        GROUP BY s.location ORDER BY oldest NULLS LAST, s.location""",
        {"since": since},
    ).fetchall()
    keys = ("location", "checkpoints", "oldest", "newest", "recent")
    return [dict(zip(keys, r, strict=True)) for r in rows]
