"""A message-heavy LangGraph database of any size, written through the real saver.

Running a graph (``tests/langgraph/react_heavy.py``) writes ~150 checkpoints a second here;
a store benchmark wants far more. So this writes the checkpoints a ReAct agent's thread
leaves, directly through ``SqliteSaver.put`` (LangGraph's own serde and tables): each thread
starts from a human message and every round adds two checkpoints, one after the AI message
with its tool call, one after the tool's answer of ``PAD`` characters, so a thread's message
list grows to ``2 * ROUNDS`` messages (~100 KB of state), as in ``react_heavy``.

Encoding the whole message list again for every checkpoint is what makes the stock saver slow
(~130 checkpoints/s): ``MemoSerde`` is LangGraph's ``JsonPlusSerializer`` that encodes each
message once per thread and writes the list as a msgpack array header followed by the
memoised elements (msgpack is a concatenation of its items, so the bytes are the same). Every
``CHECK_EVERY``-th checkpoint is also encoded by the stock serializer and must be identical.

``python benchmarks/lg_heavy_gen.py OUT.sqlite --checkpoints N [--first-thread T]``.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROUNDS = 99
PAD = 650
CHECK_EVERY = 50
# a msgpack fixstr that no real checkpoint holds: the spot where the message list goes
_MARK = "\x00stepscope-message-list\x00"
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def _ai(thread: int, i: int) -> Any:
    from langchain_core.messages import AIMessage

    tokens = 200 + 10 * i
    return AIMessage(
        content=f"step {i}",
        id=f"t{thread}-ai-{i}",
        tool_calls=[{"name": "search", "args": {"q": f"t{thread} q{i}"}, "id": f"t{thread}-c{i}"}],
        usage_metadata={"input_tokens": tokens - tokens // 5, "output_tokens": tokens // 5,
                        "total_tokens": tokens},
    )  # fmt: skip


def _tool(thread: int, i: int) -> Any:
    from langchain_core.messages import ToolMessage

    text = f"result for t{thread} q{i}: " + "lorem ipsum dolor sit amet " * (PAD // 27 + 1)
    return ToolMessage(content=text[:PAD], name="search", tool_call_id=f"t{thread}-c{i}",
                       id=f"t{thread}-tool-{i}")  # fmt: skip


def _array_header(n: int) -> bytes:
    """The msgpack header of an array of ``n`` items (fixarray, array 16, array 32)."""
    if n < 16:
        return bytes([0x90 | n])
    if n < 2**16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


def memo_serde(check_every: int = CHECK_EVERY) -> Any:
    """A ``JsonPlusSerializer`` that encodes each message of a checkpoint's list once.

    A checkpoint is encoded with its ``messages`` channel replaced by a marker string, and
    the marker's bytes are replaced by the array header and each message's memoised encoding
    (keyed by the message object, which a thread's later lists share). Every
    ``check_every``-th call is compared with the stock serializer's bytes (AssertionError
    if they differ), so what is written stays LangGraph's own encoding.
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer, _msgpack_enc

    class MemoSerde(JsonPlusSerializer):
        def __init__(self) -> None:
            super().__init__()
            self.memo: dict[int, tuple[Any, bytes]] = {}
            self.calls = 0
            self.checked = 0

        def reset(self) -> None:
            """Forget the memoised messages (a new thread's objects)."""
            self.memo.clear()

        def _encode(self, msg: Any) -> bytes:
            hit = self.memo.get(id(msg))
            if hit is None or hit[0] is not msg:
                hit = (msg, _msgpack_enc(msg))
                self.memo[id(msg)] = hit
            return hit[1]

        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            values = obj.get("channel_values") if isinstance(obj, dict) else None
            messages = values.get("messages") if isinstance(values, dict) else None
            if not isinstance(messages, list):
                return super().dumps_typed(obj)
            outer = {**obj, "channel_values": {**values, "messages": _MARK}}
            skeleton = _msgpack_enc(outer)
            mark = _msgpack_enc(_MARK)
            at = skeleton.index(mark)
            assert skeleton.find(mark, at + 1) < 0, "the marker occurs twice"
            parts = [_array_header(len(messages)), *(self._encode(m) for m in messages)]
            data = skeleton[:at] + b"".join(parts) + skeleton[at + len(mark) :]
            self.calls += 1
            if check_every and (self.calls - 1) % check_every == 0:
                stock = JsonPlusSerializer().dumps_typed(obj)
                assert stock == ("msgpack", data), "memoised encoding differs from LangGraph's"
                self.checked += 1
            return "msgpack", data

    return MemoSerde()


def thread_checkpoints(t: int) -> Iterator[tuple[Any, Any, Any]]:
    """Thread ``t``'s checkpoints in order: (checkpoint, metadata, new channel versions).

    Each checkpoint's message list is a new list holding the previous one's message
    objects and one more, as a graph's ``add_messages`` leaves it.
    """
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    messages: list[Any] = [HumanMessage(content="research this", id=f"t{t}-h")]
    at = START + timedelta(minutes=t)
    for step in range(1 + 2 * ROUNDS):
        if step:
            i = (step - 1) // 2
            messages = [*messages, _ai(t, i) if step % 2 else _tool(t, i)]
        ckpt = empty_checkpoint()
        ckpt["id"] = str(uuid6(clock_seq=step))
        ckpt["ts"] = (at + timedelta(seconds=step)).isoformat()
        ckpt["channel_values"] = {"messages": messages}
        ckpt["channel_versions"] = {"messages": step + 1}
        meta: Any = {"source": "loop" if step else "input", "step": step, "parents": {}}
        yield ckpt, meta, {"messages": step + 1}


def write(path: Path, checkpoints: int, first_thread: int = 0, fast: bool = True) -> int:
    """Write about ``checkpoints`` checkpoints (whole threads); returns how many.

    Threads are numbered from ``first_thread`` (so chunks written to separate files are
    distinct threads); ``fast=False`` uses the stock serializer (for comparison).
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    path.unlink(missing_ok=True)
    con = sqlite3.connect(str(path), check_same_thread=False)
    # the saver commits after every put: without a sync per commit (a file rebuilt if the
    # machine dies), that is ~1.4 ms a checkpoint less; the tables and bytes are the same
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA journal_mode = MEMORY")
    serde = memo_serde() if fast else None
    saver = SqliteSaver(con, serde=serde)
    threads = max(1, round(checkpoints / (1 + 2 * ROUNDS)))
    written = 0
    for t in range(first_thread, first_thread + threads):
        if serde is not None:
            serde.reset()
        cfg: Any = {"configurable": {"thread_id": f"heavy-{t:06d}", "checkpoint_ns": ""}}
        for ckpt, meta, versions in thread_checkpoints(t):
            cfg = saver.put(cfg, ckpt, meta, versions)
            written += 1
        con.commit()
    con.close()
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line: the output file and the number of checkpoints."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--checkpoints", type=int, default=2_000)
    p.add_argument("--first-thread", type=int, default=0, help="number of the first thread")
    p.add_argument("--stock", action="store_true", help="LangGraph's serializer, unmemoised")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    n = write(a.out, a.checkpoints, a.first_thread, fast=not a.stock)
    print(f"{n:,} checkpoints in {time.perf_counter() - t0:.0f} s, "
          f"{a.out.stat().st_size / 2**20:,.0f} MiB", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
