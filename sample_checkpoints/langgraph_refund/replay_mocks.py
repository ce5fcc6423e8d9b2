"""Mocks for replaying the LangGraph refund desk (``--mocks`` this module).

The original died inside its refund (the gateway took the refund, then timed out), so that
call has no recorded answer; the fix's ``find_refund`` was never called by the original.
Both are answered here, from the payments ledger opened read-only; nothing is written.
"""

from __future__ import annotations

from typing import Any

from sample_checkpoints.langgraph_refund.graph import payments_path


def find_refund(idempotency_key: str) -> dict[str, Any] | None:
    """The refund the ledger holds under the key (read-only)."""
    import sqlite3

    con = sqlite3.connect(f"file:{payments_path()}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT refund_id, order_id, amount_cents FROM refunds "
                          "WHERE idempotency_key = ?", (idempotency_key,)).fetchone()  # fmt: skip
    finally:
        con.close()
    return None if row is None else {"refund_id": row[0], "order_id": row[1],
                                     "amount_cents": row[2]}  # fmt: skip


def issue_refund(order_id: str, amount_cents: int, idempotency_key: str) -> dict[str, Any]:
    """What the gateway would answer; the refund itself is never sent."""
    return {"refund_id": "RF-SANDBOX", "status": "issued"}
