"""Mapping one decoded LangGraph checkpoint onto Stepscope's canonical checkpoint columns.

What goes where (docs/langgraph.md says the same for users):

- run: the thread (``<thread_id>``) for the root graph, ``<thread_id>/<checkpoint_ns>`` for a
  subgraph's checkpoints; step: ``metadata.step``; parent: ``parent_checkpoint_id``;
- working state: the channel values, without LangGraph's internal channels (``__start__``,
  ``branch:to:*``, ``join:*``, ``__pregel_tasks``, ...), which are kept in
  ``metadata.internal_channels``; ``metadata.next`` as ``prepare_next_tasks`` finds it
  (:mod:`loaders.langgraph.tasks`);
- status (read by the store's status rule; :mod:`loaders.langgraph.tasks`), for a checkpoint
  that has no child, from its writes grouped by task: an ``__error__`` gives ``failed`` with
  ``metadata.error``; a task with an ``__interrupt__`` and no output gives ``parked`` on that
  question; no next task gives ``completed``; nodes due next and no write at all give
  ``parked`` before them (a breakpoint, a recursion limit or a stopped process: LangGraph
  records none); otherwise no status (the store decides). Checkpoints with children keep what
  happened in ``task_errors`` / ``resolved_interrupts``;
- budgets: tokens as :mod:`loaders.langgraph.budgets` counts them; steps spent is
  ``max(step, 0)``; wall clock is the time since the run's first checkpoint;
- pending effects, for a checkpoint with no child: tool calls of AI messages that no tool
  message answers, in the state or in the pending writes (keyed by an idempotency argument);
  the writes finished tasks left are ``metadata.pending_writes``, not effects;
- model version: the last AI message's ``response_metadata.model_name``.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from debugger.errors import DecodeError
from loaders.langgraph.decode import SafeDecoder, to_json

if TYPE_CHECKING:  # the replay's sandbox child imports this module: no Arrow through source
    from loaders.langgraph.source import RawCheckpoint, RawWrite

CONTROL_WRITES = {"__error__", "__interrupt__", "__resume__", "__scheduled__", "__return__"}
"""Write channels that are signals, not state updates."""


def is_internal(channel: str) -> bool:
    """True for LangGraph's own channels (hidden from the working state, kept in metadata)."""
    return (channel.startswith("__") and channel.endswith("__")) or channel.startswith(
        ("branch:", "join:", "__pregel_", "start:")
    ) or channel == "__pregel_tasks"  # fmt: skip


def own_channels(data: dict[str, Any]) -> frozenset[str]:
    """Channels of the checkpoint named after a node, which are LangGraph's, not state.

    Before LangGraph 0.3 each node wrote its own name to a channel named after it (the edges
    from it subscribed to that channel). ``versions_seen`` names the nodes that ran, and
    LangGraph refuses a state key named like a node, so such a channel is never state.
    """
    seen = data.get("versions_seen") or {}
    values = data.get("channel_values") or {}
    return frozenset(k for k in values if k in seen and not is_internal(k))


def run_id_of(thread_id: str, checkpoint_ns: str) -> str:
    """The run id of a thread's namespace: the thread for the root graph."""
    return thread_id if not checkpoint_ns else f"{thread_id}/{checkpoint_ns}"


def _as_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError(f"{what} is not an object", "")
    return value


def decode_checkpoint(dec: SafeDecoder, ck: RawCheckpoint, saver: str) -> dict[str, Any]:
    """The checkpoint dict with its full ``channel_values`` (blobs joined for Postgres).

    Raises:
        DecodeError: a value cannot be decoded (the message names the channel).
    """
    if saver == "sqlite":
        data = _as_dict(dec.decode(ck.type or "msgpack", ck.checkpoint), "the checkpoint")
    else:
        data = _as_dict(dec.decode("json", ck.checkpoint), "the checkpoint")
        values = dict(data.get("channel_values") or {})
        for channel, type_, blob in ck.blobs:
            try:
                values[channel] = dec.decode(type_, blob)
            except DecodeError as e:
                raise DecodeError(f"{e.message} (channel {channel!r})", e.hint) from e
        data = {**data, "channel_values": values}
    return data


def _same(value: Any, kept: Any) -> bool:
    """True when ``value`` is the state's value: the same object, or a list of the same
    objects (the decoder shares a repeated value, so identity is the test)."""
    if value is kept:
        return True
    if not (isinstance(value, list) and isinstance(kept, list) and len(value) == len(kept)):
        return False
    return all(a is b for a, b in zip(value, kept, strict=True))


