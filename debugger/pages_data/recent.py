"""Keeping a step change cheap: the last few parsed checkpoints, and no GC while parsing.

Stepping forward compares the new step with the one just left, so keeping the last few
parsed checkpoints means a step change reads and parses one checkpoint, not two.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from debugger.diff_prune import ChunkMemo
from debugger.model import Checkpoint
from debugger.store import Store

if TYPE_CHECKING:
    from debugger.pages_data.step import StepRef


@contextmanager
def gc_paused(promote: bool = False) -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a step's view is built.

    Parsing and diffing a 1 MB state allocates some 100,000 dicts and lists, and every burst
    of allocations triggers collections that traverse them, and the parsed states kept for
    stepping make the older generations large: measured, a 1 MB step took 82 ms with the
    collector running and 35-46 ms without. Parsed JSON has no reference cycles, so nothing
    is lost by collecting afterwards. Only re-enabled if it was enabled (threads may nest).

    Args:
        promote: move what was allocated meanwhile straight into the oldest generation
            (``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no traversal) instead
            of leaving it young. The Timeline's step does this: the state it parsed is kept
            for stepping, and the young-generation pass that would only find it alive cost
            2-3 ms of a 1 MB step (measured, load ~4.6: median CPU 35.8 -> 32.7 ms). Cyclic
            garbage made meanwhile (DeepDiff's levels, a few per changed path) then waits for
            the next full collection. Skipped when something else has frozen objects, so
            their freeze is never undone.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if promote and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


RECENT_CHECKPOINTS = 4
"""Parsed checkpoints kept in memory: stepping forward reuses the step it left as the
previous one, so a step change reads and parses one checkpoint, not two."""


@dataclass(frozen=True)
class Parsed:
    """A checkpoint read for the Timeline, with the chunk memo of its working state."""

    checkpoint: Checkpoint
    """The checkpoint (frozen: its working state is never mutated)."""
    memo: ChunkMemo
    """Serialized chunks of the working state, filled by the diffs it takes part in, so the
    next step's diff does not serialize this state again (see
    :class:`debugger.diff_prune.ChunkMemo`; the store parses states from JSON)."""


_recent: OrderedDict[tuple[str, str, str, str], Parsed] = OrderedDict()
_recent_lock = threading.Lock()


def clear_recent() -> None:
    """Forget the recent checkpoints (benchmarks measure a cold read with it)."""
    with _recent_lock:
        _recent.clear()


def fetch(store: Store, run_id: str, refs: list[StepRef], ref: StepRef) -> Parsed:
    """Read the checkpoint of ``ref``: from the recent ones, else by step (an indexed point
    read) when it is alone at its step, else by checkpoint id.

    Recent checkpoints are keyed by store file, run, checkpoint id and state hash, so a
    different store or a rewritten checkpoint is never served from memory. Checkpoints are
    frozen; callers must not mutate their working state.
    """
    key = (store.path, run_id, ref.checkpoint_id, ref.state_hash)
    with _recent_lock:
        if key in _recent and ref.state_hash:
            _recent.move_to_end(key)
            return _recent[key]
    alone = sum(1 for r in refs if r.step_index == ref.step_index) == 1
    if alone:
        ckpt = store.checkpoint(run_id, step=ref.step_index)
    else:
        ckpt = store.checkpoint(run_id, checkpoint_id=ref.checkpoint_id)
    parsed = Parsed(ckpt, ChunkMemo(json_only=True))
    if ckpt.checkpoint_id == ref.checkpoint_id and ckpt.state_hash == ref.state_hash:
        with _recent_lock:
            _recent[key] = parsed
            while len(_recent) > RECENT_CHECKPOINTS:
                _recent.popitem(last=False)
    return parsed
