"""The audited path of a run, and the rule about the branches a fork leaves off it.

The audit follows the head's path (root → head along ``parent_id``); every other branch of a
fork gets a ``fork`` finding, so abandoned work is shown but does not decide the verdict.
"""

from __future__ import annotations

from debugger.audit.registry import AuditInput, rule
from debugger.model import Checkpoint, Finding

__all__ = ["fork_rule", "head_of", "lineage"]


def head_of(checkpoints: list[Checkpoint]) -> Checkpoint:
    """The run's head: the checkpoint written last (created_at, then step, then write order).

    ``debugger.store.derive`` orders the same way for ``runs.head_checkpoint_id``.
    """
    order = {id(c): i for i, c in enumerate(checkpoints)}
    return max(
        checkpoints,
        key=lambda c: (c.created_at is not None, c.created_at or 0, c.step_index, order[id(c)]),
    )


def lineage(
    checkpoints: list[Checkpoint], head: Checkpoint | None = None
) -> tuple[list[Checkpoint], list[Checkpoint]]:
    """The head's path (root → head) and the heads of the other branches.

    Args:
        checkpoints: every checkpoint of the run, in write order.
        head: the head, when the store has derived it; else :func:`head_of` picks it.

    Returns:
        The path from the root to the head, and the heads of the branches off it.
    """
    head = head if head is not None else head_of(checkpoints)
    by_id = {c.checkpoint_id: c for c in checkpoints}
    path, seen = [head], {head.checkpoint_id}
    while path[-1].parent_id in by_id and path[-1].parent_id not in seen:
        parent = by_id[path[-1].parent_id]  # type: ignore[index]
        path.append(parent)
        seen.add(parent.checkpoint_id)
    # built once: a set expression inside the comprehension would be rebuilt per checkpoint
    not_branch = {c.parent_id for c in checkpoints} | seen
    branches = [c for c in checkpoints if c.checkpoint_id not in not_branch]
    return path[::-1], branches


@rule("fork")
def fork_rule(inp: AuditInput) -> list[Finding]:
    """A branch of a fork that is not on the head's path; a fork made on purpose on it."""
    on_path = {c.checkpoint_id for c in inp.lineage}
    by_id = {c.checkpoint_id: c for c in inp.checkpoints}
    out = _on_purpose(inp, by_id)
    for b in inp.branches:
        fork: Checkpoint | None = b
        while fork is not None and fork.checkpoint_id not in on_path:
            fork = by_id.get(fork.parent_id) if fork.parent_id else None
        since = f", forked from step {fork.step_index}" if fork is not None else ""
        out.append(
            Finding(
                "fork", "info", b.step_index,
                f"a branch ending at step {b.step_index} (checkpoint {b.checkpoint_id}{since}) "
                "is not on the head's path; the audit follows the head",
                "open the branch in the Timeline to see the abandoned work",
            )
        )  # fmt: skip
    return out


def _on_purpose(inp: AuditInput, by_id: dict[str, Checkpoint]) -> list[Finding]:
    out = []
    for c in inp.lineage:
        how = inp.runtime.forked_on_purpose(c)
        if not how:
            continue
        parent = by_id.get(c.parent_id) if c.parent_id else None
        since = f" from step {parent.step_index}" if parent is not None else ""
        out.append(
            Finding(
                "fork", "info", c.step_index,
                f"the checkpoint at step {c.step_index} (checkpoint {c.checkpoint_id}) is a fork "
                f"made on purpose{since}: {how}; the run's history goes on from it",
                "nothing to do: time travel is history, not a repeat; compare the branches in "
                "the Timeline",
            )
        )  # fmt: skip
    return out