def same_as_state(channel: str | None) -> dict[str, str]:
    """What stands in ``metadata.internal_channels`` for a copy of a state channel (None:
    of the whole state, a functional-API checkpoint's ``__end__``)."""
    of = "working_state" if channel is None else f"working_state.{channel}"
    return {"__type__": "stepscope.same_as", "of": of}


START = "__start__"
"""The input channel, and a ``StateGraph``'s node that reads it."""

END = "__end__"
"""The output channel of LangGraph's functional API (an ``@entrypoint``): its value is what
``get_state().values`` shows. A ``StateGraph`` has no channel of that name."""

RETURN = "__return__"
"""The write of a functional-API task's result (an ``@task`` call's return value)."""

PREVIOUS = "__previous__"
"""The functional API's channel of what an entrypoint saved for its next call on the thread
(its ``previous`` argument): its return value, or ``entrypoint.final``'s ``save``."""

FUNCTIONAL_WRITES = frozenset({END, PREVIOUS, RETURN})
"""Channels only the functional API writes."""


def is_functional(
    data: dict[str, Any], ran: Collection[str] = (), written: Collection[str] = ()
) -> bool:
    """True for a checkpoint of LangGraph's functional API (an ``@entrypoint``).

    It has the ``__end__`` channel once the entrypoint has returned. Before, at its first
    input, its only channel is the input, and its writes say it: a task that is not a
    graph's ``__start__`` node read it (``ran``: the nodes whose pull tasks wrote), or a
    channel only the functional API writes is among ``written`` (a task's result, the
    output, what it saves; before LangGraph 1.0 the SQLite saver stored no task paths). An
    input checkpoint with none of these (the process stopped before its first write, or the
    entrypoint raised before any task) reads as a graph's.
    """
    versions = data.get("channel_versions") or {}
    if END in versions:
        return True
    if set(versions) != {START}:
        return False
    return bool(FUNCTIONAL_WRITES.intersection(written)) or (bool(ran) and START not in ran)


def state_of(
    data: dict[str, Any], own: frozenset[str] = frozenset(), functional: bool | None = None
) -> Any:
    """The checkpoint's state as LangGraph's ``get_state().values`` shows it.

    A ``StateGraph``'s: its channels without LangGraph's internal ones (and, before
    LangGraph 0.3, without the channels named after nodes, ``own``). An ``@entrypoint``'s
    (``functional``, else :func:`is_functional` of the checkpoint alone): the value it
    returned (any JSON value, not only an object; None before it first returned).
    """
    values = data.get("channel_values") or {}
    if is_functional(data) if functional is None else functional:
        return values.get(END)
    return {k: v for k, v in values.items() if not is_internal(k) and k not in own}


def without_state_copies(value: Any, state: dict[str, Any], depth: int = 0) -> Any:
    """``value`` with each copy of a state channel in it replaced by :func:`same_as_state`.

    A ``Send`` in ``__pregel_tasks`` carries the graph's whole state to the node it starts
    (the prebuilt ReAct agent sends each tool call with it): kept as is, every such
    checkpoint would store its messages twice.
    """
    if isinstance(value, dict) and depth <= 8:
        out = {}
        for k, v in value.items():
            if depth and isinstance(v, list | dict) and k in state and _same(v, state[k]):
                out[k] = same_as_state(k)
            else:
                out[k] = without_state_copies(v, state, depth + 1)
        return out
    if isinstance(value, list) and depth <= 8:
        return [without_state_copies(v, state, depth + 1) for v in value]
    return value


def with_state_copies(value: Any, state: Any) -> Any:
    """The inverse of :func:`without_state_copies`: each :func:`same_as_state` in ``value``
    replaced by that channel of ``state`` (or the whole state), for whoever needs the
    internal channels as LangGraph had them (a replay restores its ``Send`` tasks from
    them, and a functional-API checkpoint's ``__end__``)."""
    if isinstance(value, dict):
        if value.get("__type__") == "stepscope.same_as" and set(value) == {"__type__", "of"}:
            if value["of"] == "working_state":
                return state
            channel = str(value["of"]).removeprefix("working_state.")
            if isinstance(state, dict) and channel in state:
                return state[channel]
        return {k: with_state_copies(v, state) for k, v in value.items()}
    if isinstance(value, list):
        return [with_state_copies(v, state) for v in value]
    return value


