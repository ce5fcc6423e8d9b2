"""Shared helpers of the runtime flavours' tests (ADK, Temporal, OpenAI Agents, pydantic-ai,
CrewAI).

Each runtime's fixtures were written by the real package (``generate.py`` beside them) and
are committed, so these tests need no runtime installed. The tests marked with a runtime's
name regenerate the fixtures with the real package and run the same checks on them: they
need a Python that has the package, named by ``STEPSCOPE_<RUNTIME>_PYTHON``
(``STEPSCOPE_ADK_PYTHON``, ``STEPSCOPE_TEMPORAL_PYTHON``, ``STEPSCOPE_OPENAI_AGENTS_PYTHON``,
``STEPSCOPE_PYDANTIC_AI_PYTHON``, ``STEPSCOPE_CREWAI_PYTHON``, and for older versions
``STEPSCOPE_ADK_1_PYTHON`` (ADK 1.15), ``STEPSCOPE_ADK_1_39_PYTHON`` and
``STEPSCOPE_PYDANTIC_AI_0_4_PYTHON``: ``.ci/run`` builds those venvs, pinned, and sets them;
see each runtime's docs page), else the running Python if it can import the package (not
for an older version); otherwise they are skipped.
The variables are read here, at collection, before the autouse fixture clears ``STEPSCOPE_*``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.store_snapshot import digest, do_import, store_tables

__all__ = ["digest", "do_import", "regenerate", "runtime_python", "store_tables"]

RUNTIME_PYTHON = {
    "adk": os.environ.get("STEPSCOPE_ADK_PYTHON"),
    "adk_1": os.environ.get("STEPSCOPE_ADK_1_PYTHON"),
    "adk_1_39": os.environ.get("STEPSCOPE_ADK_1_39_PYTHON"),
    "pydantic_ai_0_4": os.environ.get("STEPSCOPE_PYDANTIC_AI_0_4_PYTHON"),
    "temporal": os.environ.get("STEPSCOPE_TEMPORAL_PYTHON"),
    "openai_agents": os.environ.get("STEPSCOPE_OPENAI_AGENTS_PYTHON"),
    "pydantic_ai": os.environ.get("STEPSCOPE_PYDANTIC_AI_PYTHON"),
    "crewai": os.environ.get("STEPSCOPE_CREWAI_PYTHON"),
}
"""The Python with each runtime's package, as the environment named it."""
MODULE = {"adk": "google.adk", "adk_1": "google.adk", "adk_1_39": "google.adk",
          "temporal": "temporalio",
          "openai_agents": "agents.memory", "pydantic_ai": "pydantic_ai",
          "pydantic_ai_0_4": "pydantic_ai",
          "crewai": "crewai.flow"}  # fmt: skip


DOCS = {"adk_1": "adk", "adk_1_39": "adk", "pydantic_ai_0_4": "pydantic-ai"}
"""The docs page of a runtime whose name is not its page's (an older version's)."""


def runtime_python(runtime: str) -> str | None:
    """A Python that can import the runtime's package, or None."""
    named = RUNTIME_PYTHON[runtime]
    if named or runtime in DOCS:  # an older version: never the running Python's
        return named
    try:
        found = importlib.util.find_spec(MODULE[runtime]) is not None
    except ModuleNotFoundError:
        found = False
    return sys.executable if found else None


def regenerate(runtime: str, script: Path, out: Path, *args: str) -> None:
    """Run a generator with the runtime's Python into ``out`` (skip when there is none)."""
    python = runtime_python(runtime)
    if python is None:
        pytest.skip(
            f"no Python with {MODULE[runtime]}: set STEPSCOPE_{runtime.upper()}_PYTHON "
            f"(see docs/{DOCS.get(runtime, runtime.replace('_', '-'))}.md)"
        )
    done = subprocess.run(
        [python, str(script), str(out), *args], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-4000:]
