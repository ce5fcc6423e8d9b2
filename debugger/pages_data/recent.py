"""Keeping a step change cheap: the last few checkpoints read, and no GC while diffing.

Stepping forward compares the new step with the one just left, so keeping the last few
checkpoints (their states as stored text) means a step change reads one checkpoint, not two.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from debugger.diff.text import StateText
from debugger.json_text import gc_paused as gc_paused  # the pages import it from here
from debugger.model import Checkpoint
from debugger.store import Store

if TYPE_CHECKING:
    from debugger.pages_data.timeline import StepRef


RECENT_CHECKPOINTS = 4
"""Checkpoints kept in memory: stepping forward reuses the step it left as the previous one,
so a step change reads one checkpoint, not two."""


@dataclass(frozen=True)
class Fetched:
    """A checkpoint read for the Timeline: its working state is kept as the stored text.

    The step view only compares states, which :func:`debugger.diff.text.diff_texts` does
    on their texts, parsing only what differs; the full state is parsed when someone opens it.
    """

    checkpoint: Checkpoint
    """The checkpoint, with ``working_state`` None (not parsed)."""
    state: StateText
    """The working state's JSON text as stored, with what diffs have split of it."""


_recent: OrderedDict[tuple[str, str, str, str], Fetched] = OrderedDict()
_recent_lock = threading.Lock()


def clear_recent() -> None:
    """Forget the recent checkpoints (benchmarks measure a cold read with it)."""
    with _recent_lock:
        _recent.clear()


def fetch(store: Store, run_id: str, refs: list[StepRef], ref: StepRef) -> Fetched:
    """Read the checkpoint of ``ref``: from the recent ones, else by step (an indexed point
    read) when it is alone at its step, else by checkpoint id.

    Recent checkpoints are keyed by store file, run, checkpoint id and state hash, so a
    different store or a rewritten checkpoint is never served from memory.
    """
    key = (store.path, run_id, ref.checkpoint_id, ref.state_hash)
    with _recent_lock:
        if key in _recent and ref.state_hash:
            _recent.move_to_end(key)
            return _recent[key]
    alone = sum(1 for r in refs if r.step_index == ref.step_index) == 1
    if alone:
        ckpt, text = store.checkpoint_text(run_id, step=ref.step_index)
    else:
        ckpt, text = store.checkpoint_text(run_id, checkpoint_id=ref.checkpoint_id)
    fetched = Fetched(ckpt, StateText(text))
    if ckpt.checkpoint_id == ref.checkpoint_id and ckpt.state_hash == ref.state_hash:
        with _recent_lock:
            _recent[key] = fetched
            while len(_recent) > RECENT_CHECKPOINTS:
                _recent.popitem(last=False)
    return fetched
