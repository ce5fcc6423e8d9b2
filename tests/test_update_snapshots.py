"""The one snapshot switch is seen: ``--update-snapshots`` or ``STEPSCOPE_UPDATE_SNAPSHOTS=1``.

The root conftest must read the variable before its autouse fixture removes every
``STEPSCOPE_*`` variable, so this runs pytest in a child process on a one-test file (in
``tmp_path``, with the root conftest loaded as a plugin) and lets that test check the
``update_snapshots`` fixture against what the child was started with.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, UPDATE_SNAPSHOTS_ENV

PROBE = """
import os

def test_probe(update_snapshots):
    assert {env!r} not in os.environ  # cleared for the test, yet seen by the switch
    assert update_snapshots is {expected}
"""


@pytest.mark.parametrize(
    ("env", "args", "expected"),
    [({UPDATE_SNAPSHOTS_ENV: "1"}, [], True), ({UPDATE_SNAPSHOTS_ENV: "0"}, [], False)],
)  # fmt: skip
def test_the_switch_reaches_the_fixture(
    tmp_path: Path, env: dict[str, str], args: list[str], expected: bool
) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE.format(env=UPDATE_SNAPSHOTS_ENV, expected=expected), encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k != UPDATE_SNAPSHOTS_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), "-c", os.devnull, *args, str(probe)],
        cwd=REPO, env={**base, "PYTHONPATH": str(REPO), **env},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
