"""Where a runtime's fixtures come from: the committed files, or a fresh run of its generator.

Each runtime under ``tests/runtimes/<rt>/`` has a ``generate.py`` that writes its fixtures
with the real package (in a venv of its own, never Stepscope's environment), the files it
wrote committed beside it in ``data/``, and the tests run on those. With
``STEPSCOPE_<RT>_PYTHON`` naming a Python that has the runtime installed (e.g.
``STEPSCOPE_OPENAI_AGENTS_PYTHON=/work/venvs/oai/bin/python``), the tests marked for that
runtime also regenerate the files into a temporary directory and run the same checks on
them, so a new version of the runtime is checked against the loader, not only the files
an older version wrote. Without it those cases skip with the reason.

The variables are read when this module is imported, before the suite's autouse fixture
clears ``STEPSCOPE_*`` from every test's environment.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

RUNTIMES_DIR = Path(__file__).resolve().parent
REGENERATE_TIMEOUT_S = 240

PYTHONS: dict[str, str | None] = {
    rt: os.environ.get(f"STEPSCOPE_{rt.upper()}_PYTHON")
    for rt in ("openai_agents", "pydantic_ai", "crewai")
}
"""The Python of each runtime's venv, from ``STEPSCOPE_<RT>_PYTHON`` (None when unset)."""


def committed(rt: str) -> Path:
    """The committed fixture directory of a runtime."""
    return RUNTIMES_DIR / rt / "data"


def regenerated(rt: str, out: Path) -> Path:
    """Run the runtime's generator with its venv's Python into ``out``; skip without one.

    Raises:
        AssertionError: the generator failed (its output is in the message).
    """
    python = PYTHONS.get(rt)
    if not python:
        pytest.skip(f"set STEPSCOPE_{rt.upper()}_PYTHON to a Python with the runtime installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
    done = subprocess.run(
        [python, str(RUNTIMES_DIR / rt / "generate.py"), str(out)],
        capture_output=True, text=True, timeout=REGENERATE_TIMEOUT_S, env=env, cwd=out.parent,
    )  # fmt: skip
    assert done.returncode == 0, f"{rt} generator failed:\n{done.stdout}\n{done.stderr}"
    return out


def data_dir(rt: str, which: str, tmp: Path) -> Path:
    """The committed fixtures (``which == "committed"``) or freshly generated ones."""
    return committed(rt) if which == "committed" else regenerated(rt, tmp / "generated")


def sources(rt: str) -> list[object]:
    """The two parameters of a runtime's data fixture, the regenerated one marked ``rt``."""
    mark = getattr(pytest.mark, rt)
    return [pytest.param("committed"), pytest.param("regenerated", marks=mark)]
