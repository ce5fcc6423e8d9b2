"""The LangGraph flavour: SqliteSaver and PostgresSaver databases, read directly.

Detected from the tables (``checkpoints`` + ``writes`` in SQLite; ``checkpoints``,
``checkpoint_blobs``, ``checkpoint_writes`` in Postgres). Values are decoded by
:class:`loaders.langgraph.decode.SafeDecoder` (no user class is imported or built) and
mapped by :mod:`loaders.langgraph.map`. The batches handed to the store already hold the
canonical columns, so the projection is a plain ``SELECT ... FROM _raw``; rows that could
not be decoded carry their reason in ``_reason`` and a description in ``_raw_text`` and
land in quarantine.

Tool and model calls found in the messages go to the ``tool_calls`` tape. A call is complete
only once its tool message is seen, so the tape of a run is written when the walk leaves the
run; checkpoint and tape plans alternate so that memory stays bounded on large sources.
Writes that cannot be decoded are quarantined (as ``effects`` rows, the nearest canonical
table) and named in the checkpoint's ``metadata.undecodable_writes``.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from debugger.contract import (
    GIVEN_STATE_HASH,
    GIVEN_STATE_PARTS,
    GIVEN_STATE_SPLIT,
    JSON_WRITTEN,
    TABLE_COLUMNS,
)
from debugger.errors import DecodeError, FlavourError
from debugger.store import arrays, json_depth, state_hash, state_parts
from loaders.base import Flavour, SqlReader, TablePlan, aligned_rows
from loaders.langgraph.budgets import Spend, ThreadRollup, ai_tokens
from loaders.langgraph.decode import SafeDecoder, to_json
from loaders.langgraph.map import (
    END,
    PREVIOUS,
    START,
    CutRule,
    MessageMemo,
    Seen,
    StateScan,
    decode_checkpoint,
    decode_metadata,
    idempotency_args,
    is_functional,
    is_internal,
    is_message,
    ms_between,
    own_channels,
    returned_messages,
    run_id_of,
    same_as_state,
    state_of,
    tool_messages,
    tool_versions_of,
    unanswered_tool_calls,
    without_state_copies,
)
from loaders.langgraph.source import LangGraphTables, RawCheckpoint, RawWrite, saver_kind
from loaders.langgraph.tape import Tape, enclosing
from loaders.langgraph.task_ids import with_task_paths
from loaders.langgraph.tasks import (
    SENDS,
    agent_of,
    call_errors,
    finished_tasks,
    handed_up,
    next_tasks,
    parent_task,
    pending_writes,
    produced_ids,
    pulled_nodes,
    sends_of,
    status_fields,
    task_writes,
)
from loaders.prefetch import prefetched, read_ahead

BATCH_ROWS = 1024
"""Checkpoints per batch at most (a power of two, so batches fill the store's row groups;
``--batch-rows`` can only lower it)."""
BATCH_STATE_BYTES = 24 * 1024 * 1024
FIRST_BATCH_STATE_BYTES = 2 * 1024 * 1024
"""State bytes of the first batch; each next batch may hold twice the last, up to half of
``BATCH_STATE_BYTES``. The store starts on the first batch while the walk goes on, so a
small one shortens the wait before the pipeline fills (see ``loaders.base.ramped``).
Past these bytes a batch still takes the rows released with the last one (a thread's
root rows come out together when the thread ends), up to ``BATCH_STATE_BYTES``: a run
that does not go on in the next batch spares the store its look-ups of stored rows."""
TAPE_FLUSH = 20_000
"""Tape rows buffered before the walk pauses to write them."""

_INT_COLUMNS = {"step_index", "schema_version", "tokens_spent", "steps_spent", "wall_clock_ms",
                "seq", "_state_depth"}  # fmt: skip
_JSON_COLUMNS = {"working_state", "pending_effects", "metadata", "request", "response"}
"""Columns the walk fills with ``to_json`` bytes: valid UTF-8, handed to Arrow as is."""

NOT_LANGGRAPH = "the row was not written by a LangGraph saver: check what else writes to the file"

CUT_RULE = CutRule(
    is_part=state_parts.element_is_part,
    part_hash=state_parts.part_hash,
    depth=json_depth.depth,
    min_bytes=state_parts.SPLIT_MIN_BYTES,
)
"""The store's rule for cutting a large state, applied as the walk writes each state: the
store takes the cut as it is (``debugger.contract.GIVEN_STATE_SPLIT``) instead of parsing
the state again to find its parts."""
_PARTS = "_parts"
"""A row's part texts, in the order of its ``_state_refs`` (not a column: :func:`to_batch`
hands each of the batch's parts over once, in ``GIVEN_STATE_PARTS``)."""


