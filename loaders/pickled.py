"""Reading a pickle as data, never running it: ADK 1.x's event actions, LangGraph's fallback.

ADK's ``DatabaseSessionService`` stored each event's ``EventActions`` (a pydantic model) as a
pickle until its v1 schema (ADK 1.x; ``adk migrate session`` converts), and LangGraph's
serializer pickles what msgpack cannot hold when an application turns on its
``pickle_fallback``. Unpickling runs whatever the bytes name, so it is never done here:
:func:`read_pickle` walks the opcodes with the standard library's ``pickletools.genops`` (a
parser: it imports and calls nothing) and builds the value a small stack machine makes of
them, with every class, function and call kept as inert data:

- a global (``GLOBAL``, ``STACK_GLOBAL``) is its dotted name, never imported;
- an object made by ``NEWOBJ`` and filled by ``BUILD`` (how pickle stores a pydantic model
  or a plain class) is its state: a pydantic model's fields (``__dict__``), an object's
  ``__dict__``, with ``"__type__": "<module>.<name>"``;
- any other call (``REDUCE``) is ``{"__type__": "call:<module>.<name>", "args": [...]}``:
  ``os.system("...")`` is a dictionary that names it, and nothing happens;
- bytes are ``{"__type__": "bytes", "base64": "..."}`` (as the LangGraph decoder renders
  them), sets and tuples are lists; a ``datetime``, ``date`` or ``time`` is ISO text when it
  has no zone (with one, its call is kept, zone and all).

Opcodes no ADK pickle uses (persistent ids, the extension registry, the protocol 0 ``INST``
and ``OBJ``, out-of-band buffers) are refused, as are a value nested deeper than
:data:`MAX_DEPTH`, one that contains itself, and one that would expand to more than
:data:`MAX_NODES` values (a memo can repeat a list inside itself exponentially):
:class:`UnreadablePickle` says which, and the row is quarantined with it.
"""

from __future__ import annotations

import base64
import pickletools
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 200
"""Levels of nesting accepted (the same bound as the JSON states')."""
MAX_NODES = 1_000_000
"""Values a pickle may expand to."""
MAX_BYTES = 64 * 1024 * 1024
"""Bytes of pickle read at most."""


class UnreadablePickle(ValueError):
    """The bytes are not a pickle this reader renders (the message says why)."""


@dataclass(eq=False)
class _Global:
    name: str


@dataclass(eq=False)
class _Object:
    kind: str
    args: list[Any]
    state: Any = None
    made_by_call: bool = False
    items: list[Any] | None = None
    """What ``APPENDS`` added to it (pickle's way for a list-like object)."""
    entries: dict[Any, Any] | None = None
    """What ``SETITEMS`` set on it (a dict-like object: ``OrderedDict``, ``defaultdict``)."""


CONTAINERS = {"collections.OrderedDict", "collections.defaultdict", "collections.deque",
              "builtins.set", "builtins.frozenset", "builtins.list", "builtins.dict"}  # fmt: skip
"""Classes whose object is rendered as the items or entries pickle gave it."""


@dataclass(eq=False)
class _Mark:
    pass


@dataclass(eq=False)
class _Frozen:
    items: list[Any] = field(default_factory=list)


_MARK = _Mark()
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_REFUSED = {"PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4", "INST", "OBJ", "NEXT_BUFFER",
            "READONLY_BUFFER", "BYTEARRAY8"}  # fmt: skip
_NUMBERS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"}
_TEXTS = {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
          "BINUNICODE8"}  # fmt: skip


def _bytes(raw: bytes) -> dict[str, str]:
    return {"__type__": "bytes", "base64": base64.b64encode(raw).decode("ascii")}


def _pop_mark(stack: list[Any]) -> list[Any]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is _MARK:
            items = stack[i + 1 :]
            del stack[i:]
            return items
    raise UnreadablePickle("a MARK is missing")


