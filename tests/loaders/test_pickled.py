"""The pickle reader of ADK's v0 tables: pickles as data, and pickles built to attack it.

Nothing a pickle names may be imported or called: each attack checks that its effect did not
happen (a file not written, a module not imported), and that it ends in ``UnreadablePickle``
or inert data, quickly, never in another exception.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import pickle
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from loaders.pickled import MAX_DEPTH, UnreadablePickle, read_pickle

V0 = Path(__file__).parents[1] / "runtimes" / "adk" / "data_v0" / "adk.sqlite"


class Confirmation(BaseModel):
    hint: str
    confirmed: bool = False
    payload: dict[str, Any] | None = None


class Plain:
    def __init__(self) -> None:
        self.name = "plain"
        self.when = datetime.datetime(2026, 12, 7, 9, 30, 1, 250)


def _values() -> dict[str, Any]:
    return {
        "text": "ünïcode", "n": [0, -1, 2**70, 2.5, True, None], "b": b"\x00\xffbytes",
        "tuple": (1, (2, 3)), "set": {4}, "frozen": frozenset({5}),
        "day": datetime.date(2025, 5, 6), "at": datetime.datetime(2026, 1, 2, 3, 4, 5, 678),
        "od": collections.OrderedDict(x=1), "dd": collections.defaultdict(list, {"k": [1]}),
        "deque": collections.deque([1, 2]),
        "model": Confirmation(hint="refund 129.00?", payload={"amount": 12900}),
        "plain": Plain(),
    }  # fmt: skip


WANT = {
    "text": "ünïcode", "n": [0, -1, 2**70, 2.5, True, None],
    "b": {"__type__": "bytes", "base64": "AP9ieXRlcw=="},
    "tuple": [1, [2, 3]], "set": [4], "frozen": [5], "day": "2025-05-06",
    "at": "2026-01-02T03:04:05.000678", "od": {"x": 1}, "dd": {"k": [1]}, "deque": [1, 2],
    "model": {"__type__": f"{__name__}.Confirmation", "hint": "refund 129.00?",
              "confirmed": False, "payload": {"amount": 12900}},
    "plain": {"__type__": f"{__name__}.Plain", "name": "plain",
              "when": "2026-12-07T09:30:01.000250"},
}  # fmt: skip


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_protocol_reads_as_the_same_data(protocol: int) -> None:
    assert read_pickle(pickle.dumps(_values(), protocol=protocol)) == WANT


def test_adk_1_event_actions_read_as_their_fields() -> None:
    """Every ``actions`` ADK 1.15 wrote: an EventActions with its fields, state deltas and
    confirmation requests included."""
    with sqlite3.connect(f"file:{V0}?mode=ro", uri=True) as con:
        blobs = [r[0] for r in con.execute("SELECT actions FROM events")]
    read = [read_pickle(b) for b in blobs]
    assert {r["__type__"] for r in read} == {"google.adk.events.event_actions.EventActions"}
    assert any(r["state_delta"] for r in read)
    asked = [c for r in read for c in (r["requested_tool_confirmations"] or {}).values()]
    assert asked and all(c["__type__"].endswith(".ToolConfirmation") for c in asked)


def _never_ran(marker: Path) -> None:
    assert not marker.exists()


@pytest.mark.parametrize(
    "payload",
    [
        "cos\nsystem\n(S'touch {m}'\ntR.",  # protocol 0: os.system(...)
        'cbuiltins\neval\n(S\'open("{m}", "w")\'\ntR.',
        "csubprocess\nPopen\n((S'touch'\nS'{m}'\nltR.",
        "cbuiltins\nexec\n(S'import os; os.system(\"touch {m}\")'\ntR.",
    ],
)
def test_a_call_is_named_never_made(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data = payload.format(m=marker).encode()
    got = read_pickle(data)
    assert got["__type__"].startswith("call:") and isinstance(got["args"], list)
    _never_ran(marker)
    # the same through protocol 4's opcodes (STACK_GLOBAL, a tuple, REDUCE)
    newer = read_pickle(_p4(got["__type__"][5:], got["args"]))
    assert newer == got
    _never_ran(marker)


def _text(s: str) -> bytes:
    raw = s.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def _p4(name: str, args: list[Any]) -> bytes:
    """A protocol 4 pickle of a call of ``name`` with text (or lists of text) arguments."""
    module, _, attr = name.rpartition(".")
    items = b"".join(_text(a) if isinstance(a, str) else b"](" + b"".join(map(_text, a)) + b"e"
                     for a in args)  # fmt: skip
    return b"\x80\x04" + _text(module) + _text(attr) + b"\x93(" + items + b"tR."


def test_a_global_is_never_imported() -> None:
    """``this`` prints the Zen of Python when imported: it stays unimported."""
    sys.modules.pop("this", None)
    got = read_pickle(b"\x80\x04\x8c\x04this\x94\x8c\x01s\x94\x93\x94.")
    assert got == {"__type__": "global:this.s"}
    assert "this" not in sys.modules


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x80\x04\x95", "not a readable pickle"),
        (b"", "not a readable pickle"),
        (b"garbage", "not a readable pickle"),
        (b"\x80\x04h\x07.", "memo entry 7, never stored"),
        (b"(I1\nI2\n.", "stack of more than one value"),
        (b"P1\n.", "PERSID is not read"),
        (b"\x80\x02\x82\x01.", "EXT1 is not read"),
        (b"(i__main__\nX\n(dS'a'\nI1\nsb.", "INST is not read"),
        (b"\x80\x04]\x94h\x00a.", "contains itself"),
        (b"\x80\x04" + b"]" * 5_000 + b"a" * 4_999 + b".", f"deeper than {MAX_DEPTH}"),
        (b"\x80\x04N\x81.", "NEWOBJ on a short stack"),
        (b"\x80\x04K\x01)\x81.", "not a named class"),
        (b"\x80\x04}K\x01a.", "not a list or set"),
    ],
)
def test_malformed_and_hostile_pickles_are_refused(data: bytes, why: str) -> None:
    with pytest.raises(UnreadablePickle, match=why):
        read_pickle(data)


def test_a_memo_bomb_stops_at_the_node_bound() -> None:
    """A list holding the one before it twice, 60 times: 2**60 values once expanded."""
    data = b"\x80\x04]\x94"
    for i in range(1, 61):
        data += b"0](h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"e\x94"
    t = time.perf_counter()
    with pytest.raises(UnreadablePickle, match="expands to more than"):
        read_pickle(data + b".")
    assert time.perf_counter() - t < 30  # bounded, not 2**60 (about a second here)


def test_mutated_pickles_end_as_data_or_one_error(tmp_path: Path) -> None:
    """2,000 random mutations of a real ADK pickle: a value or UnreadablePickle, nothing else."""
    with sqlite3.connect(f"file:{V0}?mode=ro", uri=True) as con:
        blob = max((r[0] for r in con.execute("SELECT actions FROM events")), key=len)
    rng = random.Random(7)
    for _ in range(2_000):
        data = bytearray(blob)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
        if rng.random() < 0.3:
            del data[rng.randrange(len(data)) :]
        with contextlib.suppress(UnreadablePickle):
            read_pickle(bytes(data))


def test_a_datetime_with_a_zone_keeps_it() -> None:
    """Naive times become ISO text; an aware one keeps its call, the zone's offset in it."""
    aware = datetime.datetime(
        2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
    )
    got = read_pickle(pickle.dumps(aware, protocol=4))
    assert got["__type__"] == "call:datetime.datetime"
    zone = got["args"][1]
    assert zone["__type__"] == "call:datetime.timezone"
    assert zone["args"][0]["args"] == [0, 7200, 0]  # timedelta(days, seconds, microseconds)
