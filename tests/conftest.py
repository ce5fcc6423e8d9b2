"""Shared test set-up.

Fixture modules in ``tests/fixtures/`` are loaded as plugins, so each area keeps its
fixtures in its own file. An autouse fixture keeps a developer's own ``STEPSCOPE_*``
variables and working directory out of every test.
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


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("STEPSCOPE_") and key != "STEPSCOPE_TEST_PG_URL":
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    yield
