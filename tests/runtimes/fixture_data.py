"""Where a runtime's fixtures come from in its tests: the committed files, or a fresh run
of its generator.

A runtime's data fixture is parametrised over both (:func:`sources`): ``committed`` runs on
``tests/runtimes/<rt>/data``, written by the real package and committed; ``regenerated``,
marked with the runtime's name, runs ``generate.py`` with the runtime's Python into a
temporary directory first (:func:`tests.runtimes.conftest.regenerate`: it skips without one,
see ``STEPSCOPE_<RT>_PYTHON``), so the same checks run on what the installed version of the
package writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runtimes.conftest import regenerate

RUNTIMES_DIR = Path(__file__).resolve().parent


def data_dir(rt: str, which: str, tmp: Path) -> Path:
    """The committed fixtures (``which == "committed"``) or freshly generated ones."""
    if which == "committed":
        return RUNTIMES_DIR / rt / "data"
    out = tmp / "generated"
    regenerate(rt, RUNTIMES_DIR / rt / "generate.py", out)
    return out


def sources(rt: str) -> list[Any]:
    """The two parameters of a runtime's data fixture, the regenerated one marked ``rt``."""
    return [pytest.param("committed"), pytest.param("regenerated", marks=getattr(pytest.mark, rt))]
