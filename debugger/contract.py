"""What several parts of Stepscope share: columns, the native shape, budgets, agents.

The bottom layer with the store: it imports only the standard library, so loaders, the
runtime, the replay and the pages can all rely on it without depending on each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, cast

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
"""The canonical columns of each table a flavour stages for the store, by table name."""

BUDGETS = ("tokens_spent", "steps_spent", "wall_clock_ms")
"""The budgets a checkpoint records as consumed, in the order every view shows them."""

BUDGET_LIMITS = dict(zip(BUDGETS, ("tokens", "steps", "wall_clock_ms"), strict=True))
"""The key of each budget's limit in ``metadata.limits``: the runtime's own names for them."""


# -- the native shape ---------------------------------------------------------------------
# The tables a runtime writes so that Stepscope imports them exactly (docs/native-shape.md).
# One column list for every writer: the runtime's file, the replay's file and the sample
# exports (SQLite and Postgres) render their DDL from it, so they cannot drift apart.


@dataclass(frozen=True)
class NativeColumn:
    """One column of a native table, with its type in each dialect written."""

    name: str
    sqlite: str
    postgres: str
    required: bool
    """NOT NULL where the writer declares constraints (the runtime and Postgres)."""
    bookkeeping: bool = False
    """The runtime's own ordering column: written by the runtime, ignored by importers."""


def _columns(spec: str) -> tuple[NativeColumn, ...]:
    # "name sqlite postgres [!] [+]": ! is NOT NULL, + is bookkeeping; one column a line
    out = []
    for line in spec.strip().splitlines():
        name, sqlite, postgres, *flags = line.split()
        out.append(NativeColumn(name, sqlite, postgres, "!" in flags, "+" in flags))
    return tuple(out)


NATIVE_COLUMNS: dict[str, tuple[NativeColumn, ...]] = {
    "checkpoints": _columns("""
        run_id TEXT text !
        checkpoint_id TEXT text !
        parent_id TEXT text
        checkpoint_seq INTEGER integer ! +
        step_index INTEGER integer !
        schema_version INTEGER integer
        created_at TEXT timestamptz !
        working_state TEXT json !
        tokens_spent INTEGER bigint !
        steps_spent INTEGER bigint !
        wall_clock_ms INTEGER bigint !
        pending_effects TEXT json !
        model_version TEXT text
        tool_versions TEXT json !
        metadata TEXT json !
    """),
    "effects": _columns("""
        run_id TEXT text !
        effect_id TEXT text !
        seq INTEGER integer ! +
        step_index INTEGER integer !
        idempotency_key TEXT text
        tool TEXT text !
        args TEXT json
        status TEXT text !
        result TEXT json
        created_at TEXT timestamptz
    """),
    "tool_calls": _columns("""
        run_id TEXT text !
        call_id TEXT text !
        step_index INTEGER integer !
        seq INTEGER integer !
        kind TEXT text !
        name TEXT text !
        request TEXT json
        response TEXT json
        error TEXT text
        idempotency_key TEXT text
        is_write INTEGER boolean !
    """),
}
"""The native tables in the order they are written; JSON is stored as text in SQLite and
as ``json`` (not ``jsonb``) in Postgres, so the stored text, and so the state hashes, are
the same in every form."""

NATIVE_KEYS = {
    "checkpoints": ("run_id", "checkpoint_id"),
    "effects": ("run_id", "effect_id"),
    "tool_calls": ("run_id", "call_id"),
}
"""The primary key of each native table: ids are explicit so that an import is exact."""


def native_fields(table: str) -> tuple[str, ...]:
    """Every column the runtime writes to a native table, bookkeeping included, in order."""
    return tuple(c.name for c in NATIVE_COLUMNS[table])


