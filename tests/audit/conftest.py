"""``--update-snapshots`` (or STEPSCOPE_UPDATE_SNAPSHOTS=1) rewrites the audit snapshots."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="Rewrite tests/audit/snapshots/ from the current audit output (review the diff).",
    )
