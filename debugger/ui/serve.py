"""Run the Streamlit server for ``stepscope app`` in this process, warming the first page.

``stepscope app`` used to start ``streamlit run`` as a second interpreter, whose first script
run then imported pandas, DuckDB and the pages and opened the store (about a second) only
once the browser had loaded Streamlit's front end and asked for the page. Here the server
runs in the CLI's own process (one interpreter start less), and as soon as it listens a
background thread imports and reads what the Runs page needs, so that work overlaps with
the browser downloading and starting the front end; the other pages' modules follow a few
seconds later (each page's module is otherwise imported when the page first runs).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import threading
import time
from pathlib import Path

from debugger.errors import StepscopeError

ENTRY = Path(__file__).with_name("entry.py")
"""The Streamlit entry script (shipped inside the package, so it works when installed)."""

WARM_MODULES = ("streamlit.material_icon_names",)  # the pages' :material/...: icons
"""Imported by the first script run besides the Runs page (DuckDB, the store)."""

OTHER_PAGES_AFTER_S = 5.0
"""How long after the first page's warm-up the other pages' modules are imported."""

APP_FLAGS = {
    # Streamlit watches the app's source files to offer a rerun when they change: four
    # polling threads plus inotify, for files nobody edits while debugging. Turned off,
    # the first page drew 0.2-0.4 s sooner on 2 cores (less work competing with the
    # warm-up and the serving of the front end).
    "server.fileWatcherType": "none",
    "server.runOnSave": "false",
    "server.address": "127.0.0.1",
    "browser.gatherUsageStats": "false",
    "theme.base": "light",
    "theme.primaryColor": "#c2410c",
    "theme.font": "sans serif",
    "client.toolbarMode": "minimal",
}
"""Settings ``stepscope app`` passes as flags, so they hold wherever the package is
installed (the repository's ``.streamlit/config.toml`` only applies next to it)."""

SERVER_WAIT_S = 30.0
"""How long the warm-up waits for the server to listen before giving up (it is optional)."""


def serve(store: str, port: int | None, browser: bool, config_dir: Path) -> None:
    """Run ``streamlit run`` on the app's entry in this process; returns when it stops.

    Args:
        store: the store file the app serves (already in ``STEPSCOPE_STORE``).
        port: the port, or None for Streamlit's default.
        browser: open a browser tab.
        config_dir: the directory whose ``.streamlit/config.toml`` applies (Streamlit reads
            the one in the working directory, as it did for the child process before).
    """
    from streamlit.web import cli as streamlit_cli

    args = ["run", str(ENTRY), "--server.headless", "false" if browser else "true"]
    if port:
        args += ["--server.port", str(port)]
    for name, value in APP_FLAGS.items():
        args += [f"--{name}", value]
    os.chdir(config_dir)
    threading.Thread(target=warm, args=(store,), name="stepscope-warm", daemon=True).start()
    streamlit_cli.main(args=args, prog_name="streamlit", standalone_mode=False)


def warm(store: str) -> None:
    """Once the server listens, import the first page's modules and read what it shows;
    a few seconds later, import the other pages' modules.

    Waiting for the server keeps this work from slowing its start (the imports hold the
    GIL); after that, the browser spends a second or more loading the front end, and the
    first script run then finds the modules imported and the store connection open. The
    other pages are imported once the first one has had time to draw, so that opening one
    of them later does not wait for its imports either.
    """
    if not _wait_for_server():
        return
    _check_bare_mode_once()
    from debugger.ui import common, runs  # pandas, DuckDB, the store, the Runs page's data

    for name in WARM_MODULES:
        importlib.import_module(name)
    with contextlib.suppress(StepscopeError):  # the page shows the error, with its hint
        runs.warm(store)
    _freeze_startup_objects()
    # The other pages later: importing them now (DeepDiff, pydantic, the replay engine:
    # ~0.3 s of CPU) would compete with the browser drawing the first page.
    time.sleep(OTHER_PAGES_AFTER_S)
    common.page_modules()
    gc.collect()
    gc.freeze()  # unfrozen at exit with the rest (see _freeze_startup_objects)


def _freeze_startup_objects() -> None:
    """Move what start-up created (modules, classes: ~100,000 objects) out of the GC's reach.

    Streamlit runs a full ``gc.collect()`` after every script run, holding the GIL while it
    walks every tracked object (50-60 ms here with pandas and DuckDB loaded, more under
    load), so the last messages of the first page wait for it, and so does every later rerun
    (a Timeline step). Frozen objects are still freed by reference counting; only cycles
    among them wait until exit, when they are unfrozen so that extension modules (DuckDB's
    nanobind) do not report them as leaks.
    """
    gc.collect()
    gc.freeze()
    atexit.register(gc.unfreeze)


def _check_bare_mode_once() -> None:
    """Run Streamlit's once-per-process "is this a REPL?" check now, while it is cheap.

    The first element any script draws runs it: ``inspect.stack()``, which resolves the
    file of every loaded module (0.05-0.13 s with pandas and DuckDB loaded, measured on the
    first page). Before they are loaded it costs a few ms; it prints nothing under a
    running server. A private function: if a Streamlit release drops it, this does nothing.
    """
    from streamlit import delta_generator

    check = getattr(delta_generator, "_maybe_print_use_warning", None)
    if callable(check):
        check()


def _wait_for_server() -> bool:
    from streamlit.runtime import Runtime
    from streamlit.runtime.runtime import RuntimeState

    deadline = time.monotonic() + SERVER_WAIT_S
    while time.monotonic() < deadline:
        if Runtime.exists() and Runtime.instance().state != RuntimeState.INITIAL:
            return True
        time.sleep(0.02)
    return False
