"""The source ``data/store_v4.duckdb.gz`` was imported from (tests/store/test_store_v5.py).

Two imports: :func:`first_source` (a message-heavy run, a run sharing half its messages, a
large state with no parts, a state with parts written with spaces), then
:func:`second_source` (a run that repeats messages of the first import's runs between its
own, so its parts lie in two stretches of ``state_parts``, and one whose messages come in
the reverse of the order they were written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from tests.fixtures.native import native_rows, write_native_sqlite

MSG = "lorem ipsum dolor sit amet " * 12


def messages(ids: list[int], prefix: str = "m") -> list[dict[str, Any]]:
    """Messages ``<prefix><i>`` of ~330 characters each (parts of a split state)."""
    return [{"id": f"{prefix}{i}", "content": f"{prefix}{i} {MSG}"} for i in ids]


def _state(msgs: list[dict[str, Any]], step: int) -> str:
    return orjson.dumps({"messages": msgs, "step": step}).decode()


def first_source(path: Path) -> Path:
    """run-0 grows by two messages a step; run-1 shares run-0's first ten and adds its own;
    run-2 holds a 40 KB state with no parts at step 3 and one written with spaces at 2."""
    rows = native_rows(runs=3, steps=6)
    for r in rows:
        run = int(r["run_id"].split("-")[1])
        s = r["step_index"]
        if run == 0:
            r["working_state"] = _state(messages(list(range(20 + 2 * s))), s)
        elif run == 1:
            r["working_state"] = _state(messages(list(range(10))) + messages(
                list(range(20 + s)), "b"), s)  # fmt: skip
        elif s == 3:
            r["working_state"] = '{"big": "' + "x" * 40_000 + '"}'
        elif s == 2:
            r["working_state"] = json.dumps({"messages": messages(list(range(150)), "w")})
    return write_native_sqlite(path, rows)


def second_source(path: Path) -> Path:
    """run-3: its own messages with run-0's first five in the middle; run-4: its own messages,
    reversed at its last step."""
    rows = [r for r in native_rows(runs=5, steps=4) if r["run_id"] in ("run-3", "run-4")]
    for r in rows:
        s = r["step_index"]
        if r["run_id"] == "run-3":
            msgs = messages(list(range(15)), "c") + messages(list(range(5))) + messages(
                list(range(15, 30 + s)), "c")  # fmt: skip
        else:
            ids = list(range(40))
            msgs = messages(ids[::-1] if s == 3 else ids, "d")
        r["working_state"] = _state(msgs, s)
    return write_native_sqlite(path, rows)
