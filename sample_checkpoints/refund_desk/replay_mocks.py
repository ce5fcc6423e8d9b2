"""Mocks for replaying refund-desk runs in Stepscope's sandbox (``--mocks`` this module).

A replay answers calls from the original's tape; a step the original died in (the crash at
step 7) has no tape, so its calls need answers from here. They answer as the real tools
would, from the payments ledger opened read-only, and never write anything: ``find_refund``
reads the refund recorded under a key, ``issue_refund`` returns the refund the ledger *would*
create (its next id) without creating it. The model is the scripted model itself (a pure
function of the request).

The ledger is ``sample_checkpoints/data/ledger.sqlite`` unless ``$REFUND_DESK_LEDGER`` names
another copy.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from sample_checkpoints.refund_desk.model import answer


def _ledger() -> sqlite3.Connection:
    default = Path(__file__).resolve().parents[1] / "data" / "ledger.sqlite"
    path = Path(os.environ.get("REFUND_DESK_LEDGER") or default).resolve()
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _row(sql: str, params: list[Any]) -> dict[str, Any] | None:
    con = _ledger()
    try:
        cur = con.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))
    finally:
        con.close()


def model(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model's answer (with usage), exactly as at record time."""
    return answer(request)


def lookup_order(order_id: str) -> dict[str, Any]:
    """The order from the ledger."""
    order = _row("SELECT * FROM orders WHERE order_id = ?", [order_id])
    if order is None:
        raise LookupError(f"no order {order_id}")
    return order


def find_refund(idempotency_key: str) -> dict[str, Any] | None:
    """The refund the ledger holds under this key, if any."""
    row = _row(
        "SELECT refund_id, idempotency_key, order_id, amount_cents FROM refunds "
        "WHERE idempotency_key = ? ORDER BY refund_id LIMIT 1",
        [idempotency_key],
    )
    return None if row is None else {**row, "status": "issued"}


def issue_refund(key: str, order_id: str, amount_cents: int, memo: str) -> dict[str, Any]:
    """What the ledger would answer: a new refund (keys are stored, not enforced)."""
    count = _row("SELECT count(*) AS n FROM refunds", [])
    n = int(count["n"]) if count else 0
    return {"refund_id": f"RF-{n + 1:05d}", "idempotency_key": key, "order_id": order_id,
            "amount_cents": amount_cents, "status": "issued"}  # fmt: skip


def send_email(key: str, to: str, subject: str, body: str) -> dict[str, Any]:
    """What the outbox would answer for a new message."""
    count = _row("SELECT count(*) AS n FROM outbox", [])
    n = int(count["n"]) if count else 0
    return {"message_id": f"MSG-{n + 1:05d}", "idempotency_key": key, "to": to, "status": "sent"}