def tool_versions_of(meta: dict[str, Any]) -> bytes | None:
    """``tool_versions`` from the checkpoint's metadata, as JSON text (None when absent).

    LangGraph copies only the str, int, float and bool values of the config's ``metadata``
    and ``configurable`` into a checkpoint's metadata, so an application records its tool
    versions as JSON text: ``"metadata": {"tool_versions": json.dumps({"search": "1.2"})}``.
    An object (a saver that keeps one) is read as well; anything else is left in metadata.
    """
    value = meta.get("tool_versions")
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    return to_json(value) if isinstance(value, dict) and value else None


def decode_metadata(dec: SafeDecoder, raw: Any) -> dict[str, Any]:
    """The checkpoint's metadata (JSON text in both savers)."""
    if raw is None:
        return {}
    return _as_dict(dec.decode("json", raw), "the metadata")


@dataclass(frozen=True, slots=True)
class Facts:
    """What one message contributes to budgets, pending effects and the tape."""

    kind: str
    """``ai``, ``tool`` or another message type."""
    key: str
    """The message id (or a hash of the message when it has none)."""
    tokens: int
    """``usage_metadata.total_tokens`` of an AI message (0 otherwise)."""
    model: str | None
    """``response_metadata.model_name`` of an AI message."""
    calls: tuple[dict[str, Any], ...]
    """Tool calls of an AI message (``{id, name, args}``)."""
    answers: str | None
    """The ``tool_call_id`` a tool message answers."""
    json: bytes
    """The message as JSON text (``to_json``), serialized once per run."""
    chars: int
    """``json``'s length in characters (a state's cut counts characters)."""
    fragment: orjson.Fragment = field(compare=False, repr=False)
    """``json`` as an orjson fragment: a state embeds it in its own JSON without re-encoding."""


def _is_message_tag(tag: Any, memo: dict[str, bool] = {}) -> bool:  # noqa: B006 - a cache
    hit = memo.get(tag)
    if hit is None:
        hit = memo[tag] = isinstance(tag, str) and "langchain_core.messages" in tag
    return hit


def is_message(v: Any) -> bool:
    """A LangChain message, as the decoder renders it."""
    return isinstance(v, dict) and _is_message_tag(v.get("__type__"))


def _tokens(m: dict[str, Any]) -> int:
    u = m.get("usage_metadata")
    if not isinstance(u, dict):
        return 0
    t = u.get("total_tokens")
    if isinstance(t, int):
        return t
    return int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0)


def facts_of(m: dict[str, Any]) -> Facts:
    """The facts of one decoded message."""
    kind = str(m.get("type"))
    kind = "ai" if kind == "AIMessageChunk" else kind
    text = to_json(m)
    mid = m.get("id")
    key = str(mid) if mid else hashlib.md5(text).hexdigest()[:16]
    tokens, model, answers = 0, None, None
    calls: tuple[dict[str, Any], ...] = ()
    if kind == "tool":
        answers = str(m.get("tool_call_id"))
    elif kind == "ai":
        meta = m.get("response_metadata")
        if isinstance(meta, dict) and (meta.get("model_name") or meta.get("model")):
            model = str(meta.get("model_name") or meta.get("model"))
        calls = tuple(
            tc for tc in m.get("tool_calls") or [] if isinstance(tc, dict) and tc.get("id")
        )
        tokens = _tokens(m)
    return Facts(
        kind, key, tokens, model, calls, answers, text, _chars(text), orjson.Fragment(text)
    )


def _chars(text: bytes) -> int:
    """The length in characters of UTF-8 text."""
    return len(text) if text.isascii() else len(text.decode())


Seen = tuple[dict[str, Any], Facts]
"""A message with its facts."""


@dataclass
class StateScan:
    """What a state's messages say, and the state's JSON text (one pass over the state)."""

    messages: list[Seen]
    """The messages in order (top-level values and items of top-level lists)."""
    new: list[Seen]
    """Those not seen earlier in the run (their calls go to the tape)."""
    json: bytes
    """The state as JSON text, equal to ``to_json(state)``."""
    cut: StateCut | None = None
    """The state cut into skeleton and parts as it was written (with a :class:`CutRule`)."""


