"""What every ``stepscope`` command shares: ``--store`` and ``--json``, one-line errors.

A command declared with :func:`command` gets both options, and any :class:`StepscopeError`
it raises becomes one line on stderr and exit status 2 (bad input) or 1 (failure), never a
traceback. ``--json`` output is one JSON document on stdout with stable keys.
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import orjson

from debugger.errors import StepscopeError
from debugger.json_text import too_deep
from debugger.settings import default_store_path

if TYPE_CHECKING:  # the store (DuckDB, pandas) is imported only by commands that open one
    from debugger.store import Store

F = TypeVar("F", bound=Callable[..., Any])


STORE_HELP = "Store file (default: $STEPSCOPE_STORE, else ./stepscope.duckdb)."
"""Help of ``--store`` for commands on the user's store."""


def store_option(f: F, default: str | None = None, help: str = STORE_HELP) -> F:
    """``--store PATH``: default $STEPSCOPE_STORE, else ./stepscope.duckdb (or ``default``)."""
    return click.option(
        "--store",
        "store_path",
        default=default,
        show_default=default is not None,
        metavar="PATH",
        help=help,
    )(f)


def json_option(f: F) -> F:
    """``--json``: one JSON document on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(f)


def migrations_option(f: F) -> F:
    """``--migrations MODULE``: the state-schema migrations (audit, migrate)."""
    from debugger.migrations import SETTING

    return click.option(
        "--migrations",
        "migrations",
        metavar="MODULE",
        help=(
            "State-schema migrations: an importable module with CURRENT_VERSION = <int> and "
            f"functions v0_to_v1(state) -> state, ... (default: ${SETTING})."
        ),
    )(f)


def handle_errors(f: F) -> F:
    """Turn StepscopeError into one line on stderr and its exit code."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except StepscopeError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(e.exit_code)
        except RecursionError:  # a value stored before the import's depth limit
            click.echo(f"error: {too_deep()}", err=True)
            sys.exit(too_deep().exit_code)

    return wrapper  # type: ignore[return-value]


def command(
    name: str, *, store_default: str | None = None, store_help: str = STORE_HELP
) -> Callable[[Callable[..., Any]], click.Command]:
    """Declare the ``stepscope`` subcommand ``name``, with --store, --json and error handling.

    Each command module declares its command as ``cmd = command(name)(function)`` (used as a
    decorator); the group (:mod:`debugger.cli`) imports the module only when the command runs.

    Args:
        name: the command's name.
        store_default: the default of ``--store`` (None: $STEPSCOPE_STORE, else
            ./stepscope.duckdb, resolved by :func:`resolve_store`).
        store_help: the help of ``--store``.
    """

    def deco(f: Callable[..., Any]) -> click.Command:
        wrapped = json_option(store_option(handle_errors(f), store_default, store_help))
        return click.command(name)(wrapped)

    return deco


_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())
"""Click 8.2+ raises this for a bare ``stepscope``: its message is the help, shown as is."""


_skip_teardown = False


def skip_teardown() -> None:
    """Let the process end without the interpreter's teardown once this command is done.

    Tearing down the modules an import loads (numpy, pyarrow, DuckDB) and the objects it
    made takes ~0.1 s after the work is done, every time. A command that closed what it
    opened calls this; :meth:`OneLineGroup.main` then flushes the output, runs the exit
    handlers and ends the process directly, but only when it is the process's own command
    (its arguments read from ``sys.argv``), never for a caller in the same process (a test's
    ``CliRunner`` passes its arguments).
    """
    global _skip_teardown
    _skip_teardown = True


def _exit(code: int, own_process: bool) -> NoReturn:
    if _skip_teardown and own_process:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            atexit._run_exitfuncs()
            os._exit(code)
    sys.exit(code)


class OneLineGroup(click.Group):
    """A command group whose usage errors are one line too (``error: ... Hint: ...``, exit 2).

    Click prints a usage error (a missing argument, ``--step abc``) as three lines with the
    usage; the contract is one line saying what is wrong and what to do.
    """

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the group; a usage error becomes one line on stderr and exit status 2."""
        if not kwargs.get("standalone_mode", True):  # the caller handles errors itself
            return super().main(*args, **kwargs)
        own_process = kwargs.get("args", args[0] if args else None) is None
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)  # an Exit's code (--help), else the result
        except _NO_ARGS_IS_HELP as e:
            click.echo(e.format_message(), err=True)
            sys.exit(e.exit_code)
        except click.UsageError as e:
            path = e.ctx.command_path if e.ctx else "stepscope"
            message = e.format_message().rstrip(".")
            click.echo(f"error: {message}. Hint: see `{path} --help`.", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        _exit(code if isinstance(code, int) and not isinstance(code, bool) else 0, own_process)


def resolve_store(store_path: str | None) -> str:
    """The store path a command uses."""
    return store_path or default_store_path()


@contextmanager
def open_store(store_path: str | None, read_only: bool = True) -> Iterator[Store]:
    """Open the command's store."""
    from debugger.store import Store

    def notify(line: str) -> None:
        click.echo(line, err=True)

    with Store.open(resolve_store(store_path), read_only=read_only, notify=notify) as store:
        yield store


def emit_json(doc: Any) -> None:
    """Print one JSON document (datetimes as ISO 8601, keys in a stable order)."""
    try:
        text = orjson.dumps(
            doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=_default
        ).decode()
    except orjson.JSONEncodeError:
        # an integer beyond 64 bits (a state written with one): the standard library
        # prints it exactly; non-finite floats become null, as orjson prints them
        text = json.dumps(_finite(doc), indent=2, default=_default, ensure_ascii=False)
    sys.stdout.write(text + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if hasattr(value, "to_dict"):
        return _finite(value.to_dict())
    return value


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if hasattr(obj, "item"):  # numpy scalars from DataFrames
        return obj.item()
    if isinstance(obj, Decimal):  # a DECIMAL column (`stepscope sql`): exact, as text
        return str(obj)
    if isinstance(obj, bytes | bytearray | memoryview):  # a BLOB: its bytes in hex
        return bytes(obj).hex()
    raise TypeError(type(obj).__name__)


def frame_records(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame as JSON-ready records (NaN and NaT become null)."""
    clean = frame.astype(object).where(frame.notna(), None)
    return [dict(r) for r in clean.to_dict(orient="records")]