def _machine(data: bytes) -> Any:
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1:
                raise UnreadablePickle("the pickle ends with a stack of more than one value")
            return stack[0]
        if name in _REFUSED:
            raise UnreadablePickle(f"pickle opcode {name} is not read")
        if name in _CONSTANTS:
            stack.append(_CONSTANTS[name])
        elif name in _NUMBERS or name in _TEXTS:
            stack.append(arg)
        elif name in ("BINBYTES", "SHORT_BINBYTES", "BINBYTES8"):
            stack.append(_bytes(bytes(arg or b"")))
        elif name == "EMPTY_DICT":
            stack.append({})
        elif name in ("EMPTY_LIST", "EMPTY_TUPLE", "EMPTY_SET"):
            stack.append([])
        elif name == "MARK":
            stack.append(_MARK)
        elif name == "POP_MARK":
            _pop_mark(stack)
        elif name in ("TUPLE", "LIST"):
            stack.append(_pop_mark(stack))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            if len(stack) < n:
                raise UnreadablePickle(f"{name} on a short stack")
            items = stack[-n:]
            del stack[-n:]
            stack.append(items)
        elif name == "DICT":
            items = _pop_mark(stack)
            stack.append(_pairs({}, items))
        elif name == "FROZENSET":
            stack.append(_Frozen(_pop_mark(stack)))
        elif name in ("APPEND", "APPENDS", "ADDITEMS"):
            items = [stack.pop()] if name == "APPEND" else _pop_mark(stack)
            target = _top(stack, name)
            if isinstance(target, _Object):
                target.items = [*(target.items or []), *items]
            elif isinstance(target, list):
                target.extend(items)
            else:
                raise UnreadablePickle(f"{name} on a value that is not a list or set")
        elif name in ("SETITEM", "SETITEMS"):
            items = stack[-2:] if name == "SETITEM" else _pop_mark(stack)
            if name == "SETITEM":
                del stack[-2:]
            target = _top(stack, name)
            if isinstance(target, _Object):
                target.entries = _pairs(target.entries or {}, items)
            elif isinstance(target, dict):
                _pairs(target, items)
            else:
                raise UnreadablePickle(f"{name} on a value that is not a dict")
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg if isinstance(arg, int) else -1] = _top(stack, name)
        elif name == "MEMOIZE":
            memo[len(memo)] = _top(stack, name)
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            if not isinstance(arg, int) or arg not in memo:
                raise UnreadablePickle(f"{name} of memo entry {arg}, never stored")
            stack.append(memo[arg])
        elif name == "GLOBAL":
            module, _, attr = str(arg).partition(" ")
            stack.append(_Global(f"{module}.{attr}"))
        elif name == "STACK_GLOBAL":
            if len(stack) < 2 or not all(isinstance(x, str) for x in stack[-2:]):
                raise UnreadablePickle("STACK_GLOBAL without a module and a name")
            module, attr = stack[-2:]
            del stack[-2:]
            stack.append(_Global(f"{module}.{attr}"))
        elif name in ("NEWOBJ", "NEWOBJ_EX", "REDUCE"):
            kwargs = stack.pop() if name == "NEWOBJ_EX" else None
            if len(stack) < 2:
                raise UnreadablePickle(f"{name} on a short stack")
            args, callee = stack.pop(), stack.pop()
            if not isinstance(callee, _Global) or not isinstance(args, list):
                raise UnreadablePickle(f"{name} of something that is not a named class")
            kind = callee.name.replace("__builtin__.", "builtins.", 1)  # protocol 0-2 names
            kind = kind.replace("copy_reg.", "copyreg.", 1)
            if kind == "copyreg._reconstructor" and args and isinstance(args[0], _Global):
                # protocols 0-1 make an object so: its class, its base, the base's state
                stack.append(_Object(args[0].name, []))
                continue
            if kind == "_codecs.encode" and len(args) == 2 and args[1] == "latin1" \
                    and isinstance(args[0], str):  # fmt: skip
                # how protocols 0-2 keep bytes: the text, encoded back (not called here)
                raw = args[0].encode("latin-1", errors="replace")
                stack.append(_bytes(raw))
                continue
            obj = _Object(kind, args, made_by_call=name == "REDUCE")
            if kwargs:
                obj.state = {"kwargs": kwargs}
            stack.append(obj)
        elif name == "BUILD":
            state = stack.pop()
            target = _top(stack, name)
            if not isinstance(target, _Object):
                raise UnreadablePickle("BUILD on a value that is not an object")
            target.state = state
        elif name in ("DUP", "POP"):
            if name == "DUP":
                stack.append(_top(stack, name))
            elif stack:
                stack.pop()
        else:
            raise UnreadablePickle(f"pickle opcode {name} is not read")
    raise UnreadablePickle("the pickle has no STOP")


def _top(stack: list[Any], op: str) -> Any:
    if not stack or stack[-1] is _MARK:
        raise UnreadablePickle(f"{op} on an empty stack")
    return stack[-1]


def _pairs(target: dict[Any, Any], items: list[Any]) -> dict[Any, Any]:
    if len(items) % 2:
        raise UnreadablePickle("a dict with a key and no value")
    for k, v in zip(items[::2], items[1::2], strict=True):
        if isinstance(k, list | dict | _Object | _Frozen):
            raise UnreadablePickle("a dict key that is not a plain value")
        target[k] = v
    return target


