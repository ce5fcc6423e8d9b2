"""The contract: the literal SQLite DDL agrees with the column list; the agent check."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from debugger import contract


@pytest.mark.parametrize("table", list(contract.NATIVE_COLUMNS))
def test_sqlite_ddl_declares_the_column_list(table: str) -> None:
    con = sqlite3.connect(":memory:")
    con.execute(contract.native_ddl(table))
    info = con.execute(f"PRAGMA table_info({table})").fetchall()
    declared = [(name, kind, bool(notnull)) for _, name, kind, notnull, _, _ in info]
    keys = tuple(name for _, name, _, _, _, pk in sorted(info, key=lambda r: r[5]) if pk)
    expected = [(c.name, c.sqlite, c.required) for c in contract.NATIVE_COLUMNS[table]]
    assert declared == expected
    assert keys == contract.NATIVE_KEYS[table]


@pytest.mark.parametrize("table", list(contract.NATIVE_COLUMNS))
def test_canonical_columns_are_the_native_ones_without_bookkeeping(table: str) -> None:
    canonical = tuple(c.name for c in contract.NATIVE_COLUMNS[table] if not c.bookkeeping)
    assert canonical == contract.TABLE_COLUMNS[table]
    con = sqlite3.connect(":memory:")
    con.execute(contract.native_ddl(table, constraints=False))
    assert [r[1] for r in con.execute(f"PRAGMA table_info({table})")] == list(canonical)


def test_postgres_ddl_types_every_column() -> None:
    ddl = contract.native_ddl("tool_calls", "postgres")
    assert ddl.startswith("CREATE TABLE tool_calls (run_id text NOT NULL,")
    assert "is_write boolean NOT NULL" in ddl and ddl.endswith("PRIMARY KEY (run_id, call_id));")
    with pytest.raises(ValueError, match="dialect"):
        contract.native_ddl("checkpoints", "duckdb")


def test_budget_limits_follow_the_budget_order() -> None:
    assert tuple(contract.BUDGET_LIMITS) == contract.BUDGETS
    assert contract.BUDGET_LIMITS["tokens_spent"] == "tokens"


class _Half:
    def step(self, state: Any, ctx: Any) -> Any:
        return state


def test_check_agent_names_what_is_missing() -> None:
    with pytest.raises(
        TypeError, match=r"^m:a is not an agent: it has no is_done\(state\) method$"
    ):
        contract.check_agent(_Half(), "m:a")
    with pytest.raises(TypeError, match=r"no step\(state, ctx\) and no is_done\(state\)"):
        contract.check_agent(object(), "m:b")
    agent = object.__new__(type("A", (_Half,), {"is_done": lambda self, s: True}))
    assert contract.check_agent(agent, "m:c") is agent
