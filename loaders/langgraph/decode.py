"""A safe decoder for LangGraph's serialized values: ``(type, bytes)`` to plain JSON values.

LangGraph's own serializer rebuilds the application's classes (it imports their modules and
calls their constructors), which a debugger must not do: the code may be absent, changed, or
untrusted. This decoder reads the msgpack structure only. Each extension value carries
``(module, class name, payload)``; the payload is decoded and the class is kept as a tag:

- user classes become objects with ``__type__``: ``"pydantic:myapp.models.Ticket"`` (pydantic
  v2, LangChain messages included), ``"pydantic_v1:..."``, ``"dataclass:..."`` (dataclasses
  and namedtuples, both stored as keyword arguments), ``"enum:..."`` (with ``value``),
  ``"object:..."`` (any other constructor, with ``args``);
- standard types become readable JSON: datetimes, dates and times as ISO strings, timedeltas
  as seconds, UUIDs as their canonical string, Decimals as strings, sets and frozensets as
  sorted lists, deques and tuples as lists, paths and IP addresses as strings, secrets as
  ``"**********"``, bytes as ``{"__type__": "bytes", "base64": ...}``.

A ``pickle`` value (the serializer's ``pickle_fallback``) is read as data by
:mod:`loaders.pickled`, never unpickled: its objects are ``"pickle:<module>.<Class>"`` with
their fields, a call it would make is named, not made. Encrypted values (``msgpack+aes`` and
any ``<inner>+<cipher>``), and pickles that reader refuses, raise a :class:`DecodeError`
naming the reason.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import msgpack
import orjson

from debugger.errors import DecodeError
from loaders.pickled import UnreadablePickle, read_pickle

_ormsgpack: Any
try:  # ormsgpack (a LangGraph dependency) unpacks faster; msgpack is the fallback
    import ormsgpack as _ormsgpack
except ImportError:  # pragma: no cover
    _ormsgpack = None

SECRET = "**********"
_CACHE_LIMIT = 32 * 1024 * 1024
"""Bytes of extension payloads whose decoded value is remembered (states repeat messages)."""


def _sorted_items(items: list[Any]) -> list[Any]:
    """A set's items in a stable order, so two equal sets compare equal in a diff."""
    try:
        return sorted(items, key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    except TypeError:
        return items


def _single(mod: str, name: str, arg: Any) -> Any:
    full = f"{mod}.{name}"
    if full == "uuid.UUID" and isinstance(arg, str) and len(arg) == 32:
        return f"{arg[:8]}-{arg[8:12]}-{arg[12:16]}-{arg[16:20]}-{arg[20:]}"
    if full in ("builtins.set", "builtins.frozenset"):
        return _sorted_items(list(arg))
    if full in ("collections.deque", "decimal.Decimal", "zoneinfo.ZoneInfo") or mod == "ipaddress":
        return list(arg) if full == "collections.deque" else arg
    if "secret" in name.lower():
        return SECRET
    # The serializer uses this form for Enums only, among user classes.
    return {"__type__": f"enum:{full}", "value": arg}


def _positional(mod: str, name: str, args: Any) -> Any:
    full = f"{mod}.{name}"
    args = list(args) if isinstance(args, list | tuple) else [args]
    if mod == "pathlib":
        return "/".join(str(a) for a in args).replace("//", "/")
    if full == "datetime.date":
        y, m, d = args
        return f"{y:04d}-{m:02d}-{d:02d}"
    if full == "datetime.timedelta":
        return timedelta(*args).total_seconds()
    if full == "re.compile":
        return {"__type__": "re.Pattern", "pattern": args[0], "flags": args[1]}
    if full == "datetime.timezone":
        return str(args[0]) + (f" {args[1]}" if len(args) > 1 else "") + " (offset seconds)"
    if full == "langgraph.types.Send":
        return {"__type__": full, "node": args[0], "arg": args[1] if len(args) > 1 else None}
    return {"__type__": f"object:{full}", "args": args}


def _keywords(mod: str, name: str, kwargs: Any) -> Any:
    if f"{mod}.{name}" == "datetime.time" and isinstance(kwargs, dict):
        h, m, s = kwargs.get("hour", 0), kwargs.get("minute", 0), kwargs.get("second", 0)
        us = kwargs.get("microsecond", 0)
        return f"{h:02d}:{m:02d}:{s:02d}" + (f".{us:06d}" if us else "")
    return _tagged(f"dataclass:{mod}.{name}", kwargs)


def _tagged(tag: str, fields: Any) -> dict[str, Any]:
    if isinstance(fields, dict):
        return {"__type__": tag, **{str(k): v for k, v in fields.items()}}
    return {"__type__": tag, "value": fields}


def _numpy(meta: Any) -> Any:
    dtype, shape, order, buf = meta
    try:
        import numpy as np  # a data library, not user code

        arr = np.frombuffer(buf, dtype=np.dtype(dtype)).reshape(shape, order=order)
        return {"__type__": "numpy.ndarray", "dtype": dtype, "data": arr.tolist()}
    except (ImportError, ValueError, TypeError):
        return {"__type__": "numpy.ndarray", "dtype": dtype, "shape": list(shape)}


class SafeDecoder:
    """Decodes LangGraph values without importing or constructing any class.

    One decoder may be reused across rows: it remembers decoded extension payloads (a
    message list repeats in every checkpoint of a SQLite thread), up to a byte budget.
    Callers must treat the returned values as read-only, since they may be shared.
    """

    def __init__(self) -> None:
        self._error: DecodeError | None = None
        self._cache: dict[bytes, tuple[int, Any]] = {}
        self._budget = [_CACHE_LIMIT]
        self._unpack = self._unpacker()

    def _unpacker(self) -> Callable[[bytes], Any]:
        """The unpack function, with its extension hook as a closure.

        The hook runs once per extension value (several per message of a checkpoint),
        nearly always a cache hit, so it is kept to local lookups, which are faster than a
        bound method reading attributes.
        """
        cache, budget, handlers = self._cache, self._budget, _HANDLERS
        get = cache.get

        def hook(code: int, data: bytes) -> Any:
            hit = get(data)
            if hit is not None and hit[0] == code:
                return hit[1]
            handler = handlers.get(code)
            if handler is None:
                # the unpacker may wrap what a hook raises: keep the reason for decode()
                self._error = DecodeError(f"unknown msgpack extension code {code}", "")
                raise self._error
            value = handler(unpack(data))
            if len(data) > 64 and budget[0] > 0:
                cache[data] = (code, value)
                budget[0] -= len(data)
            return value

        if _ormsgpack is not None:
            ormsgpack_unpackb, option = _ormsgpack.unpackb, _ormsgpack.OPT_NON_STR_KEYS

            def unpack(data: bytes) -> Any:
                return ormsgpack_unpackb(data, ext_hook=hook, option=option)
        else:  # pragma: no cover

            def unpack(data: bytes) -> Any:
                return msgpack.unpackb(
                    data, ext_hook=hook, strict_map_key=False, raw=False, use_list=True
                )

        return unpack

    def clear(self) -> None:
        """Forget remembered payloads (between threads, to bound memory)."""
        self._cache.clear()
        self._budget[0] = _CACHE_LIMIT

    def decode(self, type_: str | None, data: bytes | str | None) -> Any:
        """Decode one ``(type, bytes)`` value to JSON-ready Python values.

        Raises:
            DecodeError: pickle, encrypted, unknown or corrupt values (the reason says which).
        """
        kind = (type_ or "").strip()
        if "+" in kind:
            raise DecodeError(
                f"encrypted value ({kind}): not decrypted", "decrypt it with the application"
            )
        if kind in ("null", "empty") or data is None:
            return None
        if not isinstance(data, str | bytes | bytearray | memoryview):
            # SQLite keeps a number in a BLOB column as a number; bytes(n) would be n zero
            # bytes (a gigabyte for 10**9), not the value
            raise DecodeError(
                f"a {type(data).__name__} where LangGraph writes bytes",
                "not written by a LangGraph saver",
            )
        raw = data.encode() if isinstance(data, str) else bytes(data)
        if kind == "pickle":  # read as data, never unpickled (loaders.pickled)
            try:
                return read_pickle(raw, tag="pickle:")
            except UnreadablePickle as e:
                raise DecodeError(f"pickle value: {e}", "it is read as data, never run") from None
        if kind in ("bytes", "bytearray"):
            return {"__type__": "bytes", "base64": base64.b64encode(raw).decode()}
        if kind == "json":
            return _json(raw)
        if kind == "msgpack":
            return self._msgpack(raw)
        raise DecodeError(f"unknown value type {kind!r}", "not written by a LangGraph saver")

    def _msgpack(self, raw: bytes) -> Any:
        self._error = None
        try:
            return self._unpack(raw)
        except DecodeError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, msgpack.UnpackException) as e:
            # ormsgpack.MsgpackDecodeError is a ValueError
            if self._error is not None:
                raise self._error from e
            raise DecodeError(f"corrupt msgpack value: {type(e).__name__}", "") from e
        except RecursionError as e:
            raise DecodeError("msgpack value nested too deeply", "") from e


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise DecodeError("corrupt json value", "") from e


