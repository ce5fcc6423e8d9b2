"""The user's state-schema migrations: a registry, lazy migration on read, restart required.

A user names a plain Python module (``--migrations MODULE`` or the setting
``STEPSCOPE_MIGRATIONS``) holding ``CURRENT_VERSION = <int>`` and pure functions
``v1_to_v2(state) -> state``, ``v2_to_v3(state) -> state``, ... The module needs no Stepscope
import. Reading a checkpoint migrates its working state in memory along that chain; a version
with no path to ``CURRENT_VERSION`` is rejected with :class:`RestartRequired` rather than shown
as if it were current, because a misread state is worse than no state. Stored rows are history
and are never rewritten: migration happens on load only (docs/migrations.md).
"""

from __future__ import annotations

import copy
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import orjson

from debugger.errors import MigrationError
from debugger.model import Checkpoint

if TYPE_CHECKING:
    from debugger.store import Store

SETTING = "STEPSCOPE_MIGRATIONS"
"""Environment variable naming the default migrations module (``package.module``)."""

SETTINGS: tuple[tuple[str, str, str], ...] = (
    (SETTING, "", "Python module whose CURRENT_VERSION and vN_to_vM functions migrate states."),
)
"""Settings of this module as (name, default, help); docs/migrations.md documents each."""

_STEP_NAME = re.compile(r"^v(\d+)_to_v(\d+)$")
MigrateFn = Callable[[Any], Any]
Status = Literal["current", "migrated"]


class RestartRequired(MigrationError):
    """No migration path reaches the current version: the checkpoint cannot be resumed."""

    title = "Restart required"


class MigrationFailed(MigrationError):
    """A migration function raised (or returned a non-JSON value) on a checkpoint."""

    title = "Migration failed"


@dataclass(frozen=True)
class Registry:
    """The ordered steps of one migrations module."""

    module: str
    """Dotted name of the module the steps came from."""
    current_version: int
    """The schema version the agent's code reads and writes now."""
    steps: dict[int, MigrateFn] = field(default_factory=dict)
    """From-version to the function migrating one version up (``v1_to_v2`` is ``steps[1]``)."""

    def path(self, version: int | None) -> list[int]:
        """The versions a state passes through from ``version`` to current (inclusive).

        Raises:
            RestartRequired: no version, a version newer than current, or a missing step.
        """
        if version is None:
            raise RestartRequired(
                "the checkpoint has no schema version, so its state cannot be read safely",
                "restart the run; have the runtime record schema_version in every checkpoint",
            )
        if version > self.current_version:
            raise RestartRequired(
                f"schema version {version} is newer than {self.module}.CURRENT_VERSION "
                f"({self.current_version})",
                "point --migrations at the module of the code that wrote it",
            )
        path = [version]
        while path[-1] < self.current_version:
            if path[-1] not in self.steps:
                raise RestartRequired(
                    f"no migration from schema version {path[-1]} "
                    f"(needs {self.module}.v{path[-1]}_to_v{path[-1] + 1})",
                    "restart the run from its input, or add the missing migration",
                )
            path.append(path[-1] + 1)
        return path

    def reachable(self, version: int | None) -> bool:
        """Whether ``version`` can be migrated to the current version."""
        try:
            self.path(version)
        except RestartRequired:
            return False
        return True


@dataclass(frozen=True)
class MigratedState:
    """A checkpoint's stored working state beside the state the current code would read."""

    stored: Any
    """The working state as stored (never modified)."""
    migrated: Any
    """The state after the migrations (equal to ``stored`` when already current)."""
    path: list[int]
    """Versions passed through, from the stored version to the current one."""
    status: Status
    """``current`` (no migration needed) or ``migrated``."""


def registry_from_module(module: ModuleType) -> Registry:
    """Build a registry from an imported module.

    Raises:
        MigrationError: the module has no integer ``CURRENT_VERSION`` or a step that skips.
    """
    current = getattr(module, "CURRENT_VERSION", None)
    if not isinstance(current, int) or isinstance(current, bool):
        raise MigrationError(
            f"module {module.__name__} has no integer CURRENT_VERSION",
            "add CURRENT_VERSION = <int> to it (see docs/migrations.md)",
        )
    steps: dict[int, MigrateFn] = {}
    for name in dir(module):
        match = _STEP_NAME.match(name)
        if not match:
            continue
        src, dst = int(match.group(1)), int(match.group(2))
        if dst != src + 1:
            raise MigrationError(
                f"{module.__name__}.{name} skips a version",
                f"name each step vN_to_vN+1; split {name} into single steps",
            )
        fn = getattr(module, name)
        if callable(fn):
            steps[src] = fn
    return Registry(module=module.__name__, current_version=current, steps=steps)


def load_registry(module: str | None = None) -> Registry | None:
    """The registry of ``module``, else of ``$STEPSCOPE_MIGRATIONS``, else None.

    Raises:
        MigrationError: the module cannot be imported or is not a migrations module.
    """
    name = module or os.environ.get(SETTING) or None
    if not name:
        return None
    # Like `python -m`, look in the current directory too: console scripts leave it out of
    # sys.path, and a user's migrations usually live in their project, not in site-packages.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        mod = importlib.import_module(name)
    except ImportError as e:
        raise MigrationError(
            f"cannot import the migrations module {name!r}: {e}",
            "pass an importable dotted module name, e.g. "
            "--migrations sample_checkpoints.refund_desk.migrations",
        ) from e
    return registry_from_module(mod)


