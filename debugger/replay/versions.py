"""State-schema migration of the replay's starting checkpoint (and the states it is compared to).

The user's migrations module holds ``CURRENT_VERSION`` and ``vN_to_vN+1(state)`` functions.
It is named explicitly (``--migrations``) or found beside the agent: for
``pkg.agent:fixed_agent`` that is ``pkg.migrations`` when it exists. When the audit area's
``debugger.migrations`` is installed its ``migrate_state`` is used, so that replay and audit
agree on what "migratable" means (``registry_from_module`` + ``migrate_state``); otherwise
the chain is applied here the same way.
This runs inside the sandbox child, where the user's code belongs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from debugger.errors import MigrationError


def migrations_for(agent_spec: str, name: str | None) -> ModuleType | None:
    """The migrations module: the one named, else ``<agent's package>.migrations`` if any."""
    if name:
        return importlib.import_module(name)
    package = agent_spec.partition(":")[0].rpartition(".")[0]
    if not package:
        return None
    candidate = f"{package}.migrations"
    try:
        return importlib.import_module(candidate)
    except ModuleNotFoundError as e:
        if e.name != candidate:
            raise
        return None


def migrate_state(state: Any, version: int | None, module: ModuleType | None) -> Any:
    """Bring ``state`` from ``version`` to the module's CURRENT_VERSION.

    Raises:
        MigrationError: no path from ``version`` (restart required), or a newer version.
    """
    if module is None or version is None:
        return state
    current = int(module.CURRENT_VERSION)
    if version == current:
        return state
    shared = _shared_migrations()
    if shared is not None:
        migrated, _path = shared.migrate_state(state, version, shared.registry_from_module(module))
        return migrated
    if version > current:
        raise MigrationError(
            f"the checkpoint has state schema version {version}, newer than the agent's {current}",
            "replay it with the agent version that wrote it",
        )
    for v in range(version, current):
        step = getattr(module, f"v{v}_to_v{v + 1}", None)
        if step is None:
            raise MigrationError(
                f"no migration from state schema version {v} to {v + 1}: restart required",
                "start a new run instead of replaying this one",
            )
        state = step(state)
    return state


def _shared_migrations() -> Any:
    try:
        shared = importlib.import_module("debugger.migrations")
    except ModuleNotFoundError:
        return None
    needed = ("migrate_state", "registry_from_module")
    return shared if all(callable(getattr(shared, n, None)) for n in needed) else None
