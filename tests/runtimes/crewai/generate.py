"""Write the CrewAI fixtures with the real package: flows persisted by ``@persist``.

Run with a Python that has ``crewai`` (not the project's environment)::

    /work/venvs/crewai/bin/python tests/runtimes/crewai/generate.py [OUT_DIR]

OUT_DIR defaults to ``data/`` beside this file. It writes ``flows.sqlite`` through
``SQLiteFlowPersistence`` (no model, no network: flows need none), with four flows, each
started with ``kickoff(inputs={"id": ...})`` so that their ids are stable:

- ``refund-ok``: three methods, each persisted after it completed;
- ``charge-fails``: the second method raises ``ConnectionError``: only the first is saved;
- ``review-waiting``: a ``@human_feedback`` method whose provider raises
  ``HumanFeedbackPending``: the flow pauses, a ``pending_feedback`` row waits;
- ``review-resumed``: the same pause, then ``Flow.from_pending(...).resume("approved")``.

``expected.json`` is what CrewAI's own API says: ``load_state`` and
``load_pending_feedback`` of each flow, the methods the flow ran (from the flow's state),
and the exception of the failing flow.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai.flow.flow import Flow, listen, start
from crewai.flow.persistence import SQLiteFlowPersistence, persist
from pydantic import BaseModel

try:  # human feedback that pauses a flow: CrewAI 1.x
    from crewai.flow.async_feedback.types import HumanFeedbackPending
    from crewai.flow.human_feedback import human_feedback

    FEEDBACK = True
except ImportError:  # CrewAI 0.x: the two flows that pause are not written
    FEEDBACK = False


class OrderState(BaseModel):
    id: str = ""
    order_id: str = ""
    amount: float = 0.0
    ran: list[str] = []
    decision: str = ""


class AsyncReviewer:
    """A feedback provider that hands the question to a person later (it pauses the flow)."""

    def request_feedback(self, context: Any, flow: Flow[Any]) -> str:
        raise HumanFeedbackPending(context=context)


def flows(persistence: SQLiteFlowPersistence) -> tuple[Any, ...]:
    @persist(persistence)
    class RefundFlow(Flow[OrderState]):
        @start()
        def load_order(self) -> None:
            self.state.order_id = "A-17"
            self.state.ran.append("load_order")

        @listen(load_order)
        def price_refund(self) -> None:
            self.state.amount = 42.5
            self.state.ran.append("price_refund")

        @listen(price_refund)
        def notify(self) -> str:
            self.state.ran.append("notify")
            return "refunded"

    @persist(persistence)
    class ChargeFlow(Flow[OrderState]):
        @start()
        def load_order(self) -> None:
            self.state.order_id = "B-2"
            self.state.ran.append("load_order")

        @listen(load_order)
        def charge(self) -> None:
            raise ConnectionError("payment API down")

    if not FEEDBACK:
        return RefundFlow, ChargeFlow, None

    @persist(persistence)
    class ReviewFlow(Flow[OrderState]):
        @start()
        def draft(self) -> str:
            self.state.order_id, self.state.amount = "C-9", 42.5
            self.state.ran.append("draft")
            return "refund 42.5 on C-9?"

        @listen(draft)
        @human_feedback(message="Approve the refund of 42.5 on C-9?", provider=AsyncReviewer())
        def review(self) -> str:
            self.state.ran.append("review")
            return "refund 42.5 on C-9"

        @listen(review)
        def apply(self, result: Any) -> None:
            self.state.ran.append("apply")
            self.state.decision = str(getattr(result, "feedback", result))

    return RefundFlow, ChargeFlow, ReviewFlow


def api_view(p: SQLiteFlowPersistence, flow_id: str, **extra: Any) -> dict[str, Any]:
    pending = p.load_pending_feedback(flow_id) if FEEDBACK else None
    ctx = pending[1] if pending else None
    return {
        "state": p.load_state(flow_id),
        "pending": None
        if ctx is None
        else {"method": ctx.method_name, "message": ctx.message, "output": ctx.method_output},
        **extra,
    }


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    p = SQLiteFlowPersistence(str(out / "flows.sqlite"))
    refund, charge, review = flows(p)
    seen: dict[str, Any] = {}

    f = refund()
    f.kickoff(inputs={"id": "refund-ok"})
    seen["refund-ok"] = api_view(p, "refund-ok", ran=f.state.ran)

    f = charge()
    try:
        f.kickoff(inputs={"id": "charge-fails"})
    except ConnectionError as e:
        seen["charge-fails"] = api_view(p, "charge-fails", ran=f.state.ran, error=str(e))

    if review is None:
        (out / "expected.json").write_text(json.dumps(seen, indent=1, sort_keys=True,
                                                      default=str) + "\n")  # fmt: skip
        return
    f = review()
    paused = f.kickoff(inputs={"id": "review-waiting"})
    assert isinstance(paused, HumanFeedbackPending)
    seen["review-waiting"] = api_view(p, "review-waiting", ran=f.state.ran)

    f = review()
    f.kickoff(inputs={"id": "review-resumed"})
    resumed = review.from_pending("review-resumed", p)
    resumed.resume("approved")
    seen["review-resumed"] = api_view(p, "review-resumed", ran=resumed.state.ran)

    text = json.dumps(seen, indent=1, sort_keys=True, default=str)
    (out / "expected.json").write_text(text + "\n")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here / "data")
