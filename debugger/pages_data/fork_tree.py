"""The fork tree of a run: where its checkpoints branch, and the replays made of it.

Several checkpoints continuing one parent are a fork (a resume from an older checkpoint, a
re-executed step); a replay is a separate run with ``replay_of`` set. The Timeline draws the
tree from :func:`fork_dot`; notebooks can use :func:`fork_tree` directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from debugger.model import step_span
from debugger.pages_data.markup import md_text
from debugger.pages_data.timeline import StepRef, step_refs
from debugger.store import Store


@dataclass(frozen=True)
class Segment:
    """A straight stretch of a run's checkpoint tree (no branching inside)."""

    segment_id: int
    """Position of the segment (its first checkpoint's write order)."""
    first_step: int
    """Step of its first checkpoint."""
    last_step: int
    """Step of its last checkpoint."""
    checkpoints: list[str]
    """Its checkpoint ids in order."""
    parent_segment: int | None
    """The segment it branches from (None for a root)."""


@dataclass(frozen=True)
class ForkTree:
    """Where a run branches (several checkpoints continuing one parent) and its replays."""

    run_id: str
    segments: list[Segment]
    """Straight stretches; more than one means the run forks."""
    branch_points: list[str]
    """Checkpoints with more than one child."""
    replays: list[dict[str, Any]]
    """Runs replaying this one: run_id, replay_from_step, status."""
    replay_of: dict[str, Any] | None
    """For a replay: the original run and the step it started from."""

    @property
    def forks(self) -> bool:
        """True when the run branches or has replays."""
        return bool(self.branch_points or self.replays or self.replay_of)


def _segments(refs: list[StepRef]) -> tuple[list[Segment], list[str]]:
    ids = {r.checkpoint_id for r in refs}
    children: dict[str, list[StepRef]] = {}
    for r in refs:
        if r.parent_id in ids:
            children.setdefault(str(r.parent_id), []).append(r)
    branch_points = [p for p, kids in children.items() if len(kids) > 1]
    starts = [r for r in refs if r.parent_id not in ids or r.parent_id in branch_points]
    seg_of: dict[str, int] = {}
    segments = []
    for start in starts:
        chain = [start]
        while len(children.get(chain[-1].checkpoint_id, [])) == 1:
            chain.append(children[chain[-1].checkpoint_id][0])
        for r in chain:
            seg_of[r.checkpoint_id] = start.position
        segments.append((start, chain))
    out = [
        Segment(
            start.position,
            chain[0].step_index,
            chain[-1].step_index,
            [r.checkpoint_id for r in chain],
            seg_of.get(str(start.parent_id)),
        )
        for start, chain in segments
    ]
    return out, branch_points


def fork_tree(store: Store, run_id: str, refs: list[StepRef] | None = None) -> ForkTree:
    """The run's checkpoint tree, cut into straight segments, with its replays.

    Raises:
        NotFound: no such run.
    """
    refs = refs if refs is not None else step_refs(store, run_id)
    segments, branch_points = _segments(refs)
    run = store.run(run_id)
    replays = [
        {"run_id": r.run_id, "replay_from_step": r.replay_from_step, "status": r.status}
        for r in store.run_records()
        if r.replay_of == run_id
    ]
    original = (
        {"run_id": run.replay_of, "replay_from_step": run.replay_from_step}
        if run.replay_of
        else None
    )
    return ForkTree(run_id, segments, branch_points, replays, original)


def _quote(text: str) -> str:
    # labels use DOT's own "\\n" escape for line breaks, so only quotes are escaped
    return '"' + text.replace('"', "'") + '"'


def checkpoint_href(page_url: str, run_id: str, checkpoint_id: str | None = None) -> str:
    """The Timeline's address of a run (at a checkpoint), relative to the app's."""
    query = f"?run={quote(run_id, safe='')}"
    if checkpoint_id:
        query += f"&checkpoint={quote(checkpoint_id, safe='')}"
    return f"{page_url}{query}"


def _node_url(href: str) -> str:
    return f', URL={_quote(href)}, target="_self"'


def node_links(tree: ForkTree, page_url: str) -> list[str]:
    """One Markdown line per node of the tree, linking the checkpoints it holds (text
    escaped; links to this app's own pages only)."""
    lines = []
    for seg in tree.segments:
        ends = dict.fromkeys([seg.checkpoints[0], seg.checkpoints[-1]])
        links = ", ".join(
            f"[{md_text(c)}]({checkpoint_href(page_url, tree.run_id, c)})" for c in ends
        )
        lines.append(f"{_steps(seg)}: {links}")
    for rep in tree.replays:
        href = checkpoint_href(page_url, rep["run_id"])
        lines.append(f"replay [{md_text(rep['run_id'])}]({href}) from step "
                     f"{rep['replay_from_step']} ({md_text(rep['status'])})")  # fmt: skip
    if tree.replay_of:
        href = checkpoint_href(page_url, tree.replay_of["run_id"])
        lines.append(f"original [{md_text(tree.replay_of['run_id'])}]({href})")
    return lines


def _steps(seg: Segment) -> str:
    span = step_span(seg.first_step, seg.last_step)
    return f"step {span}" if seg.first_step == seg.last_step else f"steps {span}"


def fork_dot(tree: ForkTree, page_url: str | None = None) -> str:
    """Graphviz DOT source of a fork tree: one box a segment, replays as dashed boxes; with
    ``page_url`` (the Timeline's), each box links to its last checkpoint."""
    lines = [
        "digraph forks {",
        "rankdir=LR;",
        'node [shape=box, style="rounded,filled", fillcolor="#f5f5f4", fontsize=11];',
    ]
    for seg in tree.segments:
        label = f"{_steps(seg)}\\n{len(seg.checkpoints)} checkpoint(s)"
        url = (
            _node_url(checkpoint_href(page_url, tree.run_id, seg.checkpoints[-1]))
            if page_url
            else ""
        )
        lines.append(f"s{seg.segment_id} [label={_quote(label)}{url}];")
        if seg.parent_segment is not None:
            lines.append(f"s{seg.parent_segment} -> s{seg.segment_id};")
    for i, rep in enumerate(tree.replays):
        label = f"replay {rep['run_id']}\\nfrom step {rep['replay_from_step']} · {rep['status']}"
        url = _node_url(checkpoint_href(page_url, rep["run_id"])) if page_url else ""
        lines.append(f'r{i} [label={_quote(label)}, style="rounded,dashed"{url}];')
        anchor = _segment_at(tree.segments, rep["replay_from_step"])
        if anchor is not None:
            lines.append(f"s{anchor} -> r{i} [style=dashed];")
    if tree.replay_of:
        label = f"original {tree.replay_of['run_id']}"
        lines.append(f'o [label={_quote(label)}, style="rounded,dashed"];')
        if tree.segments:
            lines.append(f"o -> s{tree.segments[0].segment_id} [style=dashed];")
    lines.append("}")
    return "\n".join(lines)


def _segment_at(segments: list[Segment], step: int | None) -> int | None:
    for seg in segments:
        if step is not None and seg.first_step <= step <= seg.last_step:
            return seg.segment_id
    return segments[0].segment_id if segments else None
