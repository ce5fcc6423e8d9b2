"""State and checkpoint diff: the public API (``from debugger.diff import ...``).

- :func:`diff_states` ``(old, new, ignore_paths=(), ignore_order=()) -> list[DiffRow]``:
  exactly plain DeepDiff's rows, computed only on the branches that differ.
- :func:`diff_texts` ``(old_text, new_text, ...)``: the same rows from two states' JSON texts,
  parsing only the branches whose texts differ (:class:`StateText` keeps a text's splits).
- :func:`diff_checkpoints` ``(a, b, ignore_paths=(), ignore_order=()) -> CheckpointDiff``:
  state rows plus budgets, pending effects (by idempotency key) and metadata.
- :func:`diff_refs` resolves ``RUN:STEP`` / ``RUN@CHECKPOINT_ID`` strings against a store.

The implementation is split by responsibility: :mod:`debugger.diff.prune` (identical-subtree
pruning), :mod:`debugger.diff.sequence` (difflib's alignment of scalar lists),
:mod:`debugger.diff.states` (rows), :mod:`debugger.diff.text` (from JSON texts),
:mod:`debugger.diff.checkpoint` (checkpoints), :mod:`debugger.diff.refs` (references). None
of them imports streamlit.
"""

from __future__ import annotations

from debugger.diff.checkpoint import (
    BudgetChange,
    CheckpointDiff,
    CheckpointRef,
    EffectChange,
    diff_budgets,
    diff_checkpoints,
    diff_pending_effects,
)
from debugger.diff.refs import (
    BadReference,
    CheckpointSpec,
    diff_refs,
    load_checkpoint,
    parse_spec,
    readings,
)
from debugger.diff.states import (
    DiffOptionError,
    DiffRow,
    PathPattern,
    Patterns,
    StateDiff,
    diff_states,
    plain_deepdiff_rows,
)
from debugger.diff.text import StateText, diff_texts

__all__ = [
    "BadReference",
    "BudgetChange",
    "CheckpointDiff",
    "CheckpointRef",
    "CheckpointSpec",
    "DiffOptionError",
    "DiffRow",
    "EffectChange",
    "PathPattern",
    "Patterns",
    "StateDiff",
    "StateText",
    "diff_budgets",
    "diff_checkpoints",
    "diff_pending_effects",
    "diff_refs",
    "diff_states",
    "diff_texts",
    "load_checkpoint",
    "parse_spec",
    "plain_deepdiff_rows",
    "readings",
]
