"""docs/postgres.md lists every error the Postgres reader can give."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_every_reader_error_is_documented() -> None:
    text = (REPO / "docs" / "postgres.md").read_text(encoding="utf-8")
    source = (REPO / "loaders" / "postgres.py").read_text(encoding="utf-8")
    stems = re.findall(r'SourceError\(\s*f?"([^"{]+)', source)
    assert len(stems) >= 8
    missing = [s.strip() for s in stems if s.strip() not in text]
    assert not missing, f"docs/postgres.md lacks: {missing}"
