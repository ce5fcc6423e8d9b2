"""The ``stepscope`` command: a thin layer over the same functions notebooks call.

One module a command (``debugger/cli/<name>.py``), each declaring its click command as
``cmd`` with :func:`debugger.cli.support.command`. The group imports a command's module only
when that command runs, so ``stepscope app`` does not import DeepDiff, the audit or the
replay engine. Every command takes ``--store PATH`` and ``--json``; user errors print one
line and exit 2. docs/cli.md documents each command (a test keeps it in step).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from debugger import __version__
from debugger.cli.support import OneLineGroup

COMMANDS = {
    "import": "debugger.cli.import_",
    "runs": "debugger.cli.runs",
    "show": "debugger.cli.show",
    "diff": "debugger.cli.diff",
    "audit": "debugger.cli.audit",
    "migrate": "debugger.cli.migrate",
    "replay": "debugger.cli.replay",
    "sql": "debugger.cli.sql",
    "prune": "debugger.cli.prune",
    "report": "debugger.cli.report",
    "app": "debugger.cli.app",
    "demo": "debugger.cli.demo",
}
"""Every command and the module that declares it (as ``cmd``)."""


class StepscopeGroup(OneLineGroup):
    """The command group, importing a command's module only when that command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, loaded or not."""
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line, BLAS on one thread unless the user chose otherwise.

        numpy (which pyarrow imports) starts OpenBLAS's threads as it loads, ~0.045 s of a
        short command's start-up, and no command does linear algebra. A library user's
        process is left as it is: this runs for the ``stepscope`` command only.
        """
        if "numpy" not in sys.modules:
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        return super().main(*args, **kwargs)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """Load the command's module on first use."""
        if name not in self.commands and name in COMMANDS:
            self.add_command(importlib.import_module(COMMANDS[name]).cmd, name)
        return super().get_command(ctx, name)


@click.group(cls=StepscopeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="stepscope")
def main() -> None:
    """Stepscope: step through, diff, audit and replay AI-agent checkpoint histories.

    \b
    Examples:
      stepscope demo
      stepscope import sample_checkpoints/data/native.sqlite
      stepscope runs --status crashed,failed
      stepscope audit crash-at-step-7
      stepscope demo --where
    """
