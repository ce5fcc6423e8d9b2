"""Run the Streamlit server for ``stepscope app`` in this process, warming the first page.

The server runs in the CLI's own process (no second interpreter), and as soon as it listens
a background thread imports and reads what the Runs page needs, so that work overlaps with
the browser downloading and starting the front end; the other pages' modules follow a few
seconds later (each page's module is otherwise imported when the page first runs). What it
serves is :mod:`debugger.ui.asgi`: the entry script as an ``st.App`` whose middleware has
the browser fetch the first page's front-end code sooner (:mod:`debugger.ui.frontend`).

The server is always headless: Streamlit's non-headless start asks for an e-mail address on
a machine where it never ran, and without a terminal that prompt ends the process. Stepscope
prints its own line with the URL (Streamlit's banner is hidden) and opens a browser itself,
only where one can be opened.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import importlib
import json
import os
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from debugger.errors import StepscopeError
from debugger.gil import switch_interval

ENTRY = Path(__file__).with_name("entry.py")
"""The Streamlit entry script (shipped inside the package, so it works when installed)."""

SERVED = Path(__file__).with_name("asgi.py")
"""The script ``streamlit run`` is given: :data:`ENTRY` as an ``st.App`` whose middleware
speeds the first visit's front end; a Streamlit without ``st.App`` runs :data:`ENTRY`."""

WARM_MODULES = ("streamlit.material_icon_names", "numpy", "PIL.Image", "PIL.ImageFile")
"""Imported by the first script run besides the Runs page (DuckDB, the store): the pages'
``:material/...:`` icons, and what Streamlit imports to serve the page icon (the local
``icon.png``) in ``st.set_page_config``: a quarter of a second on the first run otherwise."""

OTHER_PAGES_AFTER_S = 5.0
"""How long after the first page's warm-up the other pages' modules are imported."""

WARM_SWITCH_INTERVAL_S = 0.001
"""Python's thread switch interval while the warm-up runs (the default is 0.005 s).

The server's event loop, serving the browser's ~90 front-end files and then the requests
that open the websocket, needs the GIL at each step; while the warm-up thread runs Python
code, each of those steps waits for it to let go, up to the interval each time. A shorter
one had the first page drawn ~0.15 s sooner (median of 6 interleaved starts, load 3-5)."""

APP_FLAGS = {
    # Streamlit watches the app's source files to offer a rerun when they change: polling
    # threads plus inotify, for files nobody edits while debugging, competing with the
    # warm-up and the serving of the front end.
    "server.fileWatcherType": "none",
    "server.runOnSave": "false",
    "server.address": "127.0.0.1",
    "server.headless": "true",  # no e-mail prompt; the browser is opened by open_browser
    "browser.gatherUsageStats": "false",
    "logger.hideWelcomeMessage": "true",  # Streamlit's banner: Stepscope prints its own line
    "logger.level": "warning",  # its start-up log lines too
    "theme.base": "light",
    "theme.primaryColor": "#c2410c",
    "theme.font": "sans serif",
    "client.toolbarMode": "minimal",
}
"""Settings ``stepscope app`` passes as flags, so they hold wherever the package is
installed (the repository's ``.streamlit/config.toml`` only applies next to it)."""

SERVER_WAIT_S = 30.0
"""How long the warm-up waits for the server to listen before giving up (it is optional)."""

DEFAULT_PORT = 8501
"""The app's port unless ``--port`` says otherwise (Streamlit's default)."""

HOST = "127.0.0.1"
"""The address the app listens on (``server.address``): this machine only."""


def check_port(port: int) -> None:
    """Fail with one line when ``port`` is taken, before Streamlit starts.

    Raises:
        StepscopeError: something already listens on ``port``.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as the server binds (Tornado sets it): a port left in TIME_WAIT by an app just
        # stopped is free to serve again, one with a listener is still refused
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            raise StepscopeError(f"port {port} is in use", "--port N") from None


def app_url(port: int) -> str:
    """The URL the app is served at."""
    return f"http://{HOST}:{port}"


def can_open_browser() -> bool:
    """True where a browser tab can be opened for the user: an interactive terminal, not CI,
    a display on Linux, and a browser ``webbrowser`` knows."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()) or os.environ.get("CI"):
        return False
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def serve(
    store: str,
    port: int,
    browser: bool,
    config_dir: Path,
    *,
    json_doc: dict[str, Any] | None = None,
) -> None:
    """Run ``streamlit run`` on the app's entry in this process; returns when it stops.

    Args:
        store: the store file the app serves (already in ``STEPSCOPE_STORE``).
        port: the port (already checked to be free by :func:`check_port`).
        browser: open a browser tab where one can be opened.
        config_dir: the directory whose ``.streamlit/config.toml`` applies (Streamlit reads
            the one in the working directory).
        json_doc: once the server is up, print this as one JSON document with url, store
            and port added, instead of the line with the URL (None: the line).
    """
    import streamlit
    from streamlit.web import cli as streamlit_cli

    served = SERVED if hasattr(streamlit, "App") else ENTRY
    args = ["run", str(served), "--server.port", str(port)]
    for name, value in APP_FLAGS.items():
        args += [f"--{name}", value]
    os.chdir(config_dir)
    _skip_component_scan()
    ready = functools.partial(_announce, store, port, browser, json_doc)
    threading.Thread(target=warm, args=(store, ready), name="stepscope-warm", daemon=True).start()
    streamlit_cli.main(args=args, prog_name="streamlit", standalone_mode=False)


