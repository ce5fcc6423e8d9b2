"""Decoded LangGraph values back into the Python objects LangGraph would restore, and back.

The store holds what the safe decoder made of each value (:mod:`loaders.langgraph.decode`):
user classes as objects tagged ``__type__`` (``pydantic:``, ``dataclass:``, ``enum:``, a
``Send``), standard types as plain JSON. Inside the replay's child, which runs the user's
graph and may import its modules, :func:`revive` rebuilds the tagged objects (a LangChain
message is the same message again, id included). What the decoder renders as plain JSON
(a datetime as ISO text, a set as a list) is given its declared type back by
:func:`coerce`, from the graph's channel type, and only when the result encodes to the very
JSON the store holds: a coercion may restore a lost type, never change a value.

:func:`encode` is the other way: a Python value as the loader would store it (LangGraph's
own serializer, then the safe decoder), so a replayed state compares with the original's.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import re
from functools import cache
from typing import Any

import orjson

from loaders.langgraph.decode import SafeDecoder, to_json


class ReviveError(ValueError):
    """A tagged value whose class cannot be imported or built."""


@cache
def _class(path: str) -> Any:
    module, _, name = path.rpartition(".")
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise ReviveError(f"cannot import {path}: {e}") from e
    return obj


def revive(value: Any) -> Any:
    """The Python value a decoded (JSON) value stands for; plain JSON stays as it is."""
    if isinstance(value, list):
        return [revive(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get("__type__")
    if not isinstance(tag, str):
        return {k: revive(v) for k, v in value.items()}
    fields = {k: v for k, v in value.items() if k != "__type__"}
    try:
        return _build(tag, fields)
    except ReviveError:
        raise
    except Exception as e:  # a constructor of the user's that refuses the stored fields
        raise ReviveError(f"cannot rebuild {tag}: {type(e).__name__}: {e}") from e


def _build(tag: str, fields: dict[str, Any]) -> Any:
    kind, _, path = tag.partition(":")
    if tag == "langgraph.types.Send":
        from langgraph.types import Send

        return Send(str(fields["node"]), revive(fields.get("arg")))
    if tag == "bytes":
        return base64.b64decode(fields["base64"])
    if tag == "re.Pattern":
        return re.compile(fields["pattern"], fields.get("flags") or 0)
    if kind == "pydantic":
        return _class(path).model_validate(fields)
    if kind == "pydantic_v1":
        return _class(path).parse_obj(fields)
    if kind == "enum":
        return _class(path)(revive(fields["value"]))
    if kind == "dataclass":
        cls = _class(path)
        plain = _dataclass(cls, {k: revive(v) for k, v in fields.items()})
        # its fields' declared types bring back what the decoder flattened (a set, a date)
        return coerce(plain, cls, {"__type__": tag, **fields}, rebuild=True)
    if kind == "object":
        return _class(path)(*revive(fields.get("args") or []))
    raise ReviveError(f"no way to rebuild a value tagged {tag!r}")


def _dataclass(cls: Any, fields: dict[str, Any]) -> Any:
    if not dataclasses.is_dataclass(cls):  # a namedtuple, stored by keyword too
        return cls(**fields)
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    factory: Any = cls
    obj = factory(**{k: v for k, v in fields.items() if k in init})
    for k, v in fields.items():
        if k not in init:
            object.__setattr__(obj, k, v)
    return obj


def _fields(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return obj


_serde: Any = None


def encode(value: Any) -> Any:
    """The value as the store holds it: LangGraph's serializer, the safe decoder, JSON.

    Raises:
        DecodeError: a value the loader could not store either (pickle fallback).
    """
    global _serde
    if _serde is None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        _serde = JsonPlusSerializer()
    type_, data = _serde.dumps_typed(value)
    return orjson.loads(to_json(SafeDecoder().decode(type_, data)))


def same_json(a: Any, b: Any) -> bool:
    """Equal as the store would write them (key order aside)."""
    opt = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    return orjson.dumps(a, option=opt, default=repr) == orjson.dumps(b, option=opt, default=repr)


def coerce(value: Any, typ: Any, stored: Any, rebuild: bool = False) -> Any:
    """``value`` validated as ``typ`` when that restores a type and keeps the stored JSON.

    Args:
        value: the revived value.
        typ: the channel's declared type (None when the graph declares none).
        stored: the JSON the store holds for it.
        rebuild: validate a dataclass from its fields (pydantic passes instances through).
    """
    if typ is None or typ is Any:
        return value
    try:
        from pydantic import TypeAdapter

        given = _fields(value) if rebuild else value
        candidate = TypeAdapter(typ).validate_python(given)
    except Exception:  # a type pydantic cannot validate: keep the revived value
        return value
    try:
        return candidate if same_json(encode(candidate), stored) else value
    except Exception:
        return value
