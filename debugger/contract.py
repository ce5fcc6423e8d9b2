"""What several parts of Stepscope share: the canonical columns and the budget names.

The bottom layer with the store: it imports only the standard library, so loaders, the
runtime, the replay and the pages can all rely on it without depending on each other.
"""

from __future__ import annotations

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
