"""Stepscope's state diff against plain DeepDiff, on 10 KB to 10 MB states with a few changes.

Both states are parsed from JSON text (as the store hands them over: no shared objects), the
new one with five edits of the kinds a step makes: a value changed deep inside, a message
appended, a key removed, a number retyped (int -> float), a field added to a list item.
For each size the script checks that ``diff_states`` returns exactly plain DeepDiff's rows,
and reports medians of both, their ratio, and what ``orjson.loads`` of one state costs.

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

SIZES = {"10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000, "10 MB": 10_000_000}
REPEATS = {"10 KB": 25, "100 KB": 15, "1 MB": 7, "10 MB": 3}
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


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench(label: str, target: int, repeats: int) -> dict[str, Any]:
    text_old = orjson.dumps(make_state(target))
    text_new = orjson.dumps(edit(orjson.loads(text_old)))
    old, new = orjson.loads(text_old), orjson.loads(text_new)
    ours, plain = diff_states(old, new), plain_deepdiff_rows(old, new)
    if repr(ours) != repr(plain):
        raise SystemExit(f"{label}: diff_states differs from plain DeepDiff:\n{ours}\n{plain}")
    t_ours = median_ms(lambda: diff_states(old, new), repeats)
    t_plain = median_ms(lambda: plain_deepdiff_rows(old, new), max(1, min(repeats, 5)))
    t_parse = median_ms(lambda: orjson.loads(text_new), repeats)
    return {"size": label, "bytes": len(text_old), "rows": len(ours), "plain": t_plain,
            "ours": t_ours, "ratio": t_plain / t_ours, "parse": t_parse}  # fmt: skip


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
    print(f"load average {load:.1f} on {os.cpu_count()} cores; medians; results identical\n")
    print("| state | JSON bytes | rows | plain DeepDiff ms | Stepscope ms | speed-up | "
          "orjson.loads ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['size']} | {r['bytes']:,} | {r['rows']} | {r['plain']:.1f} | "
              f"{r['ours']:.2f} | {r['ratio']:.0f}x | {r['parse']:.2f} |")  # fmt: skip
    at_1mb = next(r for r in results if r["size"] == "1 MB")
    verdict = "met" if at_1mb["ratio"] >= TARGET_RATIO_AT_1MB else "NOT met"
    print(f"\ntarget >= {TARGET_RATIO_AT_1MB:.0f}x at 1 MB: {verdict} ({at_1mb['ratio']:.0f}x)")


if __name__ == "__main__":
    main()
