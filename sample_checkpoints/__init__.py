"""The sample: a refund-desk agent, the incident scenarios it produces, and their files.

``python -m sample_checkpoints.regenerate`` rewrites every file under ``data/``
byte-for-byte; README.md is the tutorial that walks through each scenario with Stepscope.
"""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Where the committed sample files live."""