@dataclass(frozen=True)
class CutRule:
    """How a large state is cut into skeleton and shared parts.

    The store's rule (``debugger.store.state_parts``), handed in by the flavour: this
    module is also read by the replay's sandbox child, which does not import the store.
    """

    is_part: Callable[[int, bool], bool | None]
    """``state_parts.element_is_part``: an array element's fate from its length in
    characters and whether it is a container."""
    part_hash: Callable[[bytes], int]
    """``state_parts.part_hash``."""
    depth: Callable[[bytes], int]
    """``json_depth.depth``: how deep a JSON text nests (the cut hands the state's over)."""
    min_bytes: int
    """``state_parts.SPLIT_MIN_BYTES``: shorter states are not cut."""


@dataclass(frozen=True)
class StateCut:
    """A state's text cut where its writer put the array elements that are parts.

    ``join(skeleton, cuts, refs, parts)`` (``debugger.store.state_parts``) is the state's
    text by construction: both are joined from the same pieces.
    """

    skeleton: bytes
    """The text without the parts (UTF-8)."""
    cuts: list[int]
    """Where each part goes: character offsets into the skeleton, ascending."""
    refs: list[int]
    """The parts' hashes, in order."""
    parts: list[bytes]
    """The parts' texts, in the order of ``refs``."""
    depth: int
    """How deep the state nests (``CutRule.depth`` of its text), from the skeleton's depth
    and the parts' (each part is an item of a top-level list: two levels down)."""


_Piece = tuple[bytes, int, int | None, bool, int, "Seen | None"]
"""A list item's JSON, characters, part hash, whether the rule opens it up, depth, memo."""


class _ListText:
    """A top-level list's items as JSON pieces, kept while the list only grows.

    ``text`` and ``skel`` hold the pieces between the brackets, commas included (a state's
    text is joined from pieces in one copy); ``chars`` counts the skeleton's characters
    there; ``cuts`` are offsets from just after the ``[``; ``deepest`` is the deepest
    part's depth. ``whole`` is False once an item is one the writer does not cut (an
    element the store's rule opens up).
    """

    __slots__ = ("chars", "cuts", "deepest", "found", "parts", "refs", "skel", "text", "value",
                 "whole")  # fmt: skip

    def __init__(self, value: list[Any]) -> None:
        self.value = value
        self.found: list[Seen] = []
        self.text: list[bytes] = []
        self.skel: list[bytes] = []
        self.cuts: list[int] = []
        self.refs: list[int] = []
        self.parts: list[bytes] = []
        self.chars = 0
        self.deepest = 0
        self.whole = True