def stable_key(*parts: str) -> int:
    """A 63-bit key from a row's identity, the same on every import (for quarantine)."""
    digest = hashlib.blake2b("\x00".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _names(table: str) -> list[str]:
    # every JSON document of a batch is to_json's output (see contract.JSON_WRITTEN)
    extra = []
    if table == "checkpoints":
        extra = [GIVEN_STATE_HASH, *GIVEN_STATE_SPLIT, *GIVEN_STATE_PARTS]
    return ["_key", *TABLE_COLUMNS[table], "_reason", "_raw_text", JSON_WRITTEN, *extra]


def select_all(table: str) -> str:
    """The projection of a batch that already holds the canonical columns."""
    return f"SELECT _pos, {', '.join(_names(table))} FROM _raw"


def _utf8_array(values: list[bytes | None]) -> pa.Array:
    """A string array of ``to_json`` texts, built from one joined buffer.

    orjson writes UTF-8 only, so nothing is decoded or validated again; joining the texts
    is one copy, where an array builder appends value by value and regrows its buffer
    (states of ~100 KB make that most of the batch's cost). Past 32-bit offsets the
    builder makes a chunked array.
    """
    built = arrays.utf8(values)
    return built if built is not None else pa.array(values, type=pa.binary()).view(pa.string())


def _int_lists(values: list[list[int] | None], type_: pa.DataType) -> pa.Array:
    """Lists of ints (None as an empty list), flattened in C: a state's cut has an offset
    and a hash per message, ~100 values a row."""
    lists = [v or [] for v in values]
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    dtype = np.int64 if type_ == pa.int64() else np.int32
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype, int(offsets[-1]))
    items = pa.Array.from_buffers(type_, len(flat), [None, pa.py_buffer(flat)])
    starts = pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets)])
    return pa.ListArray.from_arrays(starts, items)


def _text_lists(values: list[list[bytes] | None]) -> pa.Array:
    """Lists of ``to_json`` texts (None as an empty list), from one joined buffer."""
    lists = [v or [] for v in values]
    offsets = np.zeros(len(lists) + 1, dtype=np.int32)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    flat = _utf8_array([t for x in lists for t in x])
    starts = pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets)])
    return pa.ListArray.from_arrays(starts, flat)


def _batch_parts(rows: list[dict[str, Any]]) -> None:
    """Give each part the batch's states refer to to one row (the first that refers to it),
    in ``GIVEN_STATE_PARTS``: the store reads a batch's parts from any of its rows."""
    have: set[int] = set()
    for r in rows:
        refs = r.get("_state_refs")
        if not refs or have.issuperset(refs):
            continue
        hashes: list[int] = []
        texts: list[bytes] = []
        for h, text in zip(refs, r[_PARTS], strict=True):  # in the state's order
            if h not in have:
                have.add(h)
                hashes.append(h)
                texts.append(text)
        r["_state_part_hashes"] = hashes
        r["_state_parts"] = texts


