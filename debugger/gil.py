"""Python's thread switch interval, shortened for a block of work.

Python hands the GIL to a waiting thread only every switch interval (5 ms by default). Two
places have a thread that needs it back often while another runs Python code: an import,
whose store statements wait for the GIL to return results while the reader's thread
decodes, and the app's start-up warm-up, while the server's event loop answers the
browser's requests. Both shorten the interval for that work and restore it after.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def switch_interval(seconds: float) -> Iterator[None]:
    """Python's switch interval at most ``seconds`` for the block, the previous one after."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, seconds))
    try:
        yield
    finally:
        sys.setswitchinterval(before)