def _announce(store: str, port: int, browser: bool, json_doc: dict[str, Any] | None) -> None:
    """Print where the app is served, and open a browser tab where one can be opened."""
    url = app_url(port)
    if json_doc is not None:
        doc = {**json_doc, "url": url, "store": store, "port": port}
        click.echo(json.dumps(doc, indent=2, default=str))
    else:
        click.echo(f"Stepscope app on {store}: {url}  (Ctrl-C stops it)")
    sys.stdout.flush()
    if browser and can_open_browser():
        with contextlib.suppress(webbrowser.Error):
            webbrowser.open(url)


def warm(store: str, on_ready: Callable[[], None] | None = None) -> None:
    """Once the server listens, import the first page's modules and read what it shows;
    a few seconds later, import the other pages' modules.

    ``on_ready`` runs as soon as the server listens (it prints the URL).
    Waiting for the server keeps this work from slowing its start (the imports hold the
    GIL); after that, the browser spends a second or more loading the front end, and the
    first script run then finds the modules imported and the store connection open. The
    other pages are imported once the first one has had time to draw, so that opening one
    of them later does not wait for its imports either.
    """
    if not _wait_for_server():
        return
    if on_ready is not None:
        on_ready()
    with switch_interval(WARM_SWITCH_INTERVAL_S):
        _check_bare_mode_once()
        from debugger.ui import common, runs  # pandas, DuckDB, the store, the Runs page's data

        for name in WARM_MODULES:
            importlib.import_module(name)
        with contextlib.suppress(StepscopeError):  # the page shows the error, with its hint
            runs.warm(store)
        _freeze_startup_objects()
    # The other pages later: importing them now (DeepDiff, pydantic, the replay engine)
    # would compete with the browser drawing the first page.
    time.sleep(OTHER_PAGES_AFTER_S)
    with switch_interval(WARM_SWITCH_INTERVAL_S):
        common.page_modules()
    gc.collect()
    gc.freeze()  # unfrozen at exit with the rest (see _freeze_startup_objects)


def _freeze_startup_objects() -> None:
    """Move what start-up created (modules, classes) out of the GC's reach.

    Streamlit runs a full ``gc.collect()`` after every script run, holding the GIL while it
    walks every tracked object (many with pandas and DuckDB loaded), so the last messages
    of the first page wait for it, and so does every later rerun
    (a Timeline step). Frozen objects are still freed by reference counting; only cycles
    among them wait until exit, when they are unfrozen so that extension modules (DuckDB's
    nanobind) do not report them as leaks. No collection first: it found ~10 objects to
    free, and held the GIL for 0.05-0.2 s just as the browser asks for the requests that
    open the websocket.
    """
    gc.freeze()
    atexit.register(gc.unfreeze)


def _skip_component_scan() -> None:
    """Have Streamlit's runtime skip its scan of installed packages for custom components.

    At its creation, before the server listens, the runtime reads the metadata of every
    installed distribution (~0.2 s with 180 of them, more in a larger environment) to
    register the custom components they declare; the app draws none. A private function:
    if a Streamlit release moves it, the scan runs as before.
    """
    with contextlib.suppress(ImportError):
        from streamlit.components.v2 import manifest_scanner

        if callable(getattr(manifest_scanner, "scan_component_manifests", None)):
            manifest_scanner.scan_component_manifests = _no_components


def _no_components(max_workers: int | None = None) -> list[Any]:
    """What the scan finds for the app: nothing (it uses no custom component)."""
    del max_workers
    return []


def _check_bare_mode_once() -> None:
    """Run Streamlit's once-per-process "is this a REPL?" check now, while it is cheap.

    The first element any script draws runs it: ``inspect.stack()``, which resolves the
    file of every loaded module, which is slow once pandas and DuckDB are loaded and cheap
    before; it prints nothing under a running server. A private function: if a Streamlit
    release drops it, this does nothing.
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
