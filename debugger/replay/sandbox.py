"""The sandbox context a replayed agent gets instead of the runtime's ``ctx``.

Same API as the runtime's context (``tool``, ``effect``, ``model``), but nothing is executed:
each call is answered from the original's tape, or from the user's mocks module, or (lenient
mode, nothing fits) with an error the agent sees. Writes go to a ledger. Every call is noted
with where its answer came from, and every call the original did not make, or made with
other arguments, is a divergence. In strict mode the first divergence stops the replay.

Mocks module: a name per tool, holding a fixed value or a callable (``tool(**args)``,
``effect(key, **args)``, ``model(request)``); a ``MOCKS`` dict may hold names that are not
identifiers. The model's mock is named ``model``.
"""

from __future__ import annotations

import builtins
import copy
import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from debugger.errors import ReplayError
from debugger.json_text import preview
from debugger.replay.tape import Match, Tape, TapeEntry, as_json

Mode = Literal["strict", "lenient"]


class StopReplay(BaseException):
    """Raised through the agent's code to end the replay at the first divergence (strict).

    A BaseException, so that an agent's ``except Exception`` cannot swallow it.
    """

    def __init__(self, divergence: dict[str, Any]) -> None:
        super().__init__(divergence["message"])
        self.divergence = divergence


class NoRecordedAnswer(ReplayError, LookupError):
    """Lenient mode: a call neither the tape nor a mock can answer."""


class RecordedCallError(RuntimeError):
    """The original call failed; the replay raises the same error text to the agent."""


_MISSING = object()


def recorded_error(text: str) -> Exception:
    """The exception the original call raised, rebuilt from its ``Type: message`` text.

    Builtin exceptions and the runtime's own (``ToolTimeout``, ``PermissionDenied``) come
    back as themselves, so an agent's ``except ToolTimeout`` behaves as it did; anything
    else is a :class:`RecordedCallError` carrying the text.
    """
    name, sep, message = text.partition(": ")
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        try:
            cls = getattr(importlib.import_module("debugger.runtime.spec"), name, None)
        except ImportError:
            cls = None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message if sep else text)
        except Exception:  # an exception class with another signature
            pass
    return RecordedCallError(text)


def load_mocks(name: str | None) -> ModuleType | None:
    """Import the user's mocks module (inside the sandbox)."""
    return importlib.import_module(name) if name else None


def find_mock(mocks: ModuleType | None, name: str) -> Any:
    """The mock for a tool name: ``MOCKS[name]`` first, then the module attribute."""
    if mocks is None:
        return _MISSING
    table = getattr(mocks, "MOCKS", None)
    if isinstance(table, dict) and name in table:
        return table[name]
    value = getattr(mocks, name, _MISSING)
    if name.startswith("_") or isinstance(value, ModuleType | type):
        return _MISSING
    return value


