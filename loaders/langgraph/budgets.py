"""Tokens consumed by a LangGraph run: per lineage, never decreasing, subgraphs rolled up.

The rule (docs/langgraph.md, "Budgets"):

- a checkpoint's consumed tokens are its parent's plus the ``usage_metadata`` tokens of the
  AI messages in its state that its parent's state did not hold (by message id). Removing a
  message (``RemoveMessage``, trimming) therefore never lowers the count, an edited message
  that keeps its id is not counted again, and a fork counts only its own branch;
- a subgraph's checkpoints (namespace ``<node>:<task>``) are their own run with their own
  count; the root run of the thread also counts them: an AI message first seen in a
  namespace under root checkpoint ``P`` (``metadata.parents[""]``) is added at ``P``'s
  children (the checkpoint the subgraph's step produced), or at ``P`` itself when ``P`` is
  the head, unless the root's own state holds the same message id (counted once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loaders.langgraph.map import Seen

AiTokens = dict[str, int]
"""Tokens of the distinct AI messages of a state, by message id."""


def ai_tokens(messages: list[Seen]) -> tuple[AiTokens, str | None]:
    """Tokens of the distinct AI messages, and the last model name seen."""
    out = {f.key: f.tokens for _, f in messages if f.kind == "ai"}
    model = None
    for _, f in reversed(messages):
        if f.kind == "ai" and f.model:
            model = f.model
            break
    return out, model


class Spend:
    """Consumed tokens of one run, checkpoint by checkpoint (walked in id order).

    The AI messages of the last ``KEEP`` checkpoints are kept to diff a child against its
    parent; a fork from an older checkpoint falls back to ``max(parent's count, own sum)``.
    """

    KEEP = 256

    def __init__(self) -> None:
        self._ai: dict[str, AiTokens] = {}
        self.total: dict[str, int] = {}

    def add(self, checkpoint_id: str, parent_id: str | None, ai: AiTokens) -> AiTokens:
        """Record a checkpoint; returns the AI messages it adds to its lineage."""
        base = self.total.get(parent_id, 0) if parent_id else 0
        before = self._ai.get(parent_id) if parent_id else {}
        if before is None:  # parent forgotten (or never seen): no diff possible
            new: AiTokens = {}
            total = max(base, sum(ai.values()))
        else:
            new = {k: ai[k] for k in ai.keys() - before.keys()} if before else dict(ai)
            total = base + sum(new.values())
        self.total[checkpoint_id] = total
        self._ai[checkpoint_id] = ai
        if len(self._ai) > self.KEEP:
            del self._ai[next(iter(self._ai))]
        return new


@dataclass
class _Root:
    """A root checkpoint waiting for its thread's subgraphs."""

    row: dict[str, Any] | None
    checkpoint_id: str
    parent_id: str | None
    new: AiTokens
    own_total: int
    leaf: bool
    rolled: frozenset[str] = field(default_factory=frozenset)


class ThreadRollup:
    """Holds a thread's root rows until its namespaces are read, then adds their tokens.

    The walk reads a thread's root namespace first (``""`` sorts first), then its subgraphs,
    so the root rows are held until the thread ends. Past ``HOLD_BYTES`` of held states the
    oldest rows are let go with their own count only.
    """

    HOLD_BYTES = 128 * 1024 * 1024

    def __init__(self) -> None:
        self._roots: list[_Root] = []
        self._by_id: dict[str, _Root] = {}
        self._held = 0
        self._under: dict[str, AiTokens] = {}
        self._seen: set[str] = set()
        self._own: set[str] = set()

    def hold(
        self, row: dict[str, Any], parent_id: str | None, new: AiTokens, leaf: bool
    ) -> list[dict[str, Any]]:
        """Keep a root row; returns rows let go early (when the held states grow too big).

        Args:
            row: the canonical row, whose ``tokens_spent`` is the root's own count.
            parent_id: the checkpoint's parent in the root namespace.
            new: the AI messages it adds to its lineage (``Spend.add``).
            leaf: whether it has no child (a head).
        """
        root = _Root(row, str(row["checkpoint_id"]), parent_id, new, row["tokens_spent"], leaf)
        self._roots.append(root)
        self._by_id[root.checkpoint_id] = root
        self._own.update(new)
        self._held += len(row.get("working_state") or b"")
        if self._held <= self.HOLD_BYTES:
            return []
        out = []
        for r in self._roots:
            if r.row is not None:
                out.append(r.row)
                r.row = None
        self._held = 0
        return out

    def hold_quarantined(self, row: dict[str, Any]) -> None:
        """Keep a root row that could not be decoded (released with the others)."""
        self._roots.append(_Root(row, str(row["checkpoint_id"]), None, {}, 0, False))

    def subgraph(self, meta: dict[str, Any], new: AiTokens) -> None:
        """Note the AI messages a subgraph checkpoint adds, under its root checkpoint."""
        parents = meta.get("parents")
        under = parents.get("") if isinstance(parents, dict) else None
        if not under or not new:
            return
        bucket = self._under.setdefault(str(under), {})
        for k, t in new.items():
            if k not in self._seen:
                self._seen.add(k)
                bucket[k] = t

    def release(self) -> list[dict[str, Any]]:
        """The held root rows, with the subgraphs' tokens added (the thread has ended)."""
        if self._under:
            self._roll()
        return [r.row for r in self._roots if r.row is not None]

    def _roll(self) -> None:
        # tokens the subgraphs add along each lineage, over the root's own count (an id the
        # root's own states hold is never added: it is counted there)
        added: dict[str, int] = {}
        for r in self._roots:
            parent = self._by_id.get(r.parent_id) if r.parent_id else None
            rolled = parent.rolled if parent else frozenset()
            extra = self._extra(r, rolled)
            base = added.get(r.parent_id, 0) if r.parent_id else 0
            added[r.checkpoint_id] = base + sum(extra.values())
            r.rolled = rolled | extra.keys() if extra else rolled
            if r.row is not None and "_reason" not in r.row:
                r.row["tokens_spent"] = r.own_total + added[r.checkpoint_id]

    def _extra(self, r: _Root, rolled: frozenset[str]) -> AiTokens:
        spots = [r.parent_id] if r.parent_id else []
        if r.leaf:
            spots.append(r.checkpoint_id)
        out: AiTokens = {}
        for spot in spots:
            for k, t in self._under.get(spot or "", {}).items():
                if k not in self._own and k not in rolled:
                    out[k] = t
        return out