def to_batch(table: str, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """Rows (dicts) as an Arrow batch with the canonical columns of ``table``."""
    names = _names(table)
    if table == "checkpoints":
        _batch_parts(rows)
    columns: list[pa.Array] = []
    for n in names:
        values = [r.get(n) for r in rows]
        if n == "_state_cuts":
            columns.append(_int_lists(values, pa.int32()))
        elif n in ("_state_refs", "_state_part_hashes"):
            columns.append(_int_lists(values, pa.int64()))
        elif n == "_state_parts":
            columns.append(_text_lists(values))
        elif n == "_key":
            columns.append(arrays.or_pa_array(arrays.int64s(values), values, pa.int64()))
        elif n in _INT_COLUMNS:
            columns.append(_or_text(values, pa.int64()))
        elif n == "is_write":
            columns.append(arrays.or_pa_array(arrays.bools(values), values, pa.bool_()))
        elif n in _JSON_COLUMNS or n == "_state_skeleton":
            columns.append(_utf8_array(values))
        else:
            columns.append(_or_text(values, pa.string()))
    return pa.RecordBatch.from_arrays(columns, names=names)


def _or_text(values: list[Any], type_: pa.DataType) -> pa.Array:
    """``values`` as ``type_``, or as text when one does not fit (a step past 64 bits, a
    number where a timestamp goes): the store's validation then quarantines that row with
    its reason, where Arrow would fail the whole import.

    Ints and text are assembled from buffers (:mod:`debugger.store.arrays`): ``pa.array``
    would import pandas, ~0.35 s of the GIL on every LangGraph import."""
    fast = None
    if type_ == pa.int64():
        fast = arrays.int64s(values)
    elif all(type(v) is str for v in values if v is not None):
        fast = arrays.utf8(values)
    if fast is not None:
        return fast
    try:
        return pa.array(values, type=type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _text(value: Any) -> str:
    return to_json(value).decode()


def _raw_text(ck: RawCheckpoint, reason: str) -> str:
    blob = ck.checkpoint if isinstance(ck.checkpoint, bytes) else None
    desc: dict[str, Any] = {"thread_id": ck.thread_id, "checkpoint_ns": ck.checkpoint_ns,
            "checkpoint_id": ck.checkpoint_id, "type": ck.type, "reason": reason}  # fmt: skip
    if blob is not None:
        desc["bytes"] = len(blob)
        desc["head_base64"] = base64.b64encode(blob[:256]).decode()
    return _text(desc)


class _Walk:
    """One pass over the checkpoints, producing canonical rows, tape rows and rejects."""

    def __init__(self, tables: LangGraphTables, batch_rows: int = BATCH_ROWS) -> None:
        self.batch_rows = aligned_rows(min(batch_rows, BATCH_ROWS))
        self.saver = tables.saver
        self.source: Iterator[RawCheckpoint] = tables.checkpoints()
        if tables.saver == "postgres":
            # the server joins each checkpoint's blobs while the walk decodes earlier ones;
            # SQLite's reads are in this process, where a thread only adds GIL hand-offs
            self.source = read_ahead(self.source)
        self.dec = SafeDecoder()
        self.done = False
        self.run: str | None = None
        self.first_ts: str | None = None
        self.tape = Tape("")
        self._tapes: list[Tape] = []
        """Tapes of the thread's namespaces the walk is still in (their nested ones come)."""
        self._below: dict[str, set[str]] = {}
        """Per namespace, the call ids of the namespaces nested in it."""
        self.memo = MessageMemo(CUT_RULE)
        self.spend = Spend()
        self.thread: str | None = None
        self._ns = ""
        self.rollup = ThreadRollup()
        self._inputs: set[str] = set()
        """The thread's subgraph input checkpoints (a namespace's first)."""
        self._done: dict[str, set[str]] = {}
        """Per namespace of the thread, the ids of the tasks that wrote output (the walk
        reads a namespace before those nested in it)."""
        self._carry: list[dict[str, Any]] = []
        self.idempotency_args = idempotency_args()
        self.tape_rows: list[dict[str, Any]] = []
        self._tape_ready: list[pa.RecordBatch] = []
        self.bad_writes: list[dict[str, Any]] = []
        self._state_bytes = FIRST_BATCH_STATE_BYTES
        self._sends: dict[str, list[Any]] = {}
        """Per checkpoint id of the namespace, the Sends its tasks wrote, where its children
        have them nowhere else (Postgres, format v < 4: :meth:`_with_parent_sends`)."""

    def checkpoint_batches(self) -> Iterator[pa.RecordBatch]:
        rows: list[dict[str, Any]] = []
        size = 0
        for ck in self._pending_then_source():
            ready = self._rows(ck) if ck is not None else self._carry
            while ready:
                row = ready.pop(0)
                rows.append(row)
                size += len(row.get("working_state") or "")
                full = len(rows) >= self.batch_rows or size >= BATCH_STATE_BYTES
                if full or (size >= self._state_bytes and not ready):
                    yield to_batch("checkpoints", rows)
                    rows, size = [], 0
                    self._state_bytes = min(2 * self._state_bytes, BATCH_STATE_BYTES // 2)
                    if len(self.tape_rows) >= TAPE_FLUSH:
                        self._carry = ready
                        return
        self._end_run()
        self._end_tapes(None)
        rows += self.rollup.release()
        self.done = True
        while rows:
            yield to_batch("checkpoints", rows[: self.batch_rows])
            rows = rows[self.batch_rows :]
        # still on the read-ahead thread, while the store inserts the last batch: the tape
        # is built now instead of after it, off the import's tail
        self._tape_ready = self._tape_batches()

    def _pending_then_source(self) -> Iterator[RawCheckpoint | None]:
        # None first: the rows a tape flush left over are handed out again
        if self._carry:
            yield None
        yield from self.source

    def _tape_batches(self) -> list[pa.RecordBatch]:
        rows, self.tape_rows = self.tape_rows, []
        step = self.batch_rows * 5
        return [to_batch("tool_calls", rows[i : i + step]) for i in range(0, len(rows), step)]

    def has_tape(self) -> bool:
        """Whether tape rows wait to be written."""
        return bool(self.tape_rows or self._tape_ready)

    def tape_batches(self) -> Iterator[pa.RecordBatch]:
        """The tape rows gathered so far, as batches (built ahead when the walk ended)."""
        ready, self._tape_ready = self._tape_ready, []
        yield from ready or self._tape_batches()

    def bad_write_batches(self) -> Iterator[pa.RecordBatch]:
        yield to_batch("effects", self.bad_writes)

    def _end_run(self) -> None:
        """A run's tape waits until the walk leaves the namespaces nested in it
        (:meth:`_end_tapes`); its call ids are noted for the namespaces it is nested in."""
        if self.tape.calls:
            for outer in enclosing(self.tape.ns):
                self._below.setdefault(outer, set()).update(self.tape.calls)
            self._tapes.append(self.tape)
        self.tape = Tape("")

    def _end_tapes(self, ns: str | None) -> None:
        """The walk moved to namespace ``ns`` (None: the thread ended): the tapes of the
        namespaces it is not nested in join the rows to write, each call on the namespace
        that made it (not on those whose state it flowed into)."""
        keep = []
        for tape in self._tapes:
            if ns is not None and (tape.ns == ns or tape.ns in enclosing(ns)):
                keep.append(tape)
            else:
                self.tape_rows += tape.rows(self._below.pop(tape.ns, set()))
        self._tapes = keep
        if ns is None:
            self._below = {}

    def _enter(self, run: str, ns: str) -> None:
        if run == self.run:
            return
        self._end_run()
        self.run, self.first_ts = run, None
        self.tape = Tape(run, self.idempotency_args, ns)
        self.memo = MessageMemo(CUT_RULE)
        self.spend = Spend()
        self.dec.clear()
        self._sends.clear()

    def _rows(self, ck: RawCheckpoint) -> list[dict[str, Any]]:
        """The rows ready to go: a namespace's rows wait for the tokens of the namespaces
        nested in it (the root's for the whole thread)."""
        out = []
        if ck.thread_id != self.thread:
            self._end_run()
            self._end_tapes(None)
            out = self.rollup.release()
            self.thread, self.rollup = ck.thread_id, ThreadRollup()
            self._done.clear()
            self._inputs.clear()
        elif ck.checkpoint_ns != self._ns:
            self._end_run()
            self._end_tapes(ck.checkpoint_ns)
            out = self.rollup.leave(ck.checkpoint_ns)
        self._ns = ck.checkpoint_ns
        row = self._row(ck)
        new = row.pop("_new_ai", {})
        if "_reason" in row:
            self.rollup.hold_quarantined(row, ck.checkpoint_ns)
            return out
        return out + self.rollup.hold(row, ck.parent_id, new, not ck.has_child, ck.checkpoint_ns)

    def _row(self, ck: RawCheckpoint) -> dict[str, Any]:
        run = run_id_of(ck.thread_id, ck.checkpoint_ns)
        self._enter(run, ck.checkpoint_ns)
        base = {"_key": stable_key(ck.thread_id, ck.checkpoint_ns, ck.checkpoint_id),
                "run_id": run, "checkpoint_id": ck.checkpoint_id,
                "parent_id": ck.parent_id}  # fmt: skip
        try:
            if ck.unreadable:
                raise DecodeError(ck.unreadable, NOT_LANGGRAPH)
            data = decode_checkpoint(self.dec, ck, self.saver)
            meta = decode_metadata(self.dec, ck.metadata)
        except DecodeError as e:
            return {**base, "_reason": e.message, "_raw_text": _raw_text(ck, e.message)}
        return {**base, **self._mapped(ck, run, data, meta)}

    def _writes(self, ck: RawCheckpoint, run: str, step: Any) -> tuple[list[Any], list[Any]]:
        decoded: list[tuple[RawWrite, Any]] = []
        bad: list[dict[str, Any]] = []
        for w in ck.writes:
            try:
                if w.unreadable:
                    raise DecodeError(w.unreadable, NOT_LANGGRAPH)
                decoded.append((w, self.dec.decode(w.type, w.value)))
            except DecodeError as e:
                info = {"task_id": w.task_id, "idx": w.idx, "channel": w.channel,
                        "type": w.type, "reason": e.message}  # fmt: skip
                bad.append(info)
                key = stable_key(ck.thread_id, ck.checkpoint_ns, ck.checkpoint_id, w.task_id,
                                 str(w.idx))  # fmt: skip
                raw = {**info, "thread_id": ck.thread_id, "checkpoint_ns": ck.checkpoint_ns,
                       "checkpoint_id": ck.checkpoint_id, "table": "writes"}  # fmt: skip
                self.bad_writes.append(
                    {"_key": key, "run_id": run, "step_index": step, "tool": w.channel,
                     "_reason": f"undecodable write: {e.message}", "_raw_text": _text(raw)}
                )  # fmt: skip
        return decoded, bad

    def _fail_calls(
        self, pending: list[dict[str, Any]], tasks: list[Any], data: dict[str, Any], step: int
    ) -> None:
        """Link the head's unanswered calls to the error of the task that ran them."""
        if not pending or not any(t.errors for t in tasks):
            return
        by_call, other = call_errors(tasks, data)
        for p in pending:
            error = by_call.get(str(p["tool_call_id"])) or other
            if error:
                self.tape.fail(str(p["tool_call_id"]), error, step)

    def _functional_scan(self, values: dict[str, Any], state: Any) -> StateScan:
        """An entrypoint's state (its output, any value) and its messages.

        The messages are read from what it saved for its next call (``previous``: a chat's
        history), its input and its output, in that order, as if each were a channel: a
        model answer it returned alone is found, and the messages before it are what the
        model was given.
        """
        around: dict[str, Any] = {}
        if PREVIOUS in values and values[PREVIOUS] != state:
            around[PREVIOUS] = values[PREVIOUS]
        if START in values:  # its input, at the checkpoint before it ran
            around[START] = values[START]
        around[END] = state
        seen = self.memo.scan(around)
        if isinstance(state, dict) and not is_message(state):
            whole = self.memo.scan(state)  # its text, and its cut into parts
            return StateScan(seen.messages, seen.new, whole.json, whole.cut)
        return StateScan(seen.messages, seen.new, to_json(state))

    @staticmethod
    def _returned(decoded: list[tuple[RawWrite, Any]], messages: list[Seen]) -> list[Seen]:
        """The messages the checkpoint's functional-API tasks returned that its state does
        not hold (:func:`returned_messages`)."""
        found = returned_messages(decoded) if decoded else []
        if not found:
            return []
        held = {f.key for _, f in messages}
        return [s for s in found if s[1].key not in held]

    def _with_parent_sends(
        self, ck: RawCheckpoint, data: dict[str, Any], decoded: list[tuple[RawWrite, Any]]
    ) -> dict[str, Any]:
        """The checkpoint with its ``pending_sends`` where PostgresSaver left them out.

        Before format v 4 a checkpoint's Sends were ``pending_sends``, which PostgresSaver
        stored as its parent's ``__pregel_tasks`` writes (read back in task path, task id
        and index order); SqliteSaver kept them in the checkpoint. A parent comes before
        its children (ids are in time order), so its Sends wait here for them.
        """
        v = data.get("v")
        if self.saver != "postgres" or not isinstance(v, int) or v >= 4:
            return data
        sends = sorted(
            (((w.task_path, w.task_id, w.idx), value) for w, value in decoded
             if w.channel == SENDS and value is not None),
            key=lambda s: s[0],
        )  # fmt: skip
        if sends:
            self._sends[ck.checkpoint_id] = [value for _, value in sends]
        given = self._sends.get(ck.parent_id or "")
        if given and not data.get("pending_sends"):
            return {**data, "pending_sends": given}
        return data

    def _mapped(
        self, ck: RawCheckpoint, run: str, data: dict[str, Any], meta: dict[str, Any]
    ) -> dict[str, Any]:
        values = data.get("channel_values") or {}
        own = own_channels(data)
        step = meta.get("step") if isinstance(meta.get("step"), int) else None
        ts = data.get("ts")
        if self.first_ts is None:
            self.first_ts = ts
        decoded, bad = self._writes(ck, run, step)
        data = self._with_parent_sends(ck, data, decoded)
        decoded = with_task_paths(decoded, data, meta, ck.checkpoint_ns)
        ran = pulled_nodes(decoded)
        written = {w.channel for w, _ in decoded}
        functional = is_functional(data, ran, written)
        state = state_of(data, own, functional)
        channels = {k: v for k, v in values.items() if is_internal(k) or k in own}
        sends = data.get("pending_sends")
        if SENDS not in channels and isinstance(sends, list) and sends:
            # format v < 4 kept a checkpoint's Sends beside its channels: in the channel
            # they moved to, as LangGraph's own migration puts them (a replay restores them)
            channels[SENDS] = sends
        if functional:
            # the entrypoint's output is the state, and what it saves for its next call
            # (``previous``) is that output unless it returned entrypoint.final: kept once
            for name in (END, PREVIOUS):
                if name in channels and channels[name] == state:
                    channels[name] = same_as_state(None)
        # a StateGraph's state is its channels, which a Send may carry again; an entrypoint's
        # is its output (a message, say), whose fields are no channels: a message it saved
        # stays whole, as the other checkpoints hold it
        internal = (
            channels
            if functional or not isinstance(state, dict)
            else without_state_copies(channels, state)
        )
        tasks = task_writes(decoded)
        # the head leaves out the tasks that finished, as get_state() does; history does not
        nexts = next_tasks(data, frozenset() if ck.has_child else finished_tasks(tasks), ran)
        scan = self._functional_scan(values, state) if functional else self.memo.scan(state)
        # at a head, what the functional API's finished tasks returned (model answers, tool
        # results) is the run's too: the entrypoint failed or waits before putting it in
        # its output, and LangGraph will not run those tasks again
        returned = self._returned(decoded, scan.messages) if not ck.has_child else []
        messages = scan.messages + returned if returned else scan.messages
        ai, model = ai_tokens(messages)
        # a subgraph's input (its first checkpoint, and the one its __start__ step wrote the
        # input into) holds the AI messages of the graph that called it: not its own spend
        carried = bool(ck.checkpoint_ns) and (not ck.parent_id or ck.parent_id in self._inputs)
        if ck.checkpoint_ns and not ck.parent_id:
            self._inputs.add(ck.checkpoint_id)
        new_ai = self.spend.add(ck.checkpoint_id, ck.parent_id, ai, carried)
        self.tape.observe(messages, scan.new + returned, step if step is not None else 0)
        if decoded:
            self.tape.note_writes(decoded, data, scan.messages)
        self._done.setdefault(ck.checkpoint_ns, set()).update(produced_ids(decoded))
        status = status_fields(tasks, ck.has_child, nexts, step, sends_of(data))
        if "paused_before" in status and ck.checkpoint_ns:
            parent_ns, task_id = parent_task(ck.checkpoint_ns)
            if task_id in self._done.get(parent_ns, ()):
                status = handed_up(nexts, step)
        pending: list[dict[str, Any]] = []
        # the calls of nodes that handed their result up ran: their answers are the parent's
        if not ck.has_child and "handed_up" not in status:
            answers = tool_messages(decoded)
            self.tape.answer(answers, step if step is not None else 0)
            pending = unanswered_tool_calls(messages + answers, self.idempotency_args)
            self._fail_calls(pending, tasks, data, step if step is not None else 0)
        md = {**meta, **status, "next": nexts,
              "internal_channels": internal,
              "langgraph": {"saver": self.saver, "thread_id": ck.thread_id,
                            "checkpoint_ns": ck.checkpoint_ns, "v": data.get("v"),
                            **({"functional": True} if functional else {})}}  # fmt: skip
        if "agent" not in md and (agent := agent_of(data, ck.checkpoint_ns, functional, ran)):
            md["agent"] = agent
        if bad:
            md["undecodable_writes"] = bad
        if not ck.has_child and (writes := pending_writes(decoded)):
            md["pending_writes"] = writes
        if ck.checkpoint_ns:
            self.rollup.subgraph(meta, new_ai)
        version = meta.get("schema_version")
        cut = scan.cut
        if cut is not None:
            split = {"_state_skeleton": cut.skeleton, "_state_cuts": cut.cuts,
                     "_state_refs": cut.refs, "_state_depth": cut.depth,
                     _PARTS: cut.parts}  # fmt: skip
        else:
            split = {}
        return {
            **split,
            "step_index": step,
            "schema_version": version if isinstance(version, int) else None,
            "created_at": ts,
            "working_state": scan.json,
            GIVEN_STATE_HASH: state_hash.of_text(scan.json),
            "tokens_spent": self.spend.total[ck.checkpoint_id],
            "steps_spent": max(step, 0) if step is not None else None,
            "wall_clock_ms": ms_between(self.first_ts, ts),
            "pending_effects": to_json(pending),
            "model_version": model,
            "tool_versions": tool_versions_of(meta),
            "metadata": self.memo.to_json(md),
            "_new_ai": new_ai,
        }


class LangGraphFlavour(Flavour[SqlReader]):
    """Checkpoints written by LangGraph's SqliteSaver or PostgresSaver."""

    name = "langgraph"
    filters = True
    decodes = True

    @classmethod
    def detect(cls, reader: SqlReader) -> bool:
        return saver_kind(reader) is not None

    def avoids_pa_array(self, reader: SqlReader) -> bool:
        """True: the walk's batches are assembled from buffers (:func:`to_batch`); only a
        value no builder takes (an int past 64 bits) falls back to ``pa.array``."""
        return True

    def plans(self, reader: SqlReader) -> Iterator[TablePlan]:
        if saver_kind(reader) is None:
            raise FlavourError(
                "not a LangGraph checkpointer database (needs checkpoints + writes in SQLite, "
                "or checkpoints + checkpoint_blobs + checkpoint_writes in Postgres)",
                "use --flavor auto",
            )
        tables = LangGraphTables(reader, self.rows)
        walk = _Walk(tables, self.batch_rows)
        total = tables.count()
        while not walk.done:
            # decoding the next batch overlaps with the store inserting this one
            batches = prefetched(walk.checkpoint_batches())
            yield TablePlan("checkpoints", batches, select_all("checkpoints"), total=total)
            if walk.has_tape():
                yield TablePlan("tool_calls", walk.tape_batches(), select_all("tool_calls"))
        if walk.bad_writes:
            yield TablePlan("effects", walk.bad_write_batches(), select_all("effects"))
