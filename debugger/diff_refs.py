"""``RUN:STEP`` and ``RUN@CHECKPOINT_ID`` references, as the CLI and notebooks write them.

Run ids may contain colons (LangGraph thread and namespace), so ``RUN:STEP`` splits at the
*last* colon, and only when what follows is an integer (steps may be negative: LangGraph's
input checkpoint is step -1). ``RUN@CHECKPOINT_ID`` names one checkpoint exactly, which is
what a fork needs (several checkpoints at one step); it splits at the last ``@``. When both
could apply, a trailing ``:INTEGER`` wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from debugger.diff_checkpoint import CheckpointDiff, diff_checkpoints
from debugger.diff_states import PathPattern
from debugger.errors import StepscopeError
from debugger.model import Checkpoint

if TYPE_CHECKING:
    from debugger.store import Store


class BadReference(StepscopeError):
    """A checkpoint reference is not ``RUN:STEP`` or ``RUN@CHECKPOINT_ID``."""

    title = "Bad checkpoint reference"


@dataclass(frozen=True)
class CheckpointSpec:
    """A parsed reference: a run and either a step or a checkpoint id."""

    run_id: str
    """The run."""
    step: int | None = None
    """The step (the newest checkpoint at that step), or None."""
    checkpoint_id: str | None = None
    """The exact checkpoint, or None."""


def parse_spec(text: str) -> CheckpointSpec:
    """Parse ``RUN:STEP`` or ``RUN@CHECKPOINT_ID``.

    Raises:
        BadReference: neither form, an empty run, or an empty checkpoint id.
    """
    run, sep, tail = text.rpartition(":")
    if sep and _is_int(tail):
        if not run:
            raise BadReference(f"{text!r} has no run before ':'", _HINT)
        return CheckpointSpec(run, step=int(tail))
    run, sep, tail = text.rpartition("@")
    if sep:
        if not run or not tail:
            raise BadReference(f"{text!r} needs a run and a checkpoint id around '@'", _HINT)
        return CheckpointSpec(run, checkpoint_id=tail)
    if ":" in text:
        raise BadReference(f"{text!r}: the step after the last ':' must be an integer", _HINT)
    raise BadReference(f"{text!r} is not RUN:STEP or RUN@CHECKPOINT_ID", _HINT)


_HINT = "write it as crash-at-step-7:6, or run@<checkpoint id> from `stepscope show RUN`"


def _is_int(text: str) -> bool:
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isdigit() and digits.isascii()


def load_checkpoint(store: Store, spec: CheckpointSpec | str) -> Checkpoint:
    """Fetch the checkpoint a reference names.

    Raises:
        BadReference: ``spec`` is a malformed string.
        NotFound: no such run, step or checkpoint.
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    return store.checkpoint(spec.run_id, step=spec.step, checkpoint_id=spec.checkpoint_id)


def diff_refs(
    store: Store,
    a: CheckpointSpec | str,
    b: CheckpointSpec | str,
    ignore_paths: Iterable[PathPattern] = (),
    ignore_order: Iterable[PathPattern] = (),
) -> CheckpointDiff:
    """Diff two checkpoints named by reference (``"crash-at-step-7:6"``, ``"run@ckpt"``)."""
    return diff_checkpoints(
        load_checkpoint(store, a), load_checkpoint(store, b), ignore_paths, ignore_order
    )
