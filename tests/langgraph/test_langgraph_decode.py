"""The safe decoder on values serialized by LangGraph's own serializer, one kind at a time."""

from __future__ import annotations

import dataclasses
import enum
import re
import uuid
from collections import deque, namedtuple
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Send
from pydantic import BaseModel, SecretStr

import loaders.langgraph.decode as lg_decode
from debugger.errors import DecodeError
from loaders.langgraph.decode import SafeDecoder, type_label


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    when: datetime


Pair = namedtuple("Pair", "a b")


class Account(BaseModel):
    name: str
    secret: SecretStr
    opened: date


U = uuid.UUID("12345678-1234-5678-1234-567812345678")
WHEN = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
M = __name__
CASES: list[tuple[Any, Any]] = [
    (U, "12345678-1234-5678-1234-567812345678"),
    (Decimal("12.50"), "12.50"),
    ({"b", "a"}, ["a", "b"]),
    (frozenset({3, 1}), [1, 3]),
    (deque([1, 2]), [1, 2]),
    (timedelta(minutes=1, seconds=1), 61.0),
    (date(2026, 11, 1), "2026-11-01"),
    (time(9, 30, 5), "09:30:05"),
    (WHEN, "2026-11-01T09:30:00+00:00"),
    (Path("/var/data/x.txt"), "/var/data/x.txt"),
    (ZoneInfo("Europe/Paris"), "Europe/Paris"),
    (IPv4Address("10.0.0.1"), "10.0.0.1"),
    (Color.RED, {"__type__": f"enum:{M}.Color", "value": "red"}),
    (Point(1, WHEN), {"__type__": f"dataclass:{M}.Point", "x": 1, "when": WHEN.isoformat()}),
    (Pair(1, "x"), {"__type__": f"dataclass:{M}.Pair", "a": 1, "b": "x"}),
    (Account(name="ada", secret=SecretStr("hunter2"), opened=date(2026, 1, 2)),
     {"__type__": f"pydantic:{M}.Account", "name": "ada", "secret": "**********",
      "opened": "2026-01-02"}),
    (Send("node", {"k": 1}), {"__type__": "langgraph.types.Send", "node": "node", "arg": {"k": 1}}),
    (re.compile("a+", re.I), {"__type__": "re.Pattern", "pattern": "a+", "flags": 34}),
    ({"nested": [b"\x00\x01"]}, {"nested": [b"\x00\x01"]}),
    (b"raw", {"__type__": "bytes", "base64": "cmF3"}),
    (None, None),
]  # fmt: skip


@pytest.fixture(params=["ormsgpack", "msgpack"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> SafeDecoder:
    if request.param == "msgpack":
        monkeypatch.setattr(lg_decode, "_ormsgpack", None)
    return SafeDecoder()


@pytest.mark.parametrize(("value", "want"), CASES, ids=[type(v).__name__ for v, _ in CASES])
def test_decodes_what_langgraph_wrote(decoder: SafeDecoder, value: Any, want: Any) -> None:
    type_, data = JsonPlusSerializer().dumps_typed(value)
    assert decoder.decode(type_, data) == want


def test_bytes_inside_values_become_json() -> None:
    type_, data = JsonPlusSerializer().dumps_typed({"blob": b"\x00\x01"})
    value = SafeDecoder().decode(type_, data)
    assert lg_decode.to_json(value) == b'{"blob":{"__type__":"bytes","base64":"AAE="}}'


def test_labels() -> None:
    assert type_label({"__type__": "pydantic:myapp.models.Ticket", "id": 1}) == "Ticket (pydantic)"
    assert type_label({"__type__": "enum:myapp.Color", "value": "red"}) == "Color (enum)"
    assert type_label({"id": 1}) is None


@pytest.mark.parametrize(
    ("type_", "data", "reason"),
    [
        ("pickle", b"\x80\x04P1\n.", "pickle value: pickle opcode PERSID is not read"),
        ("pickle", b"\x80\x04\x95", "pickle value: not a readable pickle"),
        ("msgpack+aes", b"\x01\x02", "encrypted value (msgpack+aes): not decrypted"),
        ("msgpack", b"\xc1", "corrupt msgpack value"),
        ("msgpack", b"\xc7\x01\x63\x00", "unknown msgpack extension code 99"),
        ("json", b"{nope", "corrupt json value"),
        ("zstd", b"", "unknown value type 'zstd'"),
    ],
)
def test_refusals(type_: str, data: bytes, reason: str) -> None:
    with pytest.raises(DecodeError) as info:
        SafeDecoder().decode(type_, data)
    assert info.value.message.startswith(reason)
