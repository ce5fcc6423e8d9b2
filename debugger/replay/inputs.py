"""What a replay needs from the store: the starting checkpoint, the original's path after it,
its tape and its effects; and where the replay's result goes (its run id, its output dir).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from debugger.contract import BUDGETS
from debugger.model import Checkpoint, Effect, Run, ToolCall
from debugger.store import Store


@dataclass(frozen=True)
class ReplayInputs:
    """The original run as the replay sees it."""

    run: Run
    start: Checkpoint
    lineage: list[Checkpoint]
    """The original's checkpoints after ``start`` on its path (a fork's newest branch)."""
    tape: list[ToolCall]
    """The original's calls after the starting step."""
    effects: list[Effect]
    """All the original's effects (writes), every step."""

    @property
    def original_last_step(self) -> int | None:
        """The last step the original recorded anything for (checkpoint or call)."""
        after = self.start.step_index
        steps = [c.step_index for c in self.lineage] + [t.step_index for t in self.tape]
        steps += [e.step_index for e in self.effects if e.step_index > after]
        return max(steps) if steps else None

    @cached_property
    def _by_step(self) -> dict[int, Checkpoint]:
        return {c.step_index: c for c in self.lineage}

    def original_at(self, step: int) -> Checkpoint | None:
        """The original's checkpoint at ``step`` on the replayed path."""
        return self._by_step.get(step)


def load_inputs(store: Store, run_id: str, from_step: int) -> ReplayInputs:
    """Read the original run from the store.

    Raises:
        NotFound: no such run, or no checkpoint at ``from_step``.
    """
    run = store.run(run_id)
    start = store.checkpoint(run_id, step=from_step)
    tape = [t for t in store.tool_calls(run_id) if t.step_index > from_step]
    return ReplayInputs(
        run=run,
        start=start,
        lineage=lineage_after(store.checkpoints(run_id), start),
        tape=tape,
        effects=store.effects(run_id),
    )


def lineage_after(checkpoints: list[Checkpoint], start: Checkpoint) -> list[Checkpoint]:
    """The checkpoints that continue ``start``: follow parent links, newest child first.

    Sources without parent links get the newest checkpoint of each later step instead.
    """
    if not any(c.parent_id for c in checkpoints):
        newest: dict[int, Checkpoint] = {}
        for c in checkpoints:
            if c.step_index > start.step_index:
                newest[c.step_index] = c
        return [newest[s] for s in sorted(newest)]
    children: dict[str, list[Checkpoint]] = {}
    for c in checkpoints:
        if c.parent_id:
            children.setdefault(c.parent_id, []).append(c)
    path: list[Checkpoint] = []
    current = start
    while True:
        kids = [c for c in children.get(current.checkpoint_id, [])
                if c.step_index > current.step_index]  # fmt: skip
        if not kids:
            return path
        current = kids[-1]
        path.append(current)


def next_replay_id(store: Store, run_id: str) -> str:
    """``<run>~replay-<n>`` with n one more than any replay of the run so far."""
    ids = store.replay_ids(run_id)
    numbers = [int(m.group(1)) for r in ids if (m := re.search(r"~replay-(\d+)$", r))]
    return f"{run_id}~replay-{max(numbers, default=0) + 1}"


def default_output_root(store_path: str) -> Path:
    """Replays of ``incident.duckdb`` go under ``incident.replays/`` beside it."""
    if store_path == ":memory:":
        return Path.cwd() / "stepscope.replays"
    p = Path(store_path).resolve()
    return p.with_name(p.stem + ".replays")


def slug(text: str) -> str:
    """A file-name-safe form of a run id."""
    return re.sub(r"[^A-Za-z0-9._~-]+", "_", text).strip("._") or "run"


CALL_FIELDS = ("step_index", "seq", "kind", "name", "request", "response", "error",
                "idempotency_key", "is_write")  # fmt: skip
_EFFECT_FIELDS = ("step_index", "idempotency_key", "tool", "args", "status", "result")


def child_input(
    inputs: ReplayInputs, replay_id: str, settings: dict[str, Any], output_dir: Path
) -> dict[str, Any]:
    """The JSON document the child reads."""
    start = inputs.start
    seqs = [t.seq for t in inputs.tape]
    return {
        **settings,
        "run_id": inputs.run.run_id,
        "replay_run_id": replay_id,
        "from_step": start.step_index,
        "limits": start.metadata.get("limits") or inputs.run.limits or {},
        "start": {
            "state": start.working_state,
            "schema_version": start.schema_version,
            "budgets": {name: getattr(start.budgets, name) for name in BUDGETS},
        },
        "original": {
            str(c.step_index): {"state": c.working_state, "schema_version": c.schema_version}
            for c in inputs.lineage
        },
        "original_last_step": inputs.original_last_step,
        # plain dicts, not dataclasses.asdict: on a long tape asdict was the parent's top cost
        "tape": [{f: getattr(t, f) for f in CALL_FIELDS} for t in inputs.tape],
        "effects": [
            {f: getattr(e, f) for f in _EFFECT_FIELDS}
            for e in inputs.effects
            if e.step_index > start.step_index
        ],
        "seq_start": min(seqs) if seqs else 0,
        "output_dir": str(output_dir),
    }