def native_ddl(table: str, dialect: str = "sqlite", *, constraints: bool = True) -> str:
    """The CREATE TABLE statement of a native table.

    Args:
        table: ``checkpoints``, ``effects`` or ``tool_calls``.
        dialect: ``sqlite`` or ``postgres``.
        constraints: with NOT NULL, the primary key and the bookkeeping columns (the
            runtime's file and the exports); without, the canonical columns only, untyped
            beyond their affinity (a file written whole by one writer, as a replay's is).

    Returns:
        The statement; Postgres statements end with a semicolon (they go into a script).
    """
    cols = NATIVE_COLUMNS[table]
    if not constraints:
        defs = [f"{c.name} {c.sqlite}" for c in cols if not c.bookkeeping]
        return f"CREATE TABLE {table} ({', '.join(defs)})"
    if dialect == "sqlite":
        return _SQLITE_DDL[table]
    if dialect != "postgres":
        raise ValueError(f"dialect must be sqlite or postgres, not {dialect!r}")
    defs = [f"{c.name} {c.postgres}{' NOT NULL' if c.required else ''}" for c in cols]
    key = f"PRIMARY KEY ({', '.join(NATIVE_KEYS[table])})"
    return f"CREATE TABLE {table} ({', '.join(defs)}, {key});"


# SQLite keeps a CREATE statement's text verbatim in the file, and the sample files are
# compared byte for byte, so the runtime's statements keep their line layout here;
# tests/test_contract.py checks they declare exactly NATIVE_COLUMNS and NATIVE_KEYS.
_SQLITE_DDL = {
    "checkpoints": """CREATE TABLE IF NOT EXISTS checkpoints (
        run_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_id TEXT,
        checkpoint_seq INTEGER NOT NULL, step_index INTEGER NOT NULL, schema_version INTEGER,
        created_at TEXT NOT NULL, working_state TEXT NOT NULL, tokens_spent INTEGER NOT NULL,
        steps_spent INTEGER NOT NULL, wall_clock_ms INTEGER NOT NULL, pending_effects TEXT NOT NULL,
        model_version TEXT, tool_versions TEXT NOT NULL, metadata TEXT NOT NULL,
        PRIMARY KEY (run_id, checkpoint_id))""",
    "effects": """CREATE TABLE IF NOT EXISTS effects (
        run_id TEXT NOT NULL, effect_id TEXT NOT NULL, seq INTEGER NOT NULL,
        step_index INTEGER NOT NULL, idempotency_key TEXT, tool TEXT NOT NULL, args TEXT,
        status TEXT NOT NULL, result TEXT, created_at TEXT,
        PRIMARY KEY (run_id, effect_id))""",
    "tool_calls": """CREATE TABLE IF NOT EXISTS tool_calls (
        run_id TEXT NOT NULL, call_id TEXT NOT NULL, step_index INTEGER NOT NULL,
        seq INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, request TEXT,
        response TEXT, error TEXT, idempotency_key TEXT, is_write INTEGER NOT NULL,
        PRIMARY KEY (run_id, call_id))""",
}


# -- agents and their context -------------------------------------------------------------


class Context(Protocol):
    """The ``ctx`` an agent's step gets: every call to the world goes through it.

    The runtime's context records each call; the replay's sandbox answers it from the
    tape. An agent typed against this works under both, which is what makes a replay of
    recorded code possible.
    """

    @property
    def step_index(self) -> int:
        """The step being run."""
        ...

    def tool(self, name: str, **args: Any) -> Any:
        """Call a read tool and return its answer."""
        ...

    def effect(self, name: str, key: str | None, **args: Any) -> Any:
        """Run a write once per idempotency ``key`` and return its result."""
        ...

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        """Call the model; ``usage.total_tokens`` of the answer is charged to the budget."""
        ...


class Agent(Protocol):
    """What the runtime and the replay run: one step at a time until it is done.

    Optional hooks, used when present and so not part of the Protocol:
    ``planned_effects(state)``, ``interrupt(state)``, ``on_input(state, input)``,
    ``name`` and ``schema_version``.
    """

    def step(self, state: Any, ctx: Context) -> Any:
        """One loop iteration: the next state (a JSON value) from this one."""
        ...

    def is_done(self, state: Any) -> bool:
        """True when the run has finished."""
        ...


