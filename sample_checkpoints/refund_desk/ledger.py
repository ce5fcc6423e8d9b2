"""The payments ledger: the system of record the refund desk writes to.

A small SQLite file with orders, the refund policy (versioned by effective date), refunds
and the email outbox. Like many real payment APIs of its age, it *stores* idempotency keys
but does not enforce them: a client that sends the same key twice gets two refunds. Checking
a key first (``find_refund``) is the client's job, which is exactly what the original agent
forgets.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from debugger.runtime import Clock, ManualClock, Tool

TOOL_VERSIONS = {
    "lookup_order": "1.4.0",
    "check_refund_policy": "2.1.0",
    "find_refund": "3.0.2",
    "issue_refund": "3.0.2",
    "send_email": "1.1.0",
}
"""Versions of the ledger's tools as deployed in early March 2026."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS orders (order_id TEXT PRIMARY KEY, customer_email TEXT NOT NULL,"
    " item TEXT NOT NULL, category TEXT NOT NULL, total_cents INTEGER NOT NULL,"
    " delivered_on TEXT NOT NULL, status TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refund_policies (version TEXT PRIMARY KEY,"
    " effective_from TEXT NOT NULL, window_days INTEGER NOT NULL,"
    " approval_over_cents INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refunds (refund_id TEXT PRIMARY KEY, idempotency_key TEXT,"
    " order_id TEXT NOT NULL, amount_cents INTEGER NOT NULL, memo TEXT, created_at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS outbox (message_id TEXT PRIMARY KEY, idempotency_key TEXT,"
    " to_address TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,"
    " sent_at TEXT NOT NULL)",
)

LATENCY_MS = {
    "lookup_order": 140,
    "check_refund_policy": 95,
    "find_refund": 60,
    "issue_refund": 420,
    "send_email": 310,
}


class Ledger:
    """Access to the ledger file; its methods are the tools' implementations."""

    def __init__(self, path: str | Path, clock: Clock, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        self.clock = clock
        self.con = sqlite3.connect(self.path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=DELETE")
        self.con.execute(f"PRAGMA synchronous={'OFF' if synchronous == 'OFF' else 'FULL'}")
        for ddl in SCHEMA:
            self.con.execute(ddl)

    def close(self) -> None:
        """Close the file."""
        self.con.close()

    def _wait(self, tool: str) -> None:
        if isinstance(self.clock, ManualClock):
            self.clock.advance(LATENCY_MS[tool])

    def _one(self, sql: str, params: list[Any]) -> dict[str, Any] | None:
        cur = self.con.execute(sql, params)
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row, strict=True))

    # -- read tools -----------------------------------------------------------------------

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        """The order, or an error naming the unknown id."""
        self._wait("lookup_order")
        order = self._one("SELECT * FROM orders WHERE order_id = ?", [order_id])
        if order is None:
            raise LookupError(f"no order {order_id}")
        return order

    def check_refund_policy(self, category: str) -> dict[str, Any]:
        """The refund policy in effect today (by the clock) for the category."""
        self._wait("check_refund_policy")
        today = self.clock.now().date().isoformat()
        policy = self._one(
            "SELECT * FROM refund_policies WHERE effective_from <= ? "
            "ORDER BY effective_from DESC LIMIT 1",
            [today],
        )
        if policy is None:
            raise LookupError(f"no refund policy in effect on {today}")
        return {**policy, "category": category}

    def find_refund(self, idempotency_key: str) -> dict[str, Any] | None:
        """The refund recorded under this key, if any (the check the fixed agent makes)."""
        self._wait("find_refund")
        return self.refund_by_key(idempotency_key)

    # -- keyed writes ---------------------------------------------------------------------

    def issue_refund(
        self, idempotency_key: str, order_id: str, amount_cents: int, memo: str
    ) -> dict[str, Any]:
        """Pay a refund. The key is stored, not enforced (see the module docstring)."""
        self._wait("issue_refund")
        n = self.con.execute("SELECT count(*) FROM refunds").fetchone()[0]
        refund_id = f"RF-{n + 1:05d}"
        self.con.execute(
            "INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?)",
            [refund_id, idempotency_key, order_id, amount_cents, memo, self._now()],
        )
        return self._refund(refund_id)

    def send_email(self, idempotency_key: str, to: str, subject: str, body: str) -> dict[str, Any]:
        """Send (queue) an email. The key is stored, not enforced."""
        self._wait("send_email")
        n = self.con.execute("SELECT count(*) FROM outbox").fetchone()[0]
        message_id = f"MSG-{n + 1:05d}"
        self.con.execute(
            "INSERT INTO outbox VALUES (?, ?, ?, ?, ?, ?)",
            [message_id, idempotency_key, to, subject, body, self._now()],
        )
        return {
            "message_id": message_id,
            "idempotency_key": idempotency_key,
            "to": to,
            "status": "sent",
        }

    # -- lookups by key (what a correct resume asks) --------------------------------------

    def refund_by_key(self, key: str) -> dict[str, Any] | None:
        """The first refund stored under the key, as ``issue_refund`` returned it."""
        row = self.con.execute(
            "SELECT refund_id FROM refunds WHERE idempotency_key = ? ORDER BY refund_id LIMIT 1",
            [key],
        ).fetchone()
        return None if row is None else self._refund(row[0])

    def email_by_key(self, key: str) -> dict[str, Any] | None:
        """The first email sent under the key, as ``send_email`` returned it."""
        row = self._one(
            'SELECT message_id, idempotency_key, to_address AS "to" FROM outbox '
            "WHERE idempotency_key = ? ORDER BY message_id LIMIT 1",
            [key],
        )
        return None if row is None else {**row, "status": "sent"}

    def _refund(self, refund_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT refund_id, idempotency_key, order_id, amount_cents FROM refunds "
            "WHERE refund_id = ?",
            [refund_id],
        )
        assert row is not None
        return {**row, "status": "issued"}

    def _now(self) -> str:
        return self.clock.now().isoformat(timespec="milliseconds")

    def tools(self, versions: dict[str, str] | None = None) -> list[Tool]:
        """The ledger's tools for ``Runtime(tools=...)``, with their versions."""
        v = {**TOOL_VERSIONS, **(versions or {})}
        return [
            Tool("lookup_order", self.lookup_order, v["lookup_order"]),
            Tool("check_refund_policy", self.check_refund_policy, v["check_refund_policy"]),
            Tool("find_refund", self.find_refund, v["find_refund"]),
            Tool(
                "issue_refund",
                self.issue_refund,
                v["issue_refund"],
                write=True,
                lookup=self.refund_by_key,
            ),
            Tool(
                "send_email", self.send_email, v["send_email"], write=True, lookup=self.email_by_key
            ),
        ]
