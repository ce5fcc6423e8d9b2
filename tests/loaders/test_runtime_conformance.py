"""The loader contract on every runtime's own data (``RUNTIME_SOURCES``).

The same checks as the native conformance suite, on sources a runtime wrote: every row read
is imported, updated, already present or quarantined; a re-import adds nothing; a row the
flavour cannot read is quarantined with a reason and the rest still imports; a source grown
the way the runtime grows it adds only what is new, and ends where a fresh import of the
grown source ends; and no import writes to the source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.native import stepscope_json
from tests.fixtures.runtime_sources import RUNTIME_SOURCES, RuntimeSource
from tests.runtimes.conftest import digest

CASES = [pytest.param(name, id=name) for name in RUNTIME_SOURCES]


def do_import(source: Path, store: Path) -> dict[str, Any]:
    return stepscope_json("import", str(source), "--store", str(store))  # type: ignore[no-any-return]


def runs(store: Path) -> list[dict[str, Any]]:
    return stepscope_json("runs", "--store", str(store))["runs"]  # type: ignore[no-any-return]


def balanced(total: dict[str, int]) -> bool:
    parts = ("imported", "updated", "already_present", "quarantined")
    return total["read"] == sum(total[k] for k in parts)


@pytest.mark.parametrize("name", CASES)
def test_import_reimport_and_source_untouched(name: str, tmp_path: Path) -> None:
    kind: RuntimeSource = RUNTIME_SOURCES[name]
    source = kind.write(tmp_path / "src")
    before = digest(source)
    beside = sorted(p.name for p in source.parent.iterdir())  # no -wal, -shm or -journal
    store = tmp_path / "store.duckdb"
    first = do_import(source, store)
    assert first["flavour"] == kind.flavour
    total = first["total"]
    assert balanced(total) and total["imported"] == total["read"] > 0
    listed = runs(store)
    again = do_import(source, store)["total"]
    assert again == {"read": total["read"], "imported": 0, "updated": 0,
                     "already_present": total["read"], "quarantined": 0}  # fmt: skip
    assert runs(store) == listed
    assert digest(source) == before
    assert sorted(p.name for p in source.parent.iterdir()) == beside


@pytest.mark.parametrize("name", CASES)
def test_bad_row_is_quarantined_with_a_reason(name: str, tmp_path: Path) -> None:
    kind = RUNTIME_SOURCES[name]
    clean = do_import(kind.write(tmp_path / "clean"), tmp_path / "clean.duckdb")["total"]
    source = kind.write(tmp_path / "src")
    kind.corrupt(source)
    report = do_import(source, tmp_path / "store.duckdb")
    total = report["total"]
    assert total["quarantined"] == 1 and balanced(total)
    assert total["imported"] == clean["imported"]
    (reason,) = report["quarantine_reasons"]
    assert "JSON" in reason or "json" in reason


@pytest.mark.parametrize("name", CASES)
def test_grown_source_adds_only_what_is_new(name: str, tmp_path: Path) -> None:
    kind = RUNTIME_SOURCES[name]
    source = kind.write(tmp_path / "src")
    store = tmp_path / "store.duckdb"
    first = do_import(source, store)["total"]
    kind.grow(source)
    grown = do_import(source, store)["total"]
    assert balanced(grown) and grown["imported"] > 0 and grown["quarantined"] == 0
    assert grown["already_present"] + grown["updated"] == first["read"]
    fresh = tmp_path / "fresh.duckdb"
    do_import(source, fresh)
    assert runs(store) == runs(fresh)
