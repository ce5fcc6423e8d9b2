"""The tutorial's runtime incidents are the runtimes' own fixtures, written by the real packages.

``sample_checkpoints/data/runtimes/`` holds copies (the sample ships in the wheel, the tests
do not): a copy that drifted from the fixture the tests check against the runtime's own API
would tell the tutorial's readers something no test vouches for.
"""

from __future__ import annotations

from pathlib import Path

from sample_checkpoints import DATA_DIR

HERE = Path(__file__).parent


def test_sample_runtime_files_are_the_checked_fixtures() -> None:
    pairs = {
        DATA_DIR / "runtimes" / "adk.sqlite": HERE / "adk" / "data" / "adk.sqlite",
        DATA_DIR / "runtimes" / "temporal" / "refund-timeout.json":
            HERE / "temporal" / "data" / "histories" / "refund-timeout.json",
    }  # fmt: skip
    for sample, fixture in pairs.items():
        assert sample.read_bytes() == fixture.read_bytes(), f"{sample} is not {fixture}"
    assert sorted(p.name for p in (DATA_DIR / "runtimes").rglob("*") if p.is_file()) == [
        "adk.sqlite", "refund-timeout.json"]  # fmt: skip