def json_default(value: Any) -> Any:
    """``orjson`` fallback for what msgpack can hold and JSON cannot (bytes, tuples' kin)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"__type__": "bytes", "base64": base64.b64encode(bytes(value)).decode()}
    raise TypeError(f"cannot store {type(value).__name__} as JSON")


def to_json(value: Any) -> bytes:
    """JSON text of a decoded value (non-string keys become strings, bytes become base64)."""
    return orjson.dumps(value, default=json_default, option=orjson.OPT_NON_STR_KEYS)


def _check3(value: Any) -> tuple[str, str, Any]:
    if not isinstance(value, list | tuple) or len(value) < 3:
        raise DecodeError("malformed msgpack extension payload", "")
    return str(value[0]), str(value[1]), value[2]


def _h_single(v: Any) -> Any:
    return _single(*_check3(v))


def _h_pos(v: Any) -> Any:
    return _positional(*_check3(v))


def _h_kw(v: Any) -> Any:
    return _keywords(*_check3(v))


def _h_method(v: Any) -> Any:
    mod, name, arg = _check3(v)
    if f"{mod}.{name}" == "datetime.datetime" and isinstance(arg, str):
        return arg
    return {"__type__": f"object:{mod}.{name}", "args": [arg]}


def _h_pyd1(v: Any) -> Any:
    mod, name, fields = _check3(v)
    return _tagged(f"pydantic_v1:{mod}.{name}", fields)


def _h_pyd2(v: Any) -> Any:
    mod, name, fields = _check3(v)
    return _tagged(f"pydantic:{mod}.{name}", fields)


def _h_numpy(v: Any) -> Any:
    if not isinstance(v, list | tuple) or len(v) != 4:
        raise DecodeError("malformed numpy payload", "")
    return _numpy(v)


def _h_delta(v: Any) -> Any:
    return v


_HANDLERS: dict[int, Callable[[Any], Any]] = {
    0: _h_single, 1: _h_pos, 2: _h_kw, 3: _h_method, 4: _h_pyd1, 5: _h_pyd2, 6: _h_numpy,
    7: _h_delta,
}  # fmt: skip


def type_label(value: Any) -> str | None:
    """A short label for a decoded object, e.g. ``Ticket (pydantic)``; None for plain values."""
    if not isinstance(value, dict):
        return None
    tag = value.get("__type__")
    if not isinstance(tag, str):
        return None
    kind, _, full = tag.partition(":")
    if not full:
        return tag.rsplit(".", 1)[-1]
    return f"{full.rsplit('.', 1)[-1]} ({kind})"
