"""One Temporal workflow history mapped onto canonical rows.

A run is one workflow execution, ``<workflow id>/<run id>``. A step is one history event
(``step_index`` = ``eventId``): Temporal's own unit, which every tool that reads a history
numbers the same way, so step 11 here is event 11 in the Temporal UI. The working state at a
step is what the history says up to that event: the workflow's input, every activity (type,
input, status, attempt, result or failure), timers, signals received, child workflows,
markers, and the result or failure once closed. Workflow code's own variables are not in a
history and cannot be shown.

Activities are the effects: one ``effects`` row and one tape row each, keyed
``<workflow id>/<activity id>`` (Temporal dedups an activity by that pair within a run).
Completed is ``committed``; failed is ``failed``; timed out is ``unknown`` (the activity may
have done its work after the timeout: check by key, never repeat it blindly); scheduled
with no close event is ``pending`` (in flight). Pending and timed-out activities are the
checkpoint's pending effects. ``steps_spent`` is the history length (Temporal caps it);
Temporal records no tokens; the SDK version and the worker's build id are the run's
versions (``tool_versions``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from debugger.contract import GIVEN_STATE_HASH
from debugger.store import state_hash
from loaders.langgraph.decode import to_json
from loaders.runtime_rows import stable_key, tape_row
from loaders.temporal.decode import attributes, event_type, failure_text, payloads

CLOSED = {
    "COMPLETED": "committed",
    "FAILED": "failed",
    "TIMED_OUT": "unknown",
    "CANCELED": "failed",
}
"""Activity close events and the effect status each leaves."""
OPEN = ("pending", "unknown")
RUN_CLOSE = {"COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED", "CANCELED", "CONTINUED_AS_NEW"}


def _ms(a: str | None, b: str | None) -> int:
    try:
        x = datetime.fromisoformat(str(a).replace("Z", "+00:00")[:26] + "+00:00")
        y = datetime.fromisoformat(str(b).replace("Z", "+00:00")[:26] + "+00:00")
    except ValueError:
        return 0
    return max(0, int((y - x).total_seconds() * 1000))


def _iso(t: Any) -> str | None:
    """``eventTime`` to microseconds (it has nanoseconds, which ISO parsers refuse)."""
    if not isinstance(t, str) or "T" not in t:
        return None
    head, _, frac = t.rstrip("Z").partition(".")
    return f"{head}.{(frac + '000000')[:6]}+00:00"


def written_at(own: str | None, previous: str | None) -> str | None:
    """The time an event was written to its history: its ``eventTime``, or the previous
    event's when that is later.

    Event ids are a history's order, but the server stamps some events with an earlier
    time than the one before them: a signal, update or cancel request that arrives while a
    workflow task runs is held back and written after that task's completion with the time
    it arrived, and an activity's start is written with its completion, stamped when it
    started. Checkpoints are in ``created_at`` order, so taking ``eventTime`` as it is put
    those events before the ones written ahead of them (measured: a real dev server's
    history read as steps 1, 2, 3, 6, 4, 5). The event's own time stays in
    ``metadata.temporal.event_time``. Both are ``_iso`` text of one width, which orders
    as the times do.
    """
    if own is None or previous is None or own >= previous:
        return own if own is not None else previous
    return previous


class HistoryMap:
    """Walks one workflow history, event by event."""

    def __init__(self, workflow_id: str, run_id: str, events: list[dict[str, Any]]) -> None:
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.run = f"{workflow_id}/{run_id}"
        self.events = events
        self.state: dict[str, Any] = {
            "workflow": {},
            "activities": {},
            "timers": {},
            "signals": [],
            "children": {},
            "markers": [],
        }
        self.by_event: dict[str, tuple[str, str]] = {}
        """Scheduling event id -> (kind, id) of the activity, timer or child it started."""
        self.versions: dict[str, str] = {}
        self.first_time: str | None = None
        self.now: str | None = None
        self.closed: str | None = None
        self.effects: dict[str, dict[str, Any]] = {}
        self.tape: dict[str, dict[str, Any]] = {}
        self.last_task_done = False

    def key(self, activity_id: str) -> str:
        """An activity's idempotency key: the run's id and the activity's, the pair Temporal
        recommends (the same on every attempt, unique among executions: a workflow id is not,
        once a workflow continues as new or its id is used again, and activity ids restart)."""
        return f"{self.run_id}/{activity_id}"

    def rows(self) -> list[dict[str, Any]]:
        """One checkpoint row an event; the last carries the run's status."""
        out: list[dict[str, Any]] = []
        parent: str | None = None
        for event in self.events:
            row = self._row(event, parent)
            parent = row["checkpoint_id"]
            out.append(row)
        if out:
            md = {**out[-1]["_md"], **self._status()}
            out[-1]["_md"] = md
        for row in out:
            row["metadata"] = to_json(row.pop("_md"))
        return out

    def _row(self, event: dict[str, Any], parent: str | None) -> dict[str, Any]:
        eid = str(event.get("eventId"))
        kind = event_type(event)
        attrs = attributes(event)
        own = _iso(event.get("eventTime"))
        when = written_at(own, self.now)
        if self.first_time is None:
            self.first_time = when
        self.now = when
        md: dict[str, Any] = {
            "agent": self.state["workflow"].get("type"),
            "event_type": kind,
            "temporal": {"workflow_id": self.workflow_id, "event_id": eid},
        }
        if own != when:
            md["temporal"]["event_time"] = own
        self._apply(kind, attrs, eid, md)
        text = to_json(self.state)
        step = int(eid) if eid.isdigit() else None
        return {
            "_key": stable_key(self.run, eid),
            "run_id": self.run,
            "checkpoint_id": f"event-{eid}",
            "parent_id": parent,
            "step_index": step,
            "schema_version": None,
            "created_at": when,
            "working_state": text,
            GIVEN_STATE_HASH: state_hash.of_text(text),
            "tokens_spent": 0,
            "steps_spent": step,
            "wall_clock_ms": _ms(self.first_time, when),
            "pending_effects": to_json(self._pending()),
            "model_version": None,
            "tool_versions": to_json(self.versions) if self.versions else None,
            "_md": md,
        }

    def _apply(self, kind: str, a: dict[str, Any], eid: str, md: dict[str, Any]) -> None:
        """Fold one event into the state (and note what the checkpoint's metadata shows)."""
        if kind == "WORKFLOW_EXECUTION_STARTED":
            self.state["workflow"] = {
                "type": (a.get("workflowType") or {}).get("name"),
                "input": payloads(a.get("input")),
                "task_queue": (a.get("taskQueue") or {}).get("name"),
                "attempt": a.get("attempt"),
                "parent": a.get("parentWorkflowExecution"),
            }
            if a.get("continuedExecutionRunId"):  # the run this one continued (as new)
                self.state["workflow"]["continued_from"] = a["continuedExecutionRunId"]
            md["agent"] = self.state["workflow"]["type"]
        elif kind.startswith("ACTIVITY_TASK_"):
            self._activity(kind.removeprefix("ACTIVITY_TASK_"), a, eid)
        elif kind.startswith("WORKFLOW_TASK_"):
            self._workflow_task(kind.removeprefix("WORKFLOW_TASK_"), a, md)
        elif kind.startswith("TIMER_"):
            tid = str(a.get("timerId"))
            status = kind.removeprefix("TIMER_").lower()
            timer = self.state["timers"].setdefault(tid, {})
            timer["status"] = status
            if status == "started":
                timer["duration"] = a.get("startToFireTimeout")
        elif kind in ("WORKFLOW_EXECUTION_SIGNALED", "WORKFLOW_EXECUTION_UPDATE_ACCEPTED"):
            # a signal or an accepted update: the input a person (or system) sent the workflow
            asked = ((a.get("acceptedRequest") or {}).get("input")) or {}
            signal = {
                "name": a.get("signalName") or asked.get("name"),
                "input": payloads(a.get("input") or asked.get("args")),
                "event_id": int(eid),
                "identity": a.get("identity"),
            }
            if asked:
                signal["kind"] = "update"
            self.state["signals"].append(signal)
            md["signal"] = signal
        elif kind == "WORKFLOW_EXECUTION_CANCEL_REQUESTED":
            self.state["workflow"]["cancel_requested"] = {"event_id": int(eid),
                                                          "cause": a.get("cause")}  # fmt: skip
        elif "CHILD_WORKFLOW_EXECUTION" in kind:
            self._child(kind, a, eid)
        elif kind == "MARKER_RECORDED":
            self.state["markers"].append({"name": a.get("markerName"), "event_id": int(eid)})
        elif (
            kind.startswith("WORKFLOW_EXECUTION_")
            and kind.removeprefix("WORKFLOW_EXECUTION_") in RUN_CLOSE
        ):
            self._close(kind.removeprefix("WORKFLOW_EXECUTION_"), a, md)

    def _activity(self, what: str, a: dict[str, Any], eid: str) -> None:
        acts = self.state["activities"]
        if what == "SCHEDULED":
            aid = str(a.get("activityId"))
            self.by_event[eid] = ("activity", aid)
            acts[aid] = {
                "type": (a.get("activityType") or {}).get("name"),
                "input": payloads(a.get("input")),
                "status": "scheduled",
                "attempt": 0,
                "scheduled_event": int(eid),
                "start_to_close": a.get("startToCloseTimeout"),
                "max_attempts": (a.get("retryPolicy") or {}).get("maximumAttempts"),
            }
            self._effect(aid, int(eid))
            return
        ref = self.by_event.get(str(a.get("scheduledEventId")))
        if ref is None:
            return
        act = acts[ref[1]]
        act["status"] = what.lower()
        if what == "STARTED":
            act["attempt"] = a.get("attempt", 1)
            if a.get("lastFailure"):
                act["last_failure"] = failure_text(a.get("lastFailure"))
        elif what == "COMPLETED":
            act["result"] = payloads(a.get("result"))
        elif what in ("FAILED", "TIMED_OUT"):
            act["failure"] = failure_text(a.get("failure"))
            act["retry_state"] = a.get("retryState")
        elif what == "CANCELED":
            act["status"] = "canceled" if act.get("attempt") else "canceled_before_start"
        if what in CLOSED:
            self._settle(ref[1], int(eid), act)

    def _effect(self, aid: str, step: int) -> None:
        act = self.state["activities"][aid]
        key = self.key(aid)
        self.effects[aid] = {
            "_key": stable_key(self.run, "effect", aid),
            "run_id": self.run,
            "effect_id": f"{self.run}/{aid}",
            "step_index": step,
            "idempotency_key": key,
            "tool": act["type"],
            "args": to_json(act["input"]),
            "status": "pending",
            "result": None,
            "created_at": self.now,
        }
        self.tape[aid] = tape_row(
            self.run,
            f"activity:{aid}",
            step,
            len(self.tape),
            key=stable_key(self.run, "activity", aid),
            kind="tool",
            name=act["type"],
            request=to_json(act["input"]),
            idempotency_key=key,
        )

    def _settle(self, aid: str, step: int, act: dict[str, Any]) -> None:
        status = (
            CLOSED[act["status"].upper()] if act["status"] != "canceled_before_start" else "failed"
        )
        if act["status"] == "canceled":
            status = "unknown"  # cancelled after it started: it may have done its work
        outcome = (
            act.get("result")
            if "result" in act
            else {"failure": act.get("failure"), "status": act["status"]}
        )
        self.effects[aid].update(status=status, result=to_json(outcome))
        self.tape[aid].update(
            step_index=step, response=to_json(act.get("result")), error=act.get("failure")
        )

    def _workflow_task(self, what: str, a: dict[str, Any], md: dict[str, Any]) -> None:
        self.last_task_done = what == "COMPLETED"
        if what != "COMPLETED":
            return
        sdk = a.get("sdkMetadata") or {}
        if sdk.get("sdkVersion"):
            self.versions["sdk"] = f"{sdk.get('sdkName')}/{sdk['sdkVersion']}"
        build = (a.get("workerVersion") or {}).get("buildId") or (
            a.get("deploymentVersion") or {}
        ).get("buildId")
        if build:
            self.versions["build_id"] = str(build)

    def _child(self, kind: str, a: dict[str, Any], eid: str) -> None:
        if kind == "START_CHILD_WORKFLOW_EXECUTION_INITIATED":
            wid = str(a.get("workflowId"))
            self.by_event[eid] = ("child", wid)
            self.state["children"][wid] = {
                "type": (a.get("workflowType") or {}).get("name"),
                "input": payloads(a.get("input")),
                "status": "initiated",
            }
            return
        ref = self.by_event.get(str(a.get("initiatedEventId")))
        if ref is None:
            return
        child = self.state["children"][ref[1]]
        child["status"] = (
            kind.removeprefix("CHILD_WORKFLOW_EXECUTION_")
            .removeprefix("START_CHILD_WORKFLOW_EXECUTION_")
            .lower()
        )
        run_id = (a.get("workflowExecution") or {}).get("runId")
        if run_id:
            child["run_id"] = run_id
        if "result" in a:
            child["result"] = payloads(a.get("result"))
        if a.get("failure"):
            child["failure"] = failure_text(a.get("failure"))

    def _close(self, what: str, a: dict[str, Any], md: dict[str, Any]) -> None:
        self.closed = what
        wf = self.state["workflow"]
        if what == "COMPLETED":
            wf["result"] = payloads(a.get("result"))
        elif what == "CONTINUED_AS_NEW":
            wf["continued_as"] = a.get("newExecutionRunId")
        else:
            wf["failure"] = failure_text(a.get("failure")) or a.get("reason") or what.lower()
            cause = (a.get("failure") or {}).get("activityFailureInfo") or {}
            if str(cause.get("scheduledEventId", "")).isdigit():
                # the failure is that activity's: resolving its key is the fix (the audit)
                md["failed_step"] = int(cause["scheduledEventId"])
        wf["closed"] = what.lower()

    def _pending(self) -> list[dict[str, Any]]:
        out = []
        for aid, e in self.effects.items():
            if e["status"] in OPEN:
                act = self.state["activities"][aid]
                out.append(
                    {
                        "kind": "activity",
                        "tool": act["type"],
                        "args": act["input"],
                        "activity_id": aid,
                        "idempotency_key": e["idempotency_key"],
                        "attempt": act.get("attempt"),
                        "step_index": e["step_index"],
                        "status": e["status"],
                    }
                )
        return out

    def _in_flight(self) -> list[str]:
        acts = [
            f"activity {a['type']} (id {aid}, scheduled at event {a['scheduled_event']})"
            for aid, a in self.state["activities"].items()
            if a["status"] in ("scheduled", "started")
        ]
        timers = [f"timer {t}" for t, v in self.state["timers"].items() if v["status"] == "started"]
        kids = [
            f"child workflow {w}"
            for w, c in self.state["children"].items()
            if c["status"] in ("initiated", "started")
        ]
        return acts + timers + kids

    def _status(self) -> dict[str, Any]:
        """The head's status: closed as the close event says, else running or waiting."""
        wf = self.state["workflow"]
        if self.closed in ("COMPLETED", "CONTINUED_AS_NEW"):
            how = "continued as a new run" if self.closed == "CONTINUED_AS_NEW" else "completed"
            return {"status": "completed", "status_reason": f"the workflow {how}"}
        if self.closed:
            err = f"workflow {self.closed.lower().replace('_', ' ')}: {wf.get('failure')}"
            return {"status": "failed", "error": err, "status_reason": err}
        busy = self._in_flight()
        if busy:
            return {
                "status": "in_progress",
                "status_reason": "running (no close event): " + "; ".join(busy),
            }
        if not self.last_task_done:
            return {
                "status": "in_progress",
                "status_reason": "running (no close event): a workflow task is due",
            }
        reason = (
            "waiting for a signal or an update: nothing is in flight after its last "
            "workflow task, and there is no close event"
        )
        return {
            "status": "parked",
            "status_reason": reason,
            "awaiting_approval": True,
            "interrupt": {"reason": reason},
        }

    def effect_rows(self) -> list[dict[str, Any]]:
        return list(self.effects.values())

    def tape_rows(self) -> list[dict[str, Any]]:
        return list(self.tape.values())
