"""Stepscope's state diff against plain DeepDiff, on 10 KB to 10 MB states with a few changes.

Both states are parsed from JSON text (as the store hands them over: no shared objects), the
new one with five edits of the kinds a step makes: a value changed deep inside, a message
appended, a key removed, a number retyped (int -> float), a field added to a list item.
For each size the script checks that ``diff_states`` returns exactly plain DeepDiff's rows,
and reports medians of both, their ratio, and what ``orjson.loads`` of one state costs.
It also times ``diff_texts`` on the two JSON texts (what the Timeline does: only the
branches whose texts differ are parsed), whose rows are checked the same way.

    python benchmarks/diff_bench.py            # 10 KB, 100 KB, 1 MB, 10 MB
    python benchmarks/diff_bench.py --quick    # 10 KB, 100 KB, 1 MB, fewer repeats
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from debugger.diff import diff_states, plain_deepdiff_rows
from debugger.diff.text import diff_texts

SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
REPEATS = {"10 KB": 25, "100 KB": 15, "1 MB": 9, "10 MB": 3}
TARGET_RATIO_AT_1MB = 20.0


def make_state(target_bytes: int, seed: int = 7) -> dict[str, Any]:
    """An agent working state of about ``target_bytes`` of JSON: messages, orders, notes."""
    rnd = random.Random(seed)
    state: dict[str, Any] = {
        "run": {"ticket": "T-1042", "customer": "C-77", "step": 7, "updated_at": "2026-11-01"},
        "messages": [],
        "orders": {},
        "notes": [],
    }
    i = 0
    while len(orjson.dumps(state)) < target_bytes:
        for _ in range(max(1, target_bytes // 20_000)):
            state["messages"].append(_message(rnd, i))
            state["orders"][f"A-{i:06d}"] = _order(rnd, i)
            state["notes"].append(f"note {i}: {rnd.random():.6f}")
            i += 1
    return state


def _message(rnd: random.Random, i: int) -> dict[str, Any]:
    return {
        "role": rnd.choice(["user", "assistant", "tool"]),
        "content": " ".join(
            rnd.choice(["refund", "order", "late", "ok", "check"]) for _ in range(12)
        ),
        "ts": f"2026-11-01T10:{i % 60:02d}:{(i * 7) % 60:02d}Z",
        "usage": {"input_tokens": rnd.randint(10, 900), "output_tokens": rnd.randint(5, 300)},
    }


def _order(rnd: random.Random, i: int) -> dict[str, Any]:
    return {
        "amount": rnd.randint(100, 99_999),
        "currency": "EUR",
        "items": [{"sku": f"S{rnd.randint(1, 999)}", "qty": rnd.randint(1, 4)} for _ in range(3)],
        "flags": {"refundable": rnd.random() > 0.2, "priority": rnd.randint(0, 3)},
    }


def edit(state: dict[str, Any]) -> dict[str, Any]:
    """A few changes, as one agent step makes them."""
    orders = state["orders"]
    keys = list(orders)
    middle = keys[len(keys) // 2]
    orders[middle]["flags"]["refundable"] = not orders[middle]["flags"]["refundable"]
    orders[keys[-1]]["amount"] = float(orders[keys[-1]]["amount"])  # int -> float
    state["messages"].append({"role": "assistant", "content": "refund issued", "ts": "later",
                              "usage": {"input_tokens": 1, "output_tokens": 1}})  # fmt: skip
    state["messages"][len(state["messages"]) // 3]["usage"]["cached"] = True
    del state["run"]["updated_at"]
    return state


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run once: (result, wall ms, CPU ms of this process)."""
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return result, (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


def bench(label: str, target: int, repeats: int) -> dict[str, Any]:
    """Time both diffs, interleaved so both see the same machine load; check them identical."""
    text_old = orjson.dumps(make_state(target))
    text_new = orjson.dumps(edit(orjson.loads(text_old)))
    old, new = orjson.loads(text_old), orjson.loads(text_new)
    ours: dict[str, list[float]] = {"wall": [], "cpu": []}
    texts: dict[str, list[float]] = {"wall": [], "cpu": []}
    plain: dict[str, list[float]] = {"wall": [], "cpu": []}
    plain_repeats = max(1, min(repeats, 5))
    for i in range(repeats):
        rows, wall, cpu = timed(lambda: diff_states(old, new))
        ours["wall"].append(wall)
        ours["cpu"].append(cpu)
        from_texts, wall, cpu = timed(lambda: diff_texts(text_old, text_new))
        texts["wall"].append(wall)
        texts["cpu"].append(cpu)
        if i < plain_repeats:
            reference, wall, cpu = timed(lambda: plain_deepdiff_rows(old, new))
            plain["wall"].append(wall)
            plain["cpu"].append(cpu)
            if repr(rows) != repr(reference):
                raise SystemExit(f"{label}: diff_states differs from plain DeepDiff")
            if repr(from_texts) != repr(reference):
                raise SystemExit(f"{label}: diff_texts differs from plain DeepDiff")
    parse = [timed(lambda: orjson.loads(text_new))[2] for _ in range(repeats)]
    med = statistics.median
    return {"size": label, "bytes": len(text_old), "rows": len(rows),
            "plain": med(plain["wall"]), "ours": med(ours["wall"]),
            "plain_cpu": med(plain["cpu"]), "ours_cpu": med(ours["cpu"]),
            "texts": med(texts["wall"]), "texts_cpu": med(texts["cpu"]),
            "parse": med(parse)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip 10 MB, fewer repeats")
    args = parser.parse_args()
    sizes = {k: v for k, v in SIZES.items() if not (args.quick and k == "10 MB")}
    results = []
    for label, target in sizes.items():
        repeats = max(3, REPEATS[label] // 3) if args.quick else REPEATS[label]
        results.append(bench(label, target, repeats))
        print(f"  {label} done", file=sys.stderr)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} cores; medians; every result checked "
          "identical to plain DeepDiff\n")  # fmt: skip
    print("| state | JSON bytes | rows | plain DeepDiff ms (CPU) | Stepscope ms (CPU) | "
          "speed-up wall (CPU) | orjson.loads CPU ms | from the texts ms (CPU) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['size']} | {r['bytes']:,} | {r['rows']} | {r['plain']:,.1f} "
              f"({r['plain_cpu']:,.1f}) | {r['ours']:,.2f} ({r['ours_cpu']:,.2f}) | "
              f"{r['plain'] / r['ours']:,.0f}x ({r['plain_cpu'] / max(r['ours_cpu'], 1e-3):,.0f}x) "
              f"| {r['parse']:.2f} | {r['texts']:,.2f} ({r['texts_cpu']:,.2f}) |")  # fmt: skip
    at_1mb = next(r for r in results if r["size"] == "1 MB")
    ratio = at_1mb["plain_cpu"] / max(at_1mb["ours_cpu"], 1e-3)
    verdict = "met" if ratio >= TARGET_RATIO_AT_1MB else "NOT met"
    print(f"\ntarget >= {TARGET_RATIO_AT_1MB:.0f}x at 1 MB (CPU time): {verdict} ({ratio:.0f}x)")


if __name__ == "__main__":
    main()
