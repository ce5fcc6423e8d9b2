"""Small agents for the replay tests (importable as ``tests.replay.agents:NAME``).

``ledger_agent`` follows the replay protocol: each step reads a price, asks the model, and at
step 3 pays with a keyed write. The others misbehave on purpose: one changes an argument, one
opens a socket, one never ends, one sleeps forever, one eats memory.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from typing import Any


class LedgerAgent:
    """Counts to ``goal``; pays once at step 3 (``pay-<order>``)."""

    name = "ledger-agent"
    schema_version = 1

    def __init__(self, price_arg: str = "item", skip_pay: bool = False) -> None:
        self.price_arg = price_arg
        self.skip_pay = skip_pay

    def is_done(self, state: dict[str, Any]) -> bool:
        return bool(state["n"] >= state["goal"])

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        n = state["n"] + 1
        price = ctx.tool("price", **{self.price_arg: f"sku-{n}"})
        answer = ctx.model({"model": "scripted", "prompt": f"step {n} price {price['amount']}"})
        state["log"].append(answer["text"])
        state["total"] += price["amount"]
        if n == 3 and not self.skip_pay:
            paid = ctx.effect("pay", f"pay-{state['order']}", amount=state["total"])
            state["receipt"] = paid["receipt"]
        state["n"] = n
        return state


ledger_agent = LedgerAgent()
renamed_arg_agent = LedgerAgent(price_arg="sku")
no_pay_agent = LedgerAgent(skip_pay=True)


class NetworkAgent(LedgerAgent):
    """Tries to reach a server (port in ``$REPLAY_TEST_PORT``) before its normal step."""

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        port = int(os.environ["REPLAY_TEST_PORT"])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(b"hello")
        except OSError as e:
            state.setdefault("errors", []).append(type(e).__name__)
        raw = socket.socket()
        try:
            raw.connect(("127.0.0.1", port))
        except OSError as e:
            state.setdefault("errors", []).append(type(e).__name__)
        finally:
            raw.close()
        return super().step(state, ctx)


class EndlessAgent(LedgerAgent):
    """Never done, and never calls anything: only the step limit stops it."""

    def is_done(self, state: dict[str, Any]) -> bool:
        return False

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        state["n"] += 1
        return state


class SleeperAgent(LedgerAgent):
    """Hangs inside its first step: only the wall-clock limit stops it."""

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        while True:
            time.sleep(0.05)


class HungryAgent(LedgerAgent):
    """Allocates without bound: the memory limit stops it."""

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))


class FileWriterAgent(LedgerAgent):
    """Writes the file named in ``$REPLAY_TEST_PATH`` (outside its output directory), directly
    and through a subprocess."""

    def step(self, state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        try:
            with open(os.environ["REPLAY_TEST_PATH"], "w") as f:
                f.write("escaped")
        except OSError as e:
            state.setdefault("errors", []).append(type(e).__name__)
        try:  # a process would escape every guard: refused too
            subprocess.run(["touch", os.environ["REPLAY_TEST_PATH"]], check=False)
        except OSError as e:
            state.setdefault("errors", []).append(type(e).__name__)
        return super().step(state, ctx)


network_agent = NetworkAgent()
endless_agent = EndlessAgent()
sleeper_agent = SleeperAgent()
hungry_agent = HungryAgent()
file_writer_agent = FileWriterAgent()
