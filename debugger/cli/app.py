"""``stepscope app``: the Streamlit app on the store, served in this process."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import click

from debugger.cli.support import command, resolve_store
from debugger.errors import StepscopeError
from debugger.settings import CONFIG, config_file


def launch_app(
    store: str,
    port: int | None,
    browser: bool,
    env_defaults: dict[str, str] | None = None,
    *,
    json_doc: dict[str, Any] | None = None,
) -> None:
    """Run the Streamlit server on the store in this process; returns when it stops.

    In-process rather than ``streamlit run`` in a child interpreter, so the server can warm
    the first page while the browser loads (:mod:`debugger.ui.serve`).

    Args:
        store: the store file the app serves.
        port: the port, or None for 8501.
        browser: open a browser tab where one can be opened.
        env_defaults: settings (``STEPSCOPE_*``) the app gets unless the user set them.
        json_doc: once the server is up, print this as one JSON document with the app's
            url, store and port added (None: print a line with the URL).

    Raises:
        StepscopeError: there is no store at ``store``, or the port is in use.
    """
    if not Path(store).exists():
        raise StepscopeError(
            f"no store at {store}", "import a source first, or run `stepscope demo`"
        )
    from debugger.ui import serve  # Streamlit is imported only by this command

    port = port or serve.DEFAULT_PORT
    serve.check_port(port)
    for name, value in (env_defaults or {}).items():
        os.environ.setdefault(name, value)
    resolved = str(Path(store).resolve())
    os.environ["STEPSCOPE_STORE"] = resolved
    # the settings file as found from the user's directory (a relative $STEPSCOPE_CONFIG
    # included): the server runs in another directory
    settings = config_file()
    if settings is not None:
        os.environ[CONFIG.name] = str(settings.resolve())
    config_dir = Path(__file__).resolve().parents[2]
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops the server: not an error
        serve.serve(resolved, port, browser=browser, config_dir=config_dir, json_doc=json_doc)


@command("app")
@click.option("--port", type=int, help="Port (default 8501).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
def cmd(store_path: str | None, as_json: bool, port: int | None, no_browser: bool) -> None:
    """Serve the Streamlit app on the store and print its URL.

    A browser tab opens where one can be (a terminal with a display, not CI). With --json,
    one JSON document (url, store, port) is printed once the server is up; it keeps serving
    until Ctrl-C.

    \b
    Examples:
      stepscope app --store incident-42.duckdb
      stepscope app --port 8600 --no-browser --json
    """
    doc: dict[str, Any] | None = {} if as_json else None
    launch_app(resolve_store(store_path), port, browser=not no_browser, json_doc=doc)
