"""``Store.run_page``: the Runs page's list, filtered, ordered and cut in SQL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from debugger.store import Store
from debugger.store.run_reads import RUN_ORDERS


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Store:
    from debugger.cli.demo import build_demo_store

    path = tmp_path_factory.mktemp("page") / "demo.duckdb"
    build_demo_store(path)
    return Store.open(Path(path), read_only=True)


def _ids(store: Store, **query: object) -> list[str]:
    return [r.run_id for r in store.run_page(**query).runs]


def test_pages_cut_the_same_order_the_whole_list_has(sample: Store) -> None:
    everything = sample.run_records()
    for order in RUN_ORDERS:
        whole = _ids(sample, order=order, limit=1000)
        assert sorted(whole) == sorted(r.run_id for r in everything)
        pages = [_ids(sample, order=order, offset=o, limit=5) for o in range(0, 15, 5)]
        assert [i for p in pages for i in p] == whole


def test_orders_put_what_they_say_first(sample: Store) -> None:
    by_id = {r.run_id: r for r in sample.run_records()}
    attention = [by_id[i].status for i in _ids(sample, order="attention", limit=100)]
    needing = {"failed", "crashed", "parked", "budget_exhausted"}
    flags = [s in needing for s in attention]
    assert flags == sorted(flags, reverse=True) and any(flags)
    tokens = [by_id[i].budgets.tokens_spent for i in _ids(sample, order="tokens", limit=100)]
    assert tokens == sorted(tokens, reverse=True)
    newest = [by_id[i].last_at for i in _ids(sample, order="newest", limit=100)]
    assert newest == sorted(newest, reverse=True)
    assert _ids(sample, order="run_id", limit=100) == sorted(by_id)


def test_filters_and_counts(sample: Store) -> None:
    everything = sample.run_page(limit=0)
    assert everything.runs == [] and everything.total == len(sample.run_records())
    assert everything.by_status["crashed"] == 2
    crashed = sample.run_page(status="crashed,parked")
    assert crashed.total == 3 and set(crashed.by_status) == {"crashed", "parked"}
    assert _ids(sample, text="ToolTimeout") == ["tool-timeout"]
    cut = datetime(2026, 3, 3)
    early = sample.run_page(until=cut, limit=100).runs
    assert early and all(r.last_at is None or r.last_at <= cut for r in early)
    assert sample.run_agents() == sorted({r.agent for r in sample.run_records() if r.agent})


def test_an_unknown_order_is_one_clear_error(sample: Store) -> None:
    with pytest.raises(ValueError, match="unknown order 'fastest': use one of attention"):
        sample.run_page(order="fastest")
