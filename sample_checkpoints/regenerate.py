"""Regenerate every sample file: ``python -m sample_checkpoints.regenerate [--out DIR]``.

Plays every scenario (sample_checkpoints/scenarios.py) with the real runtime in a scratch
directory, then writes the histories in each source form into ``DIR`` (default: the package's
``data/``). Running it twice gives byte-identical files; a test checks that.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sample_checkpoints import DATA_DIR, export
from sample_checkpoints.scenarios import Env, play_all

FILES = (
    "native.sqlite",
    "payload.sqlite",
    "mapped.sqlite",
    "mapped.toml",
    "postgres.sql",
    "ledger.sqlite",
    "parquet",
)
"""What ``data/`` holds after a regeneration."""


def regenerate(out: Path = DATA_DIR) -> list[Path]:
    """Play every scenario and write every file into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stepscope-sample-") as tmp:
        env = Env(Path(tmp))
        play_all(env)
        export.native(env.runs_db, out / "native.sqlite")
        export.payload(env.runs_db, out / "payload.sqlite")
        export.mapped(env.runs_db, out / "mapped.sqlite")
        (out / "mapped.toml").write_text(export.MAPPING_TOML, encoding="utf-8")
        export.postgres(env.runs_db, out / "postgres.sql")
        export.parquet(env.runs_db, out / "parquet")
        export.ledger(env.ledger_db, out / "ledger.sqlite")
    return [out / f for f in FILES]


def main(argv: list[str] | None = None) -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="target directory")
    args = parser.parse_args(argv)
    for path in regenerate(args.out):
        print(path)


if __name__ == "__main__":
    main()
