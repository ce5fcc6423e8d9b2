"""State-schema migration of the replay's starting checkpoint (and the states it is compared to).

The user's migrations module holds ``CURRENT_VERSION`` and ``vN_to_vN+1(state)`` functions.
It is named explicitly (``--migrations``) or found beside the agent: for
``pkg.agent:fixed_agent`` that is ``pkg.migrations`` when it exists. The chain is applied by
``debugger.migrations`` (the same code the audit and ``stepscope migrate`` use), so replay and
audit agree on what "migratable" means.
This runs inside the sandbox child, where the user's code belongs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from debugger import migrations


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
    migrated, _path = migrations.migrate_state(
        state, version, migrations.registry_from_module(module)
    )
    return migrated
