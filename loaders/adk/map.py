"""One ADK session mapped onto canonical rows: a checkpoint an event, its tape, its status.

A session is a run (``app/user/session``); each event is a step, in the order ADK reloads
them. The working state is rebuilt event by event from ``actions.state_delta`` (what ADK
itself applies to the session's state), starting from the keys of the stored state that no
event ever wrote (set when the session was created). ``app:`` and ``user:`` keys are shared
between sessions: the ones this session's events wrote take those values; the others are
the current values of ``app_states`` / ``user_states``. ``temp:`` keys are never stored.

Tokens are the running sum of ``usage_metadata.total_token_count``; the model version is the
latest ``model_version`` seen. A ``function_call`` part and the ``function_response`` with
the same id are one tool call on the tape. ADK stores a tool's exception, or a model's
error, as an event with ``error_code`` and ``error_message`` and no content: when calls of
the same invocation are still unanswered the error is theirs (a tool error), otherwise the
model's. A tool that needs confirmation answers "requires confirmation" and ADK asks for it
through a synthetic ``adk_request_confirmation`` call (a long-running call): while that call
is unanswered the run is parked on it, and the tool's first answer is not its result.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from debugger.contract import GIVEN_STATE_HASH
from debugger.json_text import preview
from debugger.store import state_hash
from loaders.adk.source import RawEvent, RawSession
from loaders.langgraph.decode import to_json
from loaders.langgraph.map import key_in
from loaders.runtime_rows import quarantined, stable_key, tape_row

CONFIRM = "adk_request_confirmation"
SHARED = ("app:", "user:")


def _load(raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(raw, dict | list):
        return raw
    return orjson.loads(raw)


def _iso(ts: Any) -> str | None:
    if isinstance(ts, int | float):
        return datetime.fromtimestamp(ts, UTC).isoformat()
    return None


def run_id_of(s: RawSession) -> str:
    """``app/user/session``: a session id is unique only within its app and user."""
    return f"{s.app_name}/{s.user_id}/{s.session_id}"


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def _is_model_call(event: dict[str, Any]) -> bool:
    content = event.get("content")
    role = content.get("role") if isinstance(content, dict) else None
    return bool(event.get("usage_metadata") or event.get("model_version")) or (
        role == "model"
        and not any((p.get("function_call") or {}).get("name") == CONFIRM for p in _parts(event))
    )


class SessionMap:
    """Walks one session's events, producing checkpoint, tape and quarantine rows."""

    def __init__(
        self,
        s: RawSession,
        app_state: Any,
        user_state: Any,
        db_schema_version: str | None,
        names: tuple[str, ...],
    ) -> None:
        self.s = s
        self.run = run_id_of(s)
        self.names = names
        self.db_schema_version = db_schema_version
        self.events: list[tuple[RawEvent, dict[str, Any] | None, str | None]] = []
        for raw in s.events:
            self.events.append((raw, *self._decode(raw)))
        self.state = self._initial(app_state, user_state)
        self.tokens = 0
        self.model: str | None = None
        self.first_ts: float | None = None
        self.calls: dict[str, dict[str, Any]] = {}
        """Tape rows by call id (tool calls) or ``model:<event id>``."""
        self.open: dict[str, dict[str, Any]] = {}
        """Tool calls not answered yet, by call id, with the step that asked."""
        self.confirming: dict[str, dict[str, Any]] = {}
        """Open confirmation requests by the request call's id: the call they hold back."""

    @staticmethod
    def _decode(raw: RawEvent) -> tuple[dict[str, Any] | None, str | None]:
        if raw.unreadable:
            return None, raw.unreadable
        try:
            event = _load(raw.event_data)
        except (orjson.JSONDecodeError, TypeError) as e:
            return None, f"event_data is not JSON ({e})"
        if not isinstance(event, dict):
            return None, "event_data is not a JSON object"
        return event, None

    def _initial(self, app_state: Any, user_state: Any) -> dict[str, Any]:
        written: set[str] = set()
        for _, event, _ in self.events:
            actions = (event or {}).get("actions")
            delta = actions.get("state_delta") if isinstance(actions, dict) else None
            written.update(delta or {})
        state: dict[str, Any] = {}
        for prefix, raw in (("", self.s.state), ("app:", app_state), ("user:", user_state)):
            try:
                values = _load(raw) or {}
            except orjson.JSONDecodeError:
                values = {}
            for k, v in values.items() if isinstance(values, dict) else ():
                if prefix + k not in written:
                    state[prefix + k] = v
        return state

    def rows(self) -> list[dict[str, Any]]:
        """The session's checkpoint rows (quarantined ones carry ``_reason``)."""
        out: list[dict[str, Any]] = []
        parent: str | None = None
        step = 0
        for raw, event, reason in self.events:
            key = stable_key(self.run, str(raw.event_id))
            if event is None:
                text = raw.event_data if isinstance(raw.event_data, str) else repr(raw.event_data)
                out.append(quarantined(key, self.run, str(reason), preview(text, 2000)))
                continue
            out.append({"_key": key, **self._row(raw, event, step, parent)})
            parent = str(raw.event_id)
            step += 1
        if out and "_reason" not in out[-1]:
            out[-1]["metadata"] = to_json({**orjson.loads(out[-1]["metadata"]), **self._status()})
        return out

    def empty_row(self) -> dict[str, Any]:
        """A session with no event yet: one checkpoint holding its stored state."""
        text = to_json(self.state)
        md = {
            "agent": self.s.app_name,
            "adk": {
                "app_name": self.s.app_name,
                "user_id": self.s.user_id,
                "session_id": self.s.session_id,
                "db_schema_version": self.db_schema_version,
            },
        }
        return {
            "_key": stable_key(self.run, ""),
            "run_id": self.run,
            "checkpoint_id": f"session:{self.s.session_id}",
            "parent_id": None,
            "step_index": 0,
            "schema_version": None,
            "created_at": self.s.create_time,
            "working_state": text,
            GIVEN_STATE_HASH: state_hash.of_text(text),
            "tokens_spent": 0,
            "steps_spent": 0,
            "wall_clock_ms": 0,
            "pending_effects": b"[]",
            "model_version": None,
            "tool_versions": None,
            "metadata": to_json(md),
        }

    def _row(
        self, raw: RawEvent, event: dict[str, Any], step: int, parent: str | None
    ) -> dict[str, Any]:
        ts = event.get("timestamp")
        ts = ts if isinstance(ts, int | float) else None
        if self.first_ts is None:
            self.first_ts = ts
        found = event.get("actions")
        actions: dict[str, Any] = found if isinstance(found, dict) else {}
        delta = actions.get("state_delta") or {}
        if isinstance(delta, dict):
            self.state.update({k: v for k, v in delta.items() if not k.startswith("temp:")})
        usage = event.get("usage_metadata") or {}
        self.tokens += int(usage.get("total_token_count") or 0) or int(
            (usage.get("prompt_token_count") or 0) + (usage.get("candidates_token_count") or 0)
        )
        self.model = event.get("model_version") or self.model
        error = self._tape(event, step, actions)
        text = to_json(self.state)
        md: dict[str, Any] = {
            "agent": self.s.app_name,
            "author": event.get("author"),
            "adk": {
                "app_name": self.s.app_name,
                "user_id": self.s.user_id,
                "session_id": self.s.session_id,
                "event_id": str(raw.event_id),
                "invocation_id": event.get("invocation_id"),
                "branch": event.get("branch"),
                "db_schema_version": self.db_schema_version,
            },
        }
        if error:
            md["error"] = error
        wall = 0 if ts is None or self.first_ts is None else int((ts - self.first_ts) * 1000)
        return {
            "run_id": self.run,
            "checkpoint_id": str(raw.event_id),
            "parent_id": parent,
            "step_index": step,
            "schema_version": self._int("schema_version"),
            "created_at": _iso(ts) or (str(raw.timestamp) if raw.timestamp else None),
            "working_state": text,
            GIVEN_STATE_HASH: state_hash.of_text(text),
            "tokens_spent": self.tokens,
            "steps_spent": step,
            "wall_clock_ms": max(0, wall),
            "pending_effects": to_json(self._pending()),
            "model_version": self.model,
            "tool_versions": self._tool_versions(),
            "metadata": to_json(md),
        }

    def _int(self, key: str) -> int | None:
        v = self.state.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def _tool_versions(self) -> bytes | None:
        """``tool_versions`` (or ``app:tool_versions``) of the state: ADK has no place of its
        own for them (docs/adk.md)."""
        v = self.state.get("tool_versions", self.state.get("app:tool_versions"))
        return to_json(v) if isinstance(v, dict) and v else None

    def _add(self, call_id: str, step: int, **fields: Any) -> dict[str, Any]:
        row = tape_row(self.run, call_id, step, len(self.calls), **fields)
        self.calls[call_id] = row
        return row

    def _tape(self, event: dict[str, Any], step: int, actions: dict[str, Any]) -> str | None:
        """Note the event's calls and answers; the error it records, if any."""
        eid = str(event.get("id"))
        if event.get("author") != "user" and _is_model_call(event):
            content = event.get("content")
            shown = {"content": content, "usage": event.get("usage_metadata")}
            self._add(
                f"model:{eid}",
                step,
                kind="model",
                name=event.get("model_version") or self.model or "model",
                error=None,
                response=to_json(shown),
                request=to_json({"invocation_id": event.get("invocation_id")}),
            )
        held = actions.get("requested_tool_confirmations") or {}
        for p in _parts(event):
            if (fc := p.get("function_call")) is not None:
                self._call(fc, step, event.get("invocation_id"))
            if (fr := p.get("function_response")) is not None:
                self._answer(fr, step, held)
        code = event.get("error_code")
        if not code:
            return None
        error = f"{code}: {event.get('error_message') or ''}".rstrip(": ")
        asked = [c for c in self.open.values() if c["invocation"] == event.get("invocation_id")]
        if asked:
            for c in asked:
                self.calls[c["id"]].update(error=error, step_index=step)
                del self.open[c["id"]]
        else:  # the model's: an error event has no content, so no model row yet
            row = self.calls.get(f"model:{eid}") or self._add(
                f"model:{eid}",
                step,
                kind="model",
                name=self.model or "model",
                response=None,
                request=to_json({"invocation_id": event.get("invocation_id")}),
            )
            row["error"] = error
        return error

    def _call(self, fc: dict[str, Any], step: int, invocation: Any) -> None:
        cid = str(fc.get("id") or f"{fc.get('name')}@{step}")
        args = fc.get("args")
        self._add(
            cid,
            step,
            kind="tool",
            name=str(fc.get("name")),
            request=to_json(args),
            idempotency_key=key_in(args, self.names),
        )
        call = {
            "id": cid,
            "tool": fc.get("name"),
            "args": args,
            "step": step,
            "invocation": invocation,
        }
        if fc.get("name") == CONFIRM and isinstance(args, dict):
            held = args.get("originalFunctionCall") or {}
            self.confirming[cid] = {
                "tool": held.get("name"),
                "args": held.get("args"),
                "call_id": held.get("id"),
                "request_id": cid,
                "hint": (args.get("toolConfirmation") or {}).get("hint"),
            }
        self.open[cid] = call

    def _answer(self, fr: dict[str, Any], step: int, held: dict[str, Any]) -> None:
        cid = str(fr.get("id"))
        if cid in held:
            return  # "requires confirmation": the call waits, it did not run
        row = self.calls.get(cid)
        if row is None:
            return
        response = fr.get("response")
        row.update(response=to_json(response), step_index=step)
        self.open.pop(cid, None)
        self.confirming.pop(cid, None)

    def _pending(self) -> list[dict[str, Any]]:
        out = []
        waiting = {c["call_id"] for c in self.confirming.values()}
        for c in self.open.values():
            if c["tool"] == CONFIRM:
                continue
            held = c["id"] in waiting
            status = "awaiting_confirmation" if held else "unknown"
            out.append(
                {
                    "kind": "held_tool_call" if held else "tool_call",
                    "tool": c["tool"],
                    "args": c["args"],
                    "tool_call_id": c["id"],
                    "step_index": c["step"],
                    "idempotency_key": key_in(c["args"], self.names),
                    "status": status,
                }
            )
        return out

    def _status(self) -> dict[str, Any]:
        """The head's status fields, from what the session's last event left open."""
        last: dict[str, Any] = next((e for _, e, _ in reversed(self.events) if e), {})
        if last.get("error_code"):
            err = f"{last['error_code']}: {last.get('error_message') or ''}".rstrip(": ")
            return {"status": "failed", "status_reason": f"the last event records {err}"}
        if self.confirming:
            c = next(iter(self.confirming.values()))
            args = preview(c["args"], 80)
            return {
                "status": "parked",
                "interrupt": {**c, "reason": c["hint"]},
                "status_reason": f"{c['tool']}({args}) waits for a tool confirmation "
                f"(answer {CONFIRM} call {c['request_id']})",
            }
        long = set(last.get("long_running_tool_ids") or []) & set(self.open)
        if long:
            name = self.open[sorted(long)[0]]["tool"]
            return {
                "status": "parked",
                "awaiting_approval": True,
                "status_reason": f"the long-running tool {name} waits for its result",
            }
        if self.open:
            return {}
        if last.get("author") not in (None, "user") and not last.get("partial"):
            parts = _parts(last)
            if any(p.get("text") for p in parts):
                return {"status": "completed", "status_reason": "the agent's final response"}
        return {}

    def tape_rows(self) -> list[dict[str, Any]]:
        """The session's tool and model calls in the order they were first asked."""
        return list(self.calls.values())