class _Render:
    """The machine's value as JSON-ready data, within the bounds; ``tag`` goes before an
    object's class in its ``__type__``."""

    def __init__(self, tag: str = "") -> None:
        self.nodes = 0
        self.path: set[int] = set()
        self.tag = tag

    def value(self, v: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise UnreadablePickle(f"the pickle expands to more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise UnreadablePickle(f"the pickle is nested deeper than {MAX_DEPTH} levels")
        if v is None or isinstance(v, bool | int | float | str):
            return v
        if isinstance(v, _Global):
            return {"__type__": f"global:{v.name}"}
        if id(v) in self.path:
            raise UnreadablePickle("the pickle holds a value that contains itself")
        self.path.add(id(v))
        try:
            if isinstance(v, _Frozen):
                return [self.value(x, depth + 1) for x in v.items]
            if isinstance(v, list):
                return [self.value(x, depth + 1) for x in v]
            if isinstance(v, dict):
                return {str(k) if not isinstance(k, str) else k: self.value(x, depth + 1)
                        for k, x in v.items()}  # fmt: skip
            return self._object(v, depth)
        finally:
            self.path.discard(id(v))

    def _object(self, o: _Object, depth: int) -> Any:
        when = _datetime(o)
        if when is not None:
            return when
        if o.kind in CONTAINERS and o.entries is not None:
            return self.value(o.entries, depth)
        if o.kind in CONTAINERS and (o.items is not None or not o.state):
            return self.value(o.items or (o.args[0] if o.args else []), depth)
        if o.made_by_call:
            out: dict[str, Any] = {"__type__": f"call:{o.kind}", "args": self.value(o.args, depth)}
            for key, extra in (("items", o.items), ("entries", o.entries)):
                if extra is not None:
                    out[key] = self.value(extra, depth)
            if o.state is not None:
                out["state"] = self.value(o.state, depth)
            return out
        state = o.state
        if isinstance(state, list) and len(state) == 2 and isinstance(state[0], dict | None):
            state = {**(state[0] or {}), **(state[1] if isinstance(state[1], dict) else {})}
        fields: dict[str, Any] = {}
        if isinstance(state, dict):
            inner = state.get("__dict__")
            # a pydantic model: its fields are __dict__, the rest is pydantic's bookkeeping
            fields = inner if isinstance(inner, dict) and "__pydantic_fields_set__" in state \
                else state  # fmt: skip
        elif state is not None:
            fields = {"state": state}
        rendered = self.value(fields, depth)
        return {"__type__": f"{self.tag}{o.kind}", **rendered}


def _datetime(o: _Object) -> str | None:
    """``datetime.datetime`` / ``date`` / ``time`` without a zone as ISO text, from the bytes
    pickle keeps them in (its own format). One with a zone (a second argument, an object of
    its own) is not converted: its call is kept whole, so the offset is not lost."""
    if not o.made_by_call or o.kind not in ("datetime.datetime", "datetime.date",
                                            "datetime.time") or len(o.args) != 1:  # fmt: skip
        return None
    first = o.args[0]
    raw = b""
    if isinstance(first, dict) and first.get("__type__") == "bytes":
        raw = base64.b64decode(first["base64"])
    elif isinstance(first, str):
        raw = first.encode("latin-1", errors="replace")
    try:
        if o.kind == "datetime.date" and len(raw) == 4:
            return f"{raw[0] * 256 + raw[1]:04d}-{raw[2]:02d}-{raw[3]:02d}"
        if o.kind == "datetime.time" and len(raw) == 6:
            us = int.from_bytes(raw[3:6], "big")
            return f"{raw[0]:02d}:{raw[1]:02d}:{raw[2]:02d}.{us:06d}"
        if o.kind == "datetime.datetime" and len(raw) == 10:
            us = int.from_bytes(raw[7:10], "big")
            return (f"{raw[0] * 256 + raw[1]:04d}-{raw[2]:02d}-{raw[3]:02d}T"
                    f"{raw[4]:02d}:{raw[5]:02d}:{raw[6]:02d}.{us:06d}")  # fmt: skip
    except IndexError:
        return None
    return None


def read_pickle(data: bytes | bytearray | memoryview, tag: str = "") -> Any:
    """The value a pickle holds, as JSON-ready data; nothing it names is imported or run.

    ``tag`` prefixes an object's class in its ``__type__`` (LangGraph's values: ``pickle:``,
    beside the decoder's ``pydantic:`` and ``dataclass:``).

    Raises:
        UnreadablePickle: not a pickle, or one outside what is read (the reason says which).
    """
    raw = bytes(data)
    if len(raw) > MAX_BYTES:
        raise UnreadablePickle(f"a pickle of {len(raw):,} bytes (more than {MAX_BYTES:,})")
    try:
        value = _machine(raw)
    except UnreadablePickle:
        raise
    except (ValueError, IndexError, KeyError, TypeError, OverflowError, EOFError) as e:
        raise UnreadablePickle(f"not a readable pickle ({type(e).__name__}: {e})") from None
    return _Render(tag).value(value)
