"""A package attribute loaded from a module of the package on first use.

A runtime's flavour package (ADK, OpenAI Agents, CrewAI) names its flavour class at the top
level, but importing the class imports the whole mapping, and the registry asks a light
detection module first whether a source is that runtime's at all: a native import then
loads none of them (see :mod:`loaders.registry`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any


def lazy_attributes(package: str, module: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that loads ``names`` from ``module``.

    Each attribute is imported on its first access and then kept in the package, so later
    accesses do not come back here; any other name is an ``AttributeError`` as usual.
    """
    known = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in known:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
