"""``stepscope demo``: a fresh store with the sample histories, then the app on it.

The sample's files (sample_checkpoints/data/) hold the same thirteen runs in several source
forms; importing one of them is enough, and importing the others would add nothing (same
ids). The demo imports ``native.sqlite``, the form the runtime writes. Its store is
``./stepscope-demo.duckdb`` unless ``--store`` says otherwise; it never touches
``$STEPSCOPE_STORE`` or ``./stepscope.duckdb``, so a real store is never overwritten.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click

from debugger.cli.support import command, emit_json
from debugger.errors import StepscopeError
from debugger.store import Store

DEMO_STORE = "stepscope-demo.duckdb"
"""Default demo store, in the current directory (easy to find, easy to delete)."""
DEMO_SOURCE = "native.sqlite"
"""The sample file the demo imports."""


def _sample_source() -> Path:
    from sample_checkpoints import DATA_DIR

    source = DATA_DIR / DEMO_SOURCE
    if not source.exists():
        raise StepscopeError(
            f"the sample file {source} is missing",
            "regenerate it with `python -m sample_checkpoints.regenerate`",
        )
    return source


def _is_demo_store(path: Path) -> bool:
    """True when every source of the store at ``path`` is a sample file (safe to replace)."""
    from sample_checkpoints import DATA_DIR

    try:
        with Store.open(path, read_only=True) as store:
            locations = list(store.sources()["location"])
    except StepscopeError:
        return False
    sample = str(DATA_DIR.resolve())
    return bool(locations) and all(str(loc).startswith(sample) for loc in locations)


def build_demo_store(path: str | os.PathLike[str] = DEMO_STORE) -> dict[str, Any]:
    """Build a fresh demo store at ``path`` from the sample; returns what was imported.

    The store is built beside the target and moved into place, so an app still showing an
    older demo store is not left with a half-written file.

    Raises:
        StepscopeError: ``path`` exists and is not a demo store (it is never overwritten).
    """
    from loaders import ImportOptions, import_source

    target = Path(path)
    if target.exists() and not _is_demo_store(target):
        raise StepscopeError(
            f"{target} exists and is not a demo store",
            "pass --store with a new path, or delete the file yourself",
        )
    source = _sample_source()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".demo-", suffix=".duckdb", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # DuckDB creates the file itself
    try:
        with Store.open(tmp, read_only=False) as store:
            report = import_source(store, str(source), ImportOptions())
            statuses = store.runs()["status"].value_counts().sort_index().to_dict()
        Path(str(tmp) + ".wal").unlink(missing_ok=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return {
        "store": str(target.resolve()),
        "source": str(source),
        "runs": int(sum(statuses.values())),
        "statuses": {str(k): int(v) for k, v in statuses.items()},
        "import": report.to_dict(),
    }


@command(
    "demo",
    store_default=DEMO_STORE,
    store_help="Demo store to (re)create; an existing store that is not a demo store is refused.",
)
@click.option("--port", type=int, help="Port of the app (default 8501).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
@click.option("--no-app", is_flag=True, help="Build the store and stop (scripts, tests).")
@click.option("--where", is_flag=True, help="Print the sample data's directory and stop.")
def cmd(
    store_path: str,
    as_json: bool,
    port: int | None,
    no_browser: bool,
    no_app: bool,
    where: bool,
) -> None:
    """Import the sample histories into a fresh store and serve the app on it.

    The app's URL is printed once it serves; a browser tab opens where one can be.
    With --json and the app, one JSON document (the import summary, url, store, port)
    is printed once the server is up.

    \b
    Examples:
      stepscope demo
      stepscope demo --no-app && stepscope runs --store stepscope-demo.duckdb
      stepscope demo --store /tmp/demo.duckdb --port 8600 --no-browser
      stepscope demo --where
    """
    if where:
        _print_where(as_json)
        return
    summary = build_demo_store(store_path)
    if as_json and no_app:
        emit_json(summary)
    elif not as_json:
        _print_summary(summary, store_path)
    if not no_app:
        from debugger.cli.app import launch_app

        # the sample's runs span schema versions 0-3: name its migrations so the app's
        # Audit and Migrations pages judge them by the sample's own registry
        defaults = {"STEPSCOPE_MIGRATIONS": "sample_checkpoints.refund_desk.migrations"}
        doc = summary if as_json else None
        launch_app(summary["store"], port, not no_browser, env_defaults=defaults, json_doc=doc)


def _print_where(as_json: bool) -> None:
    from sample_checkpoints import DATA_DIR

    if as_json:
        emit_json({"sample_data": str(DATA_DIR.resolve())})
    else:
        click.echo(str(DATA_DIR.resolve()))


def _print_summary(summary: dict[str, Any], store_path: str) -> None:
    from sample_checkpoints import DATA_DIR

    counts = ", ".join(f"{n} {s}" for s, n in summary["statuses"].items())
    click.echo(f"Demo store {summary['store']}: {summary['runs']} runs ({counts})")
    click.echo(f"  from {summary['source']}")
    click.echo(f"  sample data: {DATA_DIR.resolve()}")
    click.echo(f"  try: stepscope runs --store {store_path}")
    click.echo(f"       stepscope show crash-at-step-7 --store {store_path}")
