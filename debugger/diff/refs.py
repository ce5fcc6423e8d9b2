"""``RUN:STEP`` and ``RUN@CHECKPOINT_ID`` references, as the CLI and notebooks write them.

Run ids may contain colons (LangGraph thread and namespace), so ``RUN:STEP`` splits at the
*last* colon, and only when what follows is an integer (steps may be negative: LangGraph's
input checkpoint is step -1). ``RUN@CHECKPOINT_ID`` names one checkpoint exactly, which is
what a fork needs (several checkpoints at one step). Checkpoint ids may contain ``@``
(a replay's are ``<replay run>@<step>``) and so may run ids, so a reference can be read
several ways; :func:`readings` lists them (``RUN:STEP`` first, then ``@`` splits from the
first ``@`` to the last) and :func:`load_checkpoint` takes the first whose run exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from debugger.diff.checkpoint import CheckpointDiff, diff_checkpoints
from debugger.diff.states import Patterns
from debugger.errors import NotFound, StepscopeError
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
    """Parse ``RUN:STEP`` or ``RUN@CHECKPOINT_ID`` (the preferred reading, see :func:`readings`).

    Raises:
        BadReference: neither form, an empty run, or an empty checkpoint id.
    """
    return readings(text)[0]


def readings(text: str) -> list[CheckpointSpec]:
    """Every way to read a reference, the preferred first.

    Raises:
        BadReference: no reading at all.
    """
    found: list[CheckpointSpec] = []
    run, sep, tail = text.rpartition(":")
    if sep and _is_int(tail):
        if not run:
            raise BadReference(f"{text!r} has no run before ':'", _HINT)
        found.append(CheckpointSpec(run, step=int(tail)))
    at = [i for i, ch in enumerate(text) if ch == "@" and 0 < i < len(text) - 1]
    found += [CheckpointSpec(text[:i], checkpoint_id=text[i + 1 :]) for i in at]
    if found:
        return found
    if "@" in text:
        raise BadReference(f"{text!r} needs a run and a checkpoint id around '@'", _HINT)
    if ":" in text:
        raise BadReference(f"{text!r}: the step after the last ':' must be an integer", _HINT)
    raise BadReference(f"{text!r} is not RUN:STEP or RUN@CHECKPOINT_ID", _HINT)


_HINT = "write it as crash-at-step-7:6, or run@<checkpoint id> from `stepscope show RUN`"


def _is_int(text: str) -> bool:
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isdigit() and digits.isascii()


def load_checkpoint(store: Store, spec: CheckpointSpec | str) -> Checkpoint:
    """Fetch the checkpoint a reference names.

    A string is tried in each of its :func:`readings`; the first whose run is in the store
    decides.

    Raises:
        BadReference: ``spec`` is a malformed string.
        NotFound: no such run, step or checkpoint.
    """
    specs = readings(spec) if isinstance(spec, str) else [spec]
    chosen = next((s for s in specs if _run_exists(store, s.run_id)), specs[0])
    return store.checkpoint(chosen.run_id, step=chosen.step, checkpoint_id=chosen.checkpoint_id)


def _run_exists(store: Store, run_id: str) -> bool:
    try:
        store.run(run_id)
    except NotFound:
        return False
    return True


def diff_refs(
    store: Store,
    a: CheckpointSpec | str,
    b: CheckpointSpec | str,
    ignore_paths: Patterns = (),
    ignore_order: Patterns = (),
) -> CheckpointDiff:
    """Diff two checkpoints named by reference (``"crash-at-step-7:6"``, ``"run@ckpt"``)."""
    return diff_checkpoints(
        load_checkpoint(store, a), load_checkpoint(store, b), ignore_paths, ignore_order
    )
