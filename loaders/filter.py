"""``--run`` and ``--since``: which runs an import reads, said once and rendered for each source.

A production database holds far more runs than one debugging session needs, so the choice is
pushed into the source's own query (a ``WHERE`` in SQLite or Postgres, statistics and
partitions in Parquet) instead of filtering rows after they were read.

The unit is the **run**: ``--run`` patterns select runs (LangGraph: threads) by id, and
``--since`` selects the runs that wrote a checkpoint at or after a time. A selected run is
read whole, earlier checkpoints, effects and tape included, so its lineage, budgets and
status are what a full import gives. A flavour knows which column holds the run and the
time in each table (:class:`Selection`); a reader knows how to turn that into its own
query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from debugger.errors import SourceError

_RELATIVE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
WILDCARDS = "*?"
"""The glob characters of a ``--run`` pattern; every other character stands for itself."""


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: an ISO date or time (UTC unless it has an offset), or an age like ``7d``.

    Ages count back from ``now`` in ``s``, ``m``, ``h``, ``d`` or ``w``.

    Raises:
        SourceError: neither form.
    """
    rel = _RELATIVE.match(text)
    if rel:
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[rel[2]]: int(rel[1])})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SourceError(
            f"--since {text!r} is not a time",
            "give an ISO date or time (2026-11-01, 2026-11-01T10:00:00+02:00) or an age (7d, 12h)",
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def check_pattern(pattern: str) -> str:
    """A ``--run`` pattern, refused when a database could not compare it.

    Raises:
        SourceError: empty, or holds a NUL character.
    """
    if not pattern or "\x00" in pattern:
        raise SourceError(f"--run {pattern!r} is not a run id or pattern", "give a run id or glob")
    return pattern


def has_wildcard(pattern: str) -> bool:
    """True when the pattern is a glob, not one run id."""
    return any(ch in pattern for ch in WILDCARDS)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The pattern as a regular expression (``*`` any text, ``?`` one character)."""
    parts = [".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern]
    return re.compile("".join(parts), re.S)


def like_pattern(pattern: str) -> str:
    """The pattern as SQL ``LIKE`` text with ``\\`` as escape: ``%``, ``_`` and ``\\`` of a
    run id are escaped, so only ``*`` and ``?`` match more than themselves."""
    out = []
    for ch in pattern:
        if ch in "%_\\":
            out.append("\\" + ch)
        else:
            out.append("%" if ch == "*" else "_" if ch == "?" else ch)
    return "".join(out)


def sqlite_glob(pattern: str) -> str:
    """The pattern as SQLite ``GLOB`` text (case-sensitive, unlike SQLite's ``LIKE``): a
    literal ``[`` is written ``[[]``; ``*`` and ``?`` stay wildcards."""
    return pattern.replace("[", "[[]")


def literal_prefix(pattern: str) -> str:
    """The text before the first wildcard (every run the pattern selects starts with it)."""
    cut = min((pattern.index(ch) for ch in WILDCARDS if ch in pattern), default=len(pattern))
    return pattern[:cut]


@dataclass(frozen=True)
class RunFilter:
    """The runs an import reads: ``runs`` patterns (any of them) and ``since`` (both must
    hold when both are given). Empty: every run."""

    runs: tuple[str, ...] = ()
    """Run ids or globs (``*``, ``?``)."""
    since: datetime | None = None
    """Runs with a checkpoint at or after this time (UTC)."""

    @classmethod
    def of(
        cls, runs: tuple[str, ...] | list[str] = (), since: str | datetime | None = None
    ) -> RunFilter:
        """A filter from CLI-style values, checked.

        Raises:
            SourceError: a bad pattern or time.
        """
        when = parse_since(since) if isinstance(since, str) else since
        if when is not None and when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        patterns = tuple(dict.fromkeys(check_pattern(p) for p in runs))
        return cls(patterns, when.astimezone(UTC) if when else None)

    def __bool__(self) -> bool:
        return bool(self.runs) or self.since is not None

    def matches(self, run: str) -> bool:
        """True when ``run`` is selected by the patterns (``since`` is not checked here)."""
        return not self.runs or any(
            glob_regex(p).fullmatch(run) if has_wildcard(p) else p == run for p in self.runs
        )

    def describe(self) -> dict[str, Any] | None:
        """What the report says was filtered (None when nothing was)."""
        if not self:
            return None
        return {
            "runs": list(self.runs),
            "since": self.since.isoformat().replace("+00:00", "Z") if self.since else None,
        }


@dataclass(frozen=True)
class Selection:
    """How a filter applies to one source table, as the flavour maps it.

    ``run_column`` holds the run in ``table``; ``since`` is read from ``time_table``'s
    ``time_column`` (the checkpoints), whose ``time_run_column`` names the run there.
    A reader turns this into its query (:meth:`loaders.base.SourceReader.scan`).
    """

    filter: RunFilter
    run_column: str
    time_table: str | None = None
    time_run_column: str | None = None
    time_column: str | None = None

    def run_sql(self, dialect: str, column: str) -> str:
        """``column`` matches a pattern, in ``dialect`` (``sqlite`` or ``postgres``)."""
        return run_sql(self.filter.runs, dialect, column)


def quote_text(value: str, dialect: str) -> str:
    """A string literal: quotes doubled; in Postgres an ``E''`` literal with backslashes
    doubled too, so the text is the same whatever ``standard_conforming_strings`` says."""
    body = value.replace("'", "''")
    if dialect == "postgres":
        return "E'" + body.replace("\\", "\\\\") + "'"
    return "'" + body + "'"


def run_sql(patterns: tuple[str, ...], dialect: str, column: str) -> str:
    """A condition: ``column`` is one of the ids or matches one of the globs."""
    exact = [p for p in patterns if not has_wildcard(p)]
    parts = []
    if exact:
        parts.append(f"{column} IN ({', '.join(quote_text(p, dialect) for p in exact)})")
    for p in patterns:
        if not has_wildcard(p):
            continue
        if dialect == "sqlite":
            parts.append(f"{column} GLOB {quote_text(sqlite_glob(p), dialect)}")
        else:
            parts.append(f"{column} LIKE {quote_text(like_pattern(p), dialect)} ESCAPE E'\\\\'")
    return "(" + " OR ".join(parts) + ")" if parts else "TRUE"


_PG_ISO = r"^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?)?\s*(Z|[+-]\d\d(:?\d\d)?)?$"
"""Text Postgres may cast to a timestamp without failing the query (other text is skipped)."""
_PG_ZONE = r"(Z|[+-]\d\d(:?\d\d)?)$"


def time_sql(column: str, arrow_type: Any, since: datetime, dialect: str) -> str:
    """A condition: ``column`` (of that Arrow type) is at or after ``since``, read as the
    store reads a time (text without an offset is UTC)."""
    import pyarrow as pa

    from debugger.store.validate import epoch_seconds_sql

    naive = since.astimezone(UTC).replace(tzinfo=None).isoformat()
    if dialect == "sqlite":
        # julianday() reads ISO text with or without an offset, as UTC when it has none; a
        # number is an epoch, its unit read from its magnitude
        epoch = f"CASE WHEN typeof({column}) IN ('integer', 'real') THEN {column} END"
        return (
            f"coalesce(julianday(CASE WHEN typeof({column}) = 'text' THEN {column} END), "
            f"julianday({epoch_seconds_sql(epoch)}, 'unixepoch')) "
            f">= julianday({quote_text(naive, dialect)})"
        )
    bound = f"{quote_text(naive, dialect)}::timestamp AT TIME ZONE 'UTC'"
    if pa.types.is_timestamp(arrow_type):
        if arrow_type.tz is None:
            return f"{column} >= {quote_text(naive, dialect)}::timestamp"
        return f"{column} >= {bound}"
    if any(
        is_(arrow_type) for is_ in (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)
    ):
        return f"to_timestamp({epoch_seconds_sql(column)}) >= {bound}"
    text = f"{column}::text"
    return (
        f"(CASE WHEN {text} !~ {quote_text(_PG_ISO, dialect)} THEN NULL "
        f"WHEN {text} ~ {quote_text(_PG_ZONE, dialect)} THEN {text}::timestamptz "
        f"ELSE {text}::timestamp AT TIME ZONE 'UTC' END) >= {bound}"
    )


def where_sql(sel: Selection, dialect: str, time_type: Any, quote: Any) -> str:
    """The ``WHERE`` condition of a :class:`Selection` for a table, in ``dialect``.

    Args:
        sel: the selection.
        dialect: ``sqlite`` or ``postgres``.
        time_type: the Arrow type of the time column (``since`` only).
        quote: the reader's identifier quoting.
    """
    f = sel.filter
    parts = [run_sql(f.runs, dialect, quote(sel.run_column))] if f.runs else []
    if f.since is not None and sel.time_table and sel.time_column and sel.time_run_column:
        active = (
            f"SELECT {quote(sel.time_run_column)} FROM {quote(sel.time_table)} "
            f"WHERE {time_sql(quote(sel.time_column), time_type, f.since, dialect)}"
        )
        parts.append(f"{quote(sel.run_column)} IN ({active})")
    return " AND ".join(parts) or "TRUE"