def migrate_state(state: Any, version: int | None, registry: Registry) -> tuple[Any, list[int]]:
    """Migrate a working state from ``version`` to the registry's current version.

    The input is deep-copied first, so a migration that mutates its argument cannot change
    what the caller holds (the stored state stays as stored).

    Returns:
        The migrated state and the versions it passed through.

    Raises:
        RestartRequired: no path from ``version``.
        MigrationFailed: a migration function raised or returned a non-JSON value.
    """
    path = registry.path(version)
    value = copy.deepcopy(state)
    for src in path[:-1]:
        name = f"{registry.module}.v{src}_to_v{src + 1}"
        try:
            value = registry.steps[src](value)
            orjson.dumps(value)  # a state must stay JSON, or it cannot be stored again
        except Exception as e:  # the user's code: any error is reported, never raised raw
            raise MigrationFailed(
                f"{name} failed: {type(e).__name__}: {e}",
                "fix the migration, then run `stepscope migrate --dry-run` again",
            ) from e
    return value, path


def migrated(checkpoint: Checkpoint, registry: Registry) -> MigratedState:
    """A checkpoint's state as the current code reads it, beside the stored state.

    Raises:
        RestartRequired: its schema version cannot reach the current one.
        MigrationFailed: a migration raised; the message names the checkpoint.
    """
    try:
        state, path = migrate_state(checkpoint.working_state, checkpoint.schema_version, registry)
    except MigrationError as e:
        where = f"{checkpoint.run_id} step {checkpoint.step_index} ({checkpoint.checkpoint_id})"
        raise type(e)(f"{e.message} on {where}", e.hint) from e
    status: Status = "current" if len(path) == 1 else "migrated"
    return MigratedState(checkpoint.working_state, state, path, status)


def iter_steps(registry: Registry) -> Iterator[tuple[int, str]]:
    """The registry's steps as (from-version, function name), in order."""
    for src in sorted(registry.steps):
        yield src, f"v{src}_to_v{src + 1}"


@dataclass(frozen=True)
class MigrationFailure:
    """One checkpoint a migration raised on."""

    run_id: str
    """The checkpoint's run."""
    checkpoint_id: str
    """The checkpoint."""
    step_index: int
    """Its step."""
    error: str
    """What the migration raised, in one line."""


@dataclass(frozen=True)
class VersionReport:
    """What a dry run found for the checkpoints of one stored schema version."""

    version: int | None
    """The stored schema version (None: checkpoints that carry none)."""
    checkpoints: int
    """Checkpoints stored with this version."""
    clean: int
    """Checkpoints that migrate to the current version without error (or are current)."""
    failed: int
    """Checkpoints a migration function raised on."""
    restart_required: int
    """Checkpoints with no migration path: their runs must restart."""
    path: list[int]
    """Versions passed through (empty when there is no path)."""
    reason: str | None
    """Why a restart is required, when it is."""
    failures: list[MigrationFailure]
    """The failing checkpoints (up to ``FAILURES_SHOWN``) with their errors."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class DryRunReport:
    """Per stored version: how many checkpoints migrate cleanly, fail, or need a restart."""

    module: str
    """The migrations module used."""
    current_version: int
    """Its CURRENT_VERSION."""
    total: int
    """Checkpoints examined (every stored checkpoint)."""
    versions: list[VersionReport]
    """One entry per stored version, oldest first (None last)."""

    @property
    def ok(self) -> bool:
        """True when every checkpoint migrates cleanly."""
        return all(v.failed == 0 and v.restart_required == 0 for v in self.versions)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "module": self.module,
            "current_version": self.current_version,
            "total": self.total,
            "ok": self.ok,
            "versions": [v.to_dict() for v in self.versions],
        }


FAILURES_SHOWN = 50
"""Failing checkpoints listed per version in a dry-run report (all are counted)."""


def stored_versions(store: Store) -> dict[int | None, int]:
    """Schema versions in the store with their checkpoint counts (None: no version)."""
    rows = store._con.execute(
        "SELECT schema_version, count(*) FROM checkpoints GROUP BY 1 ORDER BY 1 NULLS LAST"
    ).fetchall()
    return {(None if v is None else int(v)): int(n) for v, n in rows}


def dry_run(store: Store, registry: Registry) -> DryRunReport:
    """Migrate every stored checkpoint in memory and report per version; writes nothing.

    Current-version checkpoints need no work and are counted without loading their states;
    versions with no path are counted as restart required without loading them either; only
    the checkpoints a migration would really run on are read and migrated.
    """
    counts = stored_versions(store)
    versions = [_version_report(store, registry, v, n) for v, n in counts.items()]
    return DryRunReport(
        module=registry.module,
        current_version=registry.current_version,
        total=sum(counts.values()),
        versions=versions,
    )


def _version_report(store: Store, registry: Registry, version: int | None, n: int) -> VersionReport:
    try:
        path = registry.path(version)
    except RestartRequired as e:
        return VersionReport(version, n, 0, 0, n, [], e.message, [])
    if len(path) == 1:
        return VersionReport(version, n, n, 0, 0, path, None, [])
    failures: list[MigrationFailure] = []
    failed = 0
    for ckpt in _checkpoints_of_version(store, version):
        try:
            migrate_state(ckpt.working_state, version, registry)
        except MigrationFailed as e:
            failed += 1
            if len(failures) < FAILURES_SHOWN:
                failures.append(
                    MigrationFailure(ckpt.run_id, ckpt.checkpoint_id, ckpt.step_index, e.message)
                )
    return VersionReport(version, n, n - failed, failed, 0, path, None, failures)


def _checkpoints_of_version(store: Store, version: int | None) -> Iterator[Checkpoint]:
    runs = store._con.execute(
        "SELECT DISTINCT run_id FROM checkpoints WHERE schema_version = ? ORDER BY run_id",
        [version],
    ).fetchall()
    for (run_id,) in runs:
        for ckpt in store.checkpoints(run_id):
            if ckpt.schema_version == version:
                yield ckpt
