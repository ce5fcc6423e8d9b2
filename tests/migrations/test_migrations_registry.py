"""The registry of a user's migrations: lazy migration on read, and restart required."""

from __future__ import annotations

import types

import pytest

from debugger.errors import MigrationError
from debugger.migrations import (
    MigrationFailed,
    RestartRequired,
    load_registry,
    migrate_state,
    migrated,
    registry_from_module,
)
from debugger.model import Budgets, Checkpoint
from tests.fixtures.audit import MIGRATIONS


def _ckpt(version: int | None, state: object) -> Checkpoint:
    return Checkpoint("r", "c1", None, 4, version, None, state, "", 0, Budgets(0, 0, 0), [],
                      "m", {}, {})  # fmt: skip


def test_module_functions_form_the_registry() -> None:
    registry = load_registry(MIGRATIONS)
    assert registry is not None
    assert (registry.current_version, sorted(registry.steps)) == (3, [1, 2])
    assert registry.path(1) == [1, 2, 3] and registry.path(3) == [3]


def test_setting_names_the_default_module(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_registry() is None
    monkeypatch.setenv("STEPSCOPE_MIGRATIONS", MIGRATIONS)
    registry = load_registry()
    assert registry is not None and registry.module == MIGRATIONS


def test_v1_state_migrates_lazily_and_the_stored_state_is_untouched() -> None:
    stored = {"order_id": "A-17", "amount": 20}
    result = migrated(_ckpt(1, stored), load_registry(MIGRATIONS))  # type: ignore[arg-type]
    assert result.migrated == {"order": {"id": "A-17"}, "amount": 20, "currency": "EUR"}
    assert (result.path, result.status) == ([1, 2, 3], "migrated")
    assert result.stored == {"order_id": "A-17", "amount": 20} and result.stored is stored


def test_current_state_is_returned_as_is() -> None:
    result = migrated(_ckpt(3, {"a": 1}), load_registry(MIGRATIONS))  # type: ignore[arg-type]
    assert (result.status, result.path, result.migrated) == ("current", [3], {"a": 1})


@pytest.mark.parametrize(
    ("version", "words"),
    [(0, "no migration from schema version 0"), (None, "no schema version"),
     (7, "newer than")],
)  # fmt: skip
def test_a_version_without_path_is_rejected_as_restart_required(
    version: int | None, words: str
) -> None:
    with pytest.raises(RestartRequired, match=words) as info:
        migrated(_ckpt(version, {"a": 1}), load_registry(MIGRATIONS))  # type: ignore[arg-type]
    assert isinstance(info.value, MigrationError)
    assert "Hint:" in str(info.value) and "\n" not in str(info.value)


def test_a_raising_migration_names_the_checkpoint() -> None:
    with pytest.raises(MigrationFailed, match=r"v1_to_v2 failed: KeyError.*r step 4 \(c1\)"):
        migrated(_ckpt(1, {"amount": 5}), load_registry(MIGRATIONS))  # type: ignore[arg-type]


def test_a_migration_returning_non_json_fails() -> None:
    mod = types.ModuleType("nonjson")
    mod.CURRENT_VERSION = 2  # type: ignore[attr-defined]
    mod.v1_to_v2 = lambda s: {"when": object()}  # type: ignore[attr-defined]
    with pytest.raises(MigrationFailed, match="v1_to_v2 failed: TypeError"):
        migrate_state({}, 1, registry_from_module(mod))


@pytest.mark.parametrize(
    ("module", "words"),
    [("tests.migrations.registry_broken", "skips a version"),
     ("tests.migrations.nowhere", "cannot import"),
     ("tests.fixtures", "no integer CURRENT_VERSION")],
)  # fmt: skip
def test_bad_modules_are_rejected_with_a_hint(module: str, words: str) -> None:
    with pytest.raises(MigrationError, match=words):
        load_registry(module)