class MessageMemo:
    """Facts of messages already seen in this run, by object identity.

    The decoder hands back the same object for a message repeated in every checkpoint, so
    each message is analysed and serialized once per run; a state's JSON is joined from the
    messages' text, so it is not serialized again. With a :class:`CutRule`, the state is cut
    into skeleton and parts from the same pieces (:class:`StateCut`), so the store need not
    parse it to find them. The memo keeps a reference to each message, so an ``id()``
    cannot be reused while it is remembered; it forgets everything past a size.
    """

    LIMIT = 20_000

    def __init__(self, rule: CutRule | None = None) -> None:
        self._seen: dict[int, Seen] = {}
        self._lists: dict[str, _ListText] = {}
        """Per channel, the last list scanned with its items' JSON and its messages."""
        self._pieces: dict[int, _Piece] = {}
        """How each message seen goes into a list's text, by ``id()`` (see :meth:`_piece`)."""
        self._keys: dict[str, tuple[bytes, int]] = {}
        self.rule = rule

    def scan(self, state: dict[str, Any]) -> StateScan:
        """The facts of the state's messages, their sums, and the state's JSON text.

        A list that starts with the whole list the channel held at the previous scan (a
        message list that grew: the decoder shares the objects) is only read from where
        that one ended.
        """
        if len(self._seen) > self.LIMIT:
            self._seen.clear()
            self._lists.clear()
            self._pieces.clear()
        out: list[Seen] = []
        new: list[Seen] = []
        texts: list[bytes] = [b"{"]
        skels: list[bytes] = [b"{"]
        cuts: list[int] = []
        refs: list[int] = []
        parts: list[bytes] = []
        deepest = 0  # the deepest part's depth
        at = 1  # the skeleton's characters so far: "{"
        plain = True  # every key is a string (to_json writes other keys its own way)
        whole = self.rule is not None
        for name, value in state.items():
            if type(name) is not str:
                plain = False
                name = str(name)
            key, key_chars = self._key(name)
            if len(texts) > 1:
                texts.append(b",")
                skels.append(b",")
                at += 1
            at += key_chars
            texts.append(key)
            skels.append(key)
            if isinstance(value, list):
                lt = self._list(name, value, new)
                out += lt.found
                texts.append(b"[")
                texts += lt.text
                texts.append(b"]")
                skels.append(b"[")
                skels += lt.skel
                skels.append(b"]")
                cuts += [at + 1 + c for c in lt.cuts]
                refs += lt.refs
                parts += lt.parts
                deepest = max(deepest, lt.deepest)
                at += lt.chars + 2
                whole = whole and lt.whole
                continue
            hit = self._message(value, new)
            if hit is None:
                text = to_json(value)
                chars = _chars(text)
            else:
                out.append(hit)
                text, chars = hit[1].json, hit[1].chars
            texts.append(text)
            skels.append(text)
            at += chars
            if whole and self._may_hold_parts(text, chars):
                whole = False  # the store cuts inside a value that is not a list itself
        if not plain:
            return StateScan(out, new, to_json(state))
        texts.append(b"}")
        json = b"".join(texts)
        cut = None
        if whole and refs and self.rule is not None and len(json) >= self.rule.min_bytes:
            skels.append(b"}")
            skeleton = b"".join(skels)
            depth = max(self.rule.depth(skeleton), 2 + deepest)
            cut = StateCut(skeleton, cuts, refs, parts, depth)
        return StateScan(out, new, json, cut)

    def _message(self, value: Any, new: list[Seen]) -> Seen | None:
        """``value``'s memo if it is a message (made and added to ``new`` when first seen),
        else None."""
        hit = self._seen.get(id(value))
        if hit is None and is_message(value):
            hit = self._seen[id(value)] = (value, facts_of(value))
            new.append(hit)
        return hit

    def _key(self, name: str) -> tuple[bytes, int]:
        hit = self._keys.get(name)
        if hit is None:
            text = to_json(name) + b":"
            hit = self._keys[name] = (text, _chars(text))
        return hit

    def _may_hold_parts(self, text: bytes, chars: int) -> bool:
        """Whether a value that is not a top-level list may hold an array element that the
        store's rule makes a part (only one at least that long, with a ``[``, can)."""
        assert self.rule is not None
        return self.rule.is_part(chars, True) is not False and b"[" in text

    def _list(self, name: str, value: list[Any], new: list[Seen]) -> _ListText:
        """The channel's list as JSON pieces, extended from the last scan's when it grew.

        A message's piece is worked out once per run (:meth:`_piece`): a list that lost
        items at its front (a window of the last messages) is read again every checkpoint,
        and each of its items then costs one lookup.
        """
        lt = self._lists.get(name)
        start = 0
        grew = lt is not None and len(value) >= len(lt.value)
        if lt is not None and grew and all(map(operator.is_, value, lt.value)):
            start = len(lt.value)
            lt.value = value
        else:
            lt = self._lists[name] = _ListText(value)
        pieces = self._pieces
        text, skel, found = lt.text, lt.skel, lt.found
        chars, deepest, whole = lt.chars, lt.deepest, lt.whole
        for m in itertools.islice(value, start, None):
            p = pieces.get(id(m))
            if p is None:
                p = self._piece(m, new)
            piece, n, part, opened, depth, hit = p
            if hit is not None:
                found.append(hit)
            if text:
                text.append(b",")
                skel.append(b",")
                chars += 1
            text.append(piece)
            if opened:
                whole = False
            if part is None:
                skel.append(piece)
                chars += n
            else:
                lt.cuts.append(chars)
                lt.refs.append(part)
                lt.parts.append(piece)
                if depth > deepest:
                    deepest = depth
        lt.chars, lt.deepest, lt.whole = chars, deepest, whole
        return lt

    def _piece(self, m: Any, new: list[Seen]) -> _Piece:
        """How the list item ``m`` goes into its list's text: its JSON, its length in
        characters, its part hash (None: it stays in the skeleton), whether the store's
        rule opens it up (so the state is not cut here), its depth as a part, and its memo
        if it is a message. Kept for messages (the memo holds them, so their ``id()`` is
        not reused); any other item is worked out each time."""
        hit = self._message(m, new)
        if hit is None:
            text = to_json(m)
            chars = _chars(text)
            container = isinstance(m, dict | list)
        else:
            text, chars, container = hit[1].json, hit[1].chars, True
        rule = self.rule
        if rule is None:
            piece: _Piece = (text, chars, None, True, 0, hit)
        else:
            fate = rule.is_part(chars, container)
            if fate:
                piece = (text, chars, rule.part_hash(text), False, rule.depth(text), hit)
            else:
                piece = (text, chars, None, fate is None, 0, hit)
        if hit is not None:
            self._pieces[id(m)] = piece
        return piece

    def to_json(self, value: Any) -> bytes:
        """``to_json(value)``, with the messages this run has seen embedded as their text.

        A checkpoint's metadata can repeat the state: a ``Send`` in ``__pregel_tasks`` (the
        prebuilt ReAct agent's tool calls) carries the whole message list. Those messages
        are the decoder's shared objects, already serialized by :meth:`scan`.
        """
        return to_json(self._shadow(value, 0))

    def _shadow(self, value: Any, depth: int) -> Any:
        if isinstance(value, dict):
            hit = self._seen.get(id(value))
            if hit is not None:
                return hit[1].fragment
            if depth > 32:  # deeper than any message list: leave it to to_json
                return value
            return {k: self._shadow(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self._shadow(v, depth + 1) for v in value]
        return value


IDEMPOTENCY_ARGS = "STEPSCOPE_IDEMPOTENCY_ARGS"
"""Setting: more tool-call argument names that carry an idempotency key (comma-separated)."""
DEFAULT_IDEMPOTENCY_ARG = "idempotency_key"


def idempotency_args(extra: str | None = None) -> tuple[str, ...]:
    """Argument names read as a tool call's idempotency key, ``idempotency_key`` first.

    Args:
        extra: comma-separated names (default: ``$STEPSCOPE_IDEMPOTENCY_ARGS``).
    """
    raw = os.environ.get(IDEMPOTENCY_ARGS, "") if extra is None else extra
    names = [n.strip() for n in raw.split(",") if n.strip()]
    return tuple(dict.fromkeys([DEFAULT_IDEMPOTENCY_ARG, *names]))


def key_in(args: Any, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that the arguments carry, as text (None when none is set)."""
    if not isinstance(args, dict):
        return None
    for n in names:
        v = args.get(n)
        if v is not None and v != "":
            return v if isinstance(v, str) else to_json(v).decode()
    return None


def tool_messages(decoded: list[tuple[RawWrite, Any]]) -> list[Seen]:
    """Tool messages in a checkpoint's writes (a finished tools task's pending answer)."""
    out: list[Seen] = []
    for w, v in decoded:
        if w.channel in CONTROL_WRITES or is_internal(w.channel):
            continue
        for m in v if isinstance(v, list) else [v]:
            if is_message(m) and m.get("type") == "tool":
                out.append((m, facts_of(m)))
    return out


def returned_messages(decoded: list[tuple[RawWrite, Any]]) -> list[Seen]:
    """Messages the functional API's tasks returned at the checkpoint (``__return__``
    writes): a model task's AI message, a tool task's tool message.

    LangGraph keeps a finished task's result and does not run it again on resume; where the
    entrypoint failed or waits before it returned, nothing else holds what its tasks did.
    """
    out: list[Seen] = []
    for w, v in decoded:
        if w.channel != RETURN:
            continue
        for m in v if isinstance(v, list) else [v]:
            if is_message(m):
                out.append((m, facts_of(m)))
    return out


def unanswered_tool_calls(
    facts: list[Seen], names: tuple[str, ...] = (DEFAULT_IDEMPOTENCY_ARG,)
) -> list[dict[str, Any]]:
    """Tool calls of AI messages that no tool message answers: pending calls (in flight).

    ``facts`` holds the state's messages and any tool message of the pending writes; a call's
    ``idempotency_key`` is the value of the first of ``names`` among its arguments.
    """
    answered = {f.answers for _, f in facts if f.answers}
    calls = {tc["id"]: tc for _, f in facts for tc in f.calls if tc["id"] not in answered}
    return [
        {"kind": "tool_call", "tool": tc.get("name"), "args": tc.get("args"),
         "tool_call_id": cid, "idempotency_key": key_in(tc.get("args"), names),
         "status": "pending"}
        for cid, tc in calls.items()
    ]  # fmt: skip


def ms_between(start: str | None, end: str | None) -> int:
    """Milliseconds from one ISO timestamp to another (0 when either is unknown)."""
    try:
        a, b = datetime.fromisoformat(str(start)), datetime.fromisoformat(str(end))
        return max(0, int((b - a).total_seconds() * 1000))
    except (ValueError, TypeError, OverflowError):  # not ISO, or one with a zone and one not
        return 0