@dataclass
class SandboxContext:
    """The ``ctx`` of a replayed step; see the module docstring."""

    tape: Tape
    mocks: ModuleType | None
    mode: Mode
    seq: int
    """Next tape sequence number of the replay run."""
    step_index: int = -1
    beyond_original: bool = False
    """The original's record ends before this step: nothing to compare against."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    divergences: list[dict[str, Any]] = field(default_factory=list)
    step_tokens: int = 0

    def begin_step(self, step_index: int, beyond_original: bool) -> None:
        """Start collecting the calls of one step."""
        self.step_index = step_index
        self.beyond_original = beyond_original
        self.calls = []
        self.divergences = []
        self.step_tokens = 0

    # -- the agent's API ----------------------------------------------------------------
    def tool(self, name: str, **args: Any) -> Any:
        """A read tool call."""
        return self._call("tool", name, as_json(args), None, False)

    def effect(self, name: str, key: str | None, **args: Any) -> Any:
        """A keyed write: recorded in the ledger, never executed."""
        return self._call("tool", name, as_json(args), key, True)

    def model(self, request: dict[str, Any]) -> dict[str, Any]:
        """A model call, answered from the tape; its usage counts against the token budget."""
        response = self._call("model", str(request.get("model") or "model"), as_json(request),
                              None, False)  # fmt: skip
        self.step_tokens += tokens_of(response)
        return response  # type: ignore[no-any-return]

    # -- answering ------------------------------------------------------------------------
    def _call(self, kind: str, name: str, request: Any, key: str | None, is_write: bool) -> Any:
        record: dict[str, Any] = {
            "step_index": self.step_index, "seq": self.seq, "kind": kind, "name": name,
            "request": request, "idempotency_key": key, "is_write": is_write, **self._place(),
        }  # fmt: skip
        self.seq += 1
        self.calls.append(record)
        status, entry = self._classify(record)
        record["status"] = status
        record["tape_seq"] = entry.seq if entry else None
        if status in ("beyond_original", "unrecorded"):
            return self._fallback(record, kind, name, request, key)
        if status == "matched" and entry is not None:
            if entry.recorded:
                return self._from_tape(record, entry)
            # a write of a step the original died in: known, but its answer never recorded
            return self._fallback(record, kind, name, request, key)
        divergence = divergence_for(record, Match(status, entry))  # type: ignore[arg-type]
        self.divergences.append(divergence)
        if self.mode == "strict":
            record["source"] = "stopped"
            raise StopReplay(divergence)
        return self._fallback(record, kind, name, request, key)

    def _place(self) -> dict[str, Any]:
        """What a call record says besides the call itself (a graph: where it was made)."""
        return {}

    def _classify(self, record: dict[str, Any]) -> tuple[str, TapeEntry | None]:
        """The call's status on the tape, and the entry it consumed (:func:`classify`)."""
        return classify(self.tape, self.step_index, self.beyond_original, record)

    def missing_calls(self) -> list[dict[str, Any]]:
        """Divergences for the original's calls of this step that the replay did not make."""
        found = missing_divergences(self.tape, self.step_index)
        self.divergences += found
        return found

    def _from_tape(self, record: dict[str, Any], entry: TapeEntry) -> Any:
        record["source"] = "tape"
        record["response"] = entry.response
        record["error"] = entry.error
        if entry.error is not None:
            raise recorded_error(entry.error)
        return copy.deepcopy(entry.response)

    def _fallback(
        self, record: dict[str, Any], kind: str, name: str, request: Any, key: str | None
    ) -> Any:
        mock = find_mock(self.mocks, "model" if kind == "model" else name)
        if mock is _MISSING:
            record["source"] = "none"
            record["error"] = f"no recorded answer and no mock for {name}"
            lost = (
                " (the original died in this step, so its calls were never recorded)"
                if self.tape.is_partial(self.step_index)
                else ""
            )
            raise NoRecordedAnswer(
                f"the replay has no answer for {kind} call {name}({preview(request, 60)}) at "
                f"step {self.step_index}{lost}",
                f"pass --mocks with a module defining `{'model' if kind == 'model' else name}`",
            )
        record["source"] = "mock"
        try:
            value = self._call_mock(mock, kind, request, key, bool(record["is_write"]))
        except Exception as e:
            record["error"] = f"{type(e).__name__}: {e}"
            raise
        record["response"] = as_json(value)
        return value

    @staticmethod
    def _call_mock(mock: Any, kind: str, request: Any, key: str | None, is_write: bool) -> Any:
        if not callable(mock):
            return copy.deepcopy(mock)
        if kind == "model":
            return mock(copy.deepcopy(request))
        args = copy.deepcopy(request) if isinstance(request, dict) else {}
        return mock(key, **args) if is_write else mock(**args)


def tokens_of(response: Any) -> int:
    """Tokens a model response says it used (``usage.total_tokens``, else input + output)."""
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return 0
    total = usage.get("total_tokens")
    if total is None:
        total = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
    return int(total)


def classify(
    tape: Tape, step: int, beyond: bool, call: dict[str, Any]
) -> tuple[str, TapeEntry | None]:
    """Look a call up on the tape (consuming its entry): the status, and the entry.

    ``beyond_original`` past the original's record, ``unrecorded`` for a call not found in
    a step the original died in, else the tape's ``matched`` / ``different_args`` /
    ``unexpected``. The child answers with it; the parent runs it again on the calls the
    child reports, so the comparison is the parent's own.
    """
    if beyond:
        return "beyond_original", None
    match = tape.match(step, call["kind"], call["name"], call["request"],
                       call["idempotency_key"])  # fmt: skip
    if match.status == "unexpected" and tape.is_partial(step):
        return "unrecorded", None
    return match.status, match.entry


def missing_divergences(tape: Tape, step: int) -> list[dict[str, Any]]:
    """Divergences for the original's calls of ``step`` never made (each reported once)."""
    found = []
    for entry in tape.by_step.get(step, []):
        if entry.used:
            continue
        entry.used = True
        what = "the write" if entry.is_write else f"the {entry.kind} call"
        key = f" (key {entry.idempotency_key})" if entry.idempotency_key else ""
        found.append({
            "step_index": step, "kind": "missing_call", "call": None,
            "original": entry.brief(),
            "message": f"step {step}: the original made {what} {entry.name}{key}; the replay "
                       f"did not",
        })  # fmt: skip
    return found


def divergence_for(call: dict[str, Any], match: Match) -> dict[str, Any]:
    """The divergence of a call the tape does not answer (unexpected, different args)."""
    step = call["step_index"]
    brief = {k: call[k] for k in ("seq", "kind", "name", "request", "idempotency_key",
                                  "is_write")}  # fmt: skip
    if match.status == "unexpected":
        message = (
            f"step {step}: {call['kind']} call {call['name']} "
            f"({preview(call['request'], 120)}) is not in the original"
        )
        original = None
    else:
        assert match.entry is not None
        original = match.entry.brief()
        message = (
            f"step {step}: {call['name']} called with different arguments "
            f"({preview(call['request'], 120)} instead of "
            f"{preview(match.entry.request, 120)})"
        )
    return {
        "step_index": step,
        "kind": "unexpected_call" if match.status == "unexpected" else "different_args",
        "message": message,
        "call": brief,
        "original": original,
    }
