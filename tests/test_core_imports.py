"""The core never imports streamlit: only debugger/ui/ (and app.py) may.

Checked in a fresh interpreter, because the test process itself may have imported
streamlit for the app tests. Every module under debugger/ (outside debugger/ui/) and
loaders/ is imported, including ones other areas add later.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def core_modules() -> list[str]:
    """Dotted names of every module of debugger/ (except debugger/ui) and loaders/."""
    names = []
    for package in ("debugger", "loaders"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            if rel.parts[:2] == ("debugger", "ui") or "__pycache__" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            names.append(".".join(parts))
    return names


def test_the_core_list_covers_what_matters() -> None:
    names = core_modules()
    for must in ("debugger", "debugger.store", "debugger.cli", "debugger.model",
                 "loaders", "loaders.base", "loaders.sqlite", "loaders.parquet"):  # fmt: skip
        assert must in names
    assert not [n for n in names if n.startswith("debugger.ui")]


def test_core_modules_never_import_streamlit() -> None:
    code = (
        "import importlib, json, sys\n"
        f"names = {core_modules()!r}\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