def check_agent(obj: object, what: str) -> Agent:
    """``obj`` as an Agent, or a TypeError naming the methods it lacks.

    Args:
        obj: the object loaded or passed as the agent.
        what: how to name it in the error (e.g. its ``module:attribute``).

    Raises:
        TypeError: ``step`` or ``is_done`` is missing or not callable.
    """
    missing = [m for m in ("step", "is_done") if not callable(getattr(obj, m, None))]
    if missing:
        need = {"step": "step(state, ctx)", "is_done": "is_done(state)"}
        raise TypeError(
            f"{what} is not an agent: it has no {' and no '.join(need[m] for m in missing)} method"
        )
    return cast(Agent, obj)


# Optional staged columns: what a reader that made the values itself may hand the store with
# the canonical columns, so the store need not redo that work.

JSON_WRITTEN = "_json_written"
"""Optional staged column (any value): the batch's JSON documents were serialized by the
reader itself (orjson, as the LangGraph flavour writes the states it decodes), so they are
valid JSON and the store does not parse them again with ``json_valid``, the larger part of
staging a batch of large states. Their JSON types (object, array) are still checked."""

GIVEN_STATE_HASH = "_state_hash"
"""Optional staged column: the state's hash, computed by a reader that made the state's text.

The LangGraph flavour writes each state's JSON in Python and hashes it there, where it is
cheap. Computed by the store instead, the hash is a Python function that needs the GIL,
which the reader's decoding holds nearly all the time, so staging would wait on it. It must
be :func:`debugger.store.state_hash.of_text` of exactly the ``working_state`` text.
"""

GIVEN_STATE_DEPTH = "_state_depth"
GIVEN_STATE_SPLIT = ("_state_skeleton", "_state_cuts", "_state_refs", GIVEN_STATE_DEPTH)
"""Optional staged columns: the state cut into skeleton and parts by the reader that wrote
its text (see :mod:`debugger.store.state_parts`), so the store does not parse it again.

``_state_skeleton`` (text, NULL: the store cuts the state itself if it is large enough),
``_state_cuts`` (character offsets into the skeleton, ascending) and ``_state_refs`` (the
parts' hashes, :func:`debugger.store.state_parts.part_hash`), such that
``join(skeleton, cuts, refs, parts)`` is exactly the ``working_state`` text; only a state
of ``SPLIT_MIN_BYTES`` or more with at least one part is handed over this way. Every part
a batch's rows refer to is carried by one of the batch's rows in :data:`GIVEN_STATE_PARTS`.
``_state_depth`` is the state's nesting depth as :func:`debugger.store.json_depth.depth`
counts it (from the skeleton and the parts, each measured once), which the store's check
of the depth then reads instead of the whole text (NULL: the store measures the text).
"""

GIVEN_STATE_PARTS = ("_state_part_hashes", "_state_parts")
"""Optional staged columns with :data:`GIVEN_STATE_SPLIT`: lists of part hashes and their
texts, on any rows of the batch (each part once per batch is enough)."""


def pending_entries(value: Any) -> list[dict[str, Any]]:
    """A checkpoint's ``pending_effects`` (a JSON array) as one object per pending effect.

    An entry given as a string is its idempotency key (``["refund-A-17"]``, what a first
    checkpointing sketch writes), so the audit and the pages look that key up; another
    non-object entry is kept under ``value``. Stored as written: this is how it is read.
    """
    if not isinstance(value, list):
        return []
    return [
        p if isinstance(p, dict) else {"idempotency_key": p} if isinstance(p, str) else {"value": p}
        for p in value
    ]


UNDECODABLE = "_undecodable"
"""Optional column of a source batch (a reader's, before any flavour): for each row, why a
value of it could not be read as what its column holds (text that is not UTF-8), else
NULL. The import quarantines such rows alone, with that reason, before the flavour's
projection sees the batch; the other rows of the batch go on."""
