"""Tokens consumed by a LangGraph run: per lineage, never decreasing, subgraphs rolled up.

The rule (docs/langgraph.md, "Budgets"):

- a checkpoint's consumed tokens are its parent's plus the ``usage_metadata`` tokens of the
  AI messages in its state that its parent's state did not hold (by message id). Removing a
  message (``RemoveMessage``, trimming) therefore never lowers the count, an edited message
  that keeps its id is not counted again, and a fork counts only its own branch;
- a subgraph's checkpoints (namespace ``<node>:<task>``) are their own run; each namespace
  above it (the root, and a subgraph between for a nested one) also counts them: an AI
  message first seen in a namespace under checkpoint ``P`` of a namespace above
  (``metadata.parents[<that namespace>]``) is added at ``P``'s children (the checkpoint the
  subgraph's step produced), or at ``P`` itself when ``P`` is the head, unless that
  namespace's own states hold the same message id (counted once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loaders.langgraph.decode import to_json
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

    def add(
        self, checkpoint_id: str, parent_id: str | None, ai: AiTokens, carried: bool = False
    ) -> AiTokens:
        """Record a checkpoint; returns the AI messages it adds to its lineage.

        ``carried``: the AI messages the checkpoint adds were spent elsewhere (a subgraph's
        input holds the messages of the graph that called it): its count is its parent's,
        and its children count only what comes after.
        """
        base = self.total.get(parent_id, 0) if parent_id else 0
        before = self._ai.get(parent_id) if parent_id else {}
        new: AiTokens
        if carried:
            new, total = {}, base
        elif before is None:  # parent forgotten (or never seen): no diff possible
            new = {}
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
    """A checkpoint waiting for its thread's nested namespaces."""

    row: dict[str, Any] | None
    checkpoint_id: str
    parent_id: str | None
    new: AiTokens
    own_total: int
    leaf: bool
    rolled: frozenset[str] = field(default_factory=frozenset)


PARTIAL_KEY = "tokens_spent_partial"
"""The metadata key of a row stored before the namespaces nested in it were read."""


def partial(row: dict[str, Any], limit: int) -> dict[str, Any]:
    """``row`` with ``metadata.tokens_spent_partial`` saying that its ``tokens_spent`` is
    its namespace's own count: the tokens of the subgraphs that ran under it, read later,
    may be missing. The metadata is JSON text already: the key is put in front of it."""
    md = row.get("metadata")
    if isinstance(md, bytes) and md.startswith(b"{") and "_reason" not in row:
        note = to_json(
            f"stored before the namespaces nested in this run were read (more than {limit} "
            "bytes of states held for the roll-up): tokens_spent is this run's own count "
            "and may lack its subgraphs' tokens"
        )
        sep = b"," if md.strip() != b"{}" else b""
        row["metadata"] = b'{"' + PARTIAL_KEY.encode() + b'":' + note + sep + md[1:]
    return row


class _Level:
    """The held rows of one namespace of a thread, and the AI messages nested below it."""

    def __init__(self) -> None:
        self.roots: list[_Root] = []
        self.by_id: dict[str, _Root] = {}
        self.under: dict[str, AiTokens] = {}
        """Per checkpoint of this namespace, the AI messages first seen below it."""
        self.seen: set[str] = set()
        self.own: set[str] = set()
        self.held = 0
        """Bytes of the held states."""

    def roll(self) -> None:
        # tokens the namespaces below add along each lineage, over the level's own count (an
        # id the level's own states hold is never added: it is counted there)
        added: dict[str, int] = {}
        for r in self.roots:
            parent = self.by_id.get(r.parent_id) if r.parent_id else None
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
            for k, t in self.under.get(spot or "", {}).items():
                if k not in self.own and k not in rolled:
                    out[k] = t
        return out


class ThreadRollup:
    """Holds a thread's rows until its nested namespaces are read, then adds their tokens.

    Every namespace of a thread is rolled up into each namespace above it (the root and any
    subgraph between): a checkpoint's ``metadata.parents`` names, per namespace above, the
    checkpoint it ran under. The walk reads a thread's namespaces in order (``""`` first, a
    namespace before those nested in it, ``a:1|b:2`` after ``a:1``), so a namespace's rows
    are held until the walk leaves the namespaces nested in it (:meth:`leave`), the root's
    until the thread ends. Past ``HOLD_BYTES`` of held states the rows held so far are let
    go with their own count only, each saying so (:func:`partial`); the rows held after
    them are rolled up in full (the lineage's nested tokens are still counted).
    """

    HOLD_BYTES = 128 * 1024 * 1024

    def __init__(self) -> None:
        self._levels: dict[str, _Level] = {}
        self._held = 0

    def _level(self, ns: str) -> _Level:
        level = self._levels.get(ns)
        if level is None:
            level = self._levels[ns] = _Level()
        return level

    def hold(
        self,
        row: dict[str, Any],
        parent_id: str | None,
        new: AiTokens,
        leaf: bool,
        ns: str = "",
    ) -> list[dict[str, Any]]:
        """Keep a row; returns rows let go early (when the held states grow too big).

        Args:
            row: the canonical row, whose ``tokens_spent`` is the namespace's own count.
            parent_id: the checkpoint's parent in its namespace.
            new: the AI messages it adds to its lineage (``Spend.add``).
            leaf: whether it has no child (a head).
            ns: the checkpoint's namespace (``""``: the root graph).
        """
        level = self._level(ns)
        root = _Root(row, str(row["checkpoint_id"]), parent_id, new, row["tokens_spent"], leaf)
        level.roots.append(root)
        level.by_id[root.checkpoint_id] = root
        level.own.update(new)
        size = len(row.get("working_state") or b"")
        level.held += size
        self._held += size
        if self._held <= self.HOLD_BYTES:
            return []
        out = []
        for lv in self._levels.values():
            for r in lv.roots:
                if r.row is not None:
                    out.append(partial(r.row, self.HOLD_BYTES))
                    r.row = None
            lv.held = 0
        self._held = 0
        return out

    def hold_quarantined(self, row: dict[str, Any], ns: str = "") -> None:
        """Keep a row that could not be decoded (released with the others)."""
        self._level(ns).roots.append(_Root(row, str(row["checkpoint_id"]), None, {}, 0, False))

    def subgraph(self, meta: dict[str, Any], new: AiTokens) -> None:
        """Note the AI messages a nested checkpoint adds, under the checkpoint it ran under
        in each namespace above it (``metadata.parents``)."""
        parents = meta.get("parents")
        if not new or not isinstance(parents, dict):
            return
        for ns, under in parents.items():
            if not under or not isinstance(ns, str):
                continue
            level = self._level(ns)
            bucket = level.under.setdefault(str(under), {})
            for k, t in new.items():
                if k not in level.seen:
                    level.seen.add(k)
                    bucket[k] = t

    def leave(self, ns: str) -> list[dict[str, Any]]:
        """The walk moved to namespace ``ns``: the rows of the namespaces it is not nested in
        (nothing can roll up into them any more), with their nested tokens added."""
        out = []
        for name in [n for n in self._levels if n and n != ns and not ns.startswith(n + "|")]:
            level = self._levels.pop(name)
            if level.under:
                level.roll()
            out += [r.row for r in level.roots if r.row is not None]
            self._held -= level.held
        return out

    def release(self) -> list[dict[str, Any]]:
        """The held rows, with the nested namespaces' tokens added (the thread has ended)."""
        out = []
        for level in self._levels.values():
            if level.under:
                level.roll()
            out += [r.row for r in level.roots if r.row is not None]
        return out
