"""Shared test set-up.

Fixture modules in ``tests/fixtures/`` are loaded as plugins, so each area keeps its
fixtures in its own file. An autouse fixture keeps a developer's own ``STEPSCOPE_*``
variables and working directory out of every test.

One switch rewrites every committed expected file (audit and replay snapshots):
``pytest --update-snapshots`` or ``STEPSCOPE_UPDATE_SNAPSHOTS=1 pytest``; the screenshots in
docs/ come from ``python docs/screenshots.py``. It is read here once, before the autouse
fixture clears ``STEPSCOPE_*``, and tests ask for it through the ``update_snapshots`` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = sorted(
    f"tests.fixtures.{p.stem}"
    for p in (Path(__file__).parent / "fixtures").glob("*.py")
    if p.stem != "__init__"
)

REPO = Path(__file__).resolve().parent.parent
UPDATE_SNAPSHOTS_ENV = "STEPSCOPE_UPDATE_SNAPSHOTS"
_UPDATE = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help=f"Rewrite the committed expected files (audit and replay snapshots) from the "
        f"current output instead of comparing; {UPDATE_SNAPSHOTS_ENV}=1 does the same. "
        "Review the diff.",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Read before any test runs: the autouse fixture below removes STEPSCOPE_* variables.
    config.stash[_UPDATE] = bool(config.getoption("--update-snapshots")) or (
        os.environ.get(UPDATE_SNAPSHOTS_ENV) == "1"
    )


@pytest.fixture(scope="session")
def update_snapshots(pytestconfig: pytest.Config) -> bool:
    """Whether to rewrite committed expected files instead of comparing with them."""
    return pytestconfig.stash[_UPDATE]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("STEPSCOPE_") and key != "STEPSCOPE_TEST_PG_URL":
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    yield
