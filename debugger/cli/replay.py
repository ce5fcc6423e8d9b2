"""``stepscope replay``: the CLI face of :func:`debugger.replay.replay`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from debugger.cli.support import command, emit_json, resolve_store
from debugger.replay.engine import (
    DEFAULT_MAX_STEPS,
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    MODES,
    Progress,
    replay,
)
from debugger.replay.isolation import DEFAULT_ISOLATION, ISOLATIONS
from debugger.replay.report import ReplayReport


def _progress(quiet: bool) -> Callable[[Progress], None] | None:
    if quiet or not sys.stderr.isatty():
        return None

    def report(p: Progress) -> None:
        of = f"/{p.steps_expected}" if p.steps_expected else ""
        click.echo(f"\r  steps {p.steps_done}{of}: {p.message[:80]:<80}", err=True, nl=False)

    return report


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise click.BadParameter(
            f"{text!r} is not JSON ({e.msg}); quote text as JSON: --resume '\"yes\"'",
            param_hint="--resume",
        ) from e


def _print(report: ReplayReport) -> None:
    for line in report.summary_lines():
        click.echo(line)
    first = report.first_divergence
    if first and first.diff:
        click.echo("diff at the first divergence (path, kind, original -> replay):")
        for row in first.diff[:20]:
            click.echo(f"  {row['path']}  {row['kind']}  {row['old']!r} -> {row['new']!r}")
        if len(first.diff) > 20:
            click.echo(f"  ... {len(first.diff) - 20} more rows (see report.json)")


@command("replay")
@click.argument("run_id", metavar="RUN")
@click.option("--from", "from_step", type=int, required=True, help="Step to start from.")
@click.option("--agent", metavar="MODULE:ATTR", help="The agent to run (step(state, ctx)).")
@click.option(
    "--graph",
    metavar="MODULE:ATTR",
    help="Instead of --agent: the LangGraph graph (compiled, builder or factory).",
)
@click.option(
    "--writes", metavar="TOOL,...", help="Graphs: tools that write (default: names not read-like)."
)
@click.option(
    "--resume",
    "resume",
    multiple=True,
    metavar="JSON",
    help="Graphs: answer for an interrupt the recording cannot answer (repeatable).",
)
@click.option("--mocks", metavar="MODULE", help="Answers for calls the tape cannot give.")
@click.option("--mode", type=click.Choice(MODES), default="strict", show_default=True,
              help="strict: stop at the first divergence; lenient: go on.")  # fmt: skip
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1),
              default=DEFAULT_TIMEOUT_S, show_default=True, help="Time limit (s).")  # fmt: skip
@click.option("--max-steps", type=click.IntRange(min=1), default=DEFAULT_MAX_STEPS,
              show_default=True, help="At most this many steps.")  # fmt: skip
@click.option("--memory-mb", type=click.IntRange(min=64), default=DEFAULT_MEMORY_MB,
              show_default=True, help="Memory limit of the sandbox process.")  # fmt: skip
@click.option("--migrations", metavar="MODULE",
              help="State migrations (default: <agent package>.migrations).")  # fmt: skip
@click.option("--output", "output_dir", type=click.Path(file_okay=False),
              help="Replay files dir (default: <store>.replays/<id>/).")  # fmt: skip
@click.option("--baseline", metavar="MODULE:ATTR",
              help="Also replay this agent (the code that ran).")  # fmt: skip
@click.option(
    "--isolation",
    type=click.Choice(ISOLATIONS),
    default=DEFAULT_ISOLATION,
    show_default=True,
    help="kernel: namespaces (bubblewrap); hooks: the weaker in-process guard.",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Pass a variable to the agent (repeatable); nothing else is passed.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def cmd(
    store_path: str | None,
    as_json: bool,
    run_id: str,
    from_step: int,
    agent: str | None,
    graph: str | None,
    writes: str | None,
    resume: tuple[str, ...],
    mocks: str | None,
    mode: str,
    timeout_s: float,
    max_steps: int,
    memory_mb: int,
    migrations: str | None,
    output_dir: str | None,
    baseline: str | None,
    isolation: str,
    env: tuple[str, ...],
    quiet: bool,
) -> None:
    """Re-run RUN from a checkpoint in a sandbox and compare it with the original.

    Tool and model calls are answered from the original's tape (or --mocks); writes are
    recorded, never executed. The agent runs in a kernel sandbox (bubblewrap): no network,
    read-only filesystem but its work dir, its own processes, hard limits, only the
    variables named with --env. Without bubblewrap the replay refuses to start unless
    --isolation=hooks. The replay is stored as run RUN~replay-N. Exit status 0 whatever the
    replay found; 2 for bad input or missing isolation. A run that LangGraph wrote is
    replayed with --graph (its chat models and tools are answered from the recorded
    messages), in the same sandbox.

    \b
    Examples:
      stepscope replay crash-at-step-7 --from 6 \\
          --agent sample_checkpoints.refund_desk.agent:fixed_agent
      stepscope replay clean-completed --from 0 \\
          --agent sample_checkpoints.refund_desk.agent:agent --json
      stepscope replay crash-at-step-7 --from 6 --agent my_pkg.agent:agent \\
          --mocks my_pkg.replay_mocks --mode lenient --timeout 30
      stepscope replay crash-at-step-7 --from 6 \\
          --agent sample_checkpoints.refund_desk.agent:fixed_agent \\
          --baseline sample_checkpoints.refund_desk.agent:agent \\
          --mocks sample_checkpoints.refund_desk.replay_mocks
      stepscope replay crash-at-step-7 --from 6 --agent my_pkg.agent:agent \\
          --env OPENAI_BASE_URL --env MODE=replay --isolation hooks
      stepscope replay refund-A-7 --from 3 \\
          --graph sample_checkpoints.langgraph_refund.graph:fixed_graph \\
          --baseline sample_checkpoints.langgraph_refund.graph:graph \\
          --mocks sample_checkpoints.langgraph_refund.replay_mocks --env REFUND_PAYMENTS
    """
    settings: dict[str, Any] = dict(
        mocks=mocks, mode=mode, timeout_s=timeout_s, max_steps=max_steps,
        memory_mb=memory_mb, migrations=migrations, output_dir=output_dir,
        progress=None if as_json else _progress(quiet), isolation=isolation, env=list(env),
    )  # fmt: skip
    if graph:
        settings.update(writes=_names(writes), resume=[_json_arg(r) for r in resume])
    path = resolve_store(store_path)
    report = replay(path, run_id, from_step, agent, graph=graph, **settings)
    base = None
    if baseline and baseline != (graph or agent):
        settings["graph" if graph else "agent"] = baseline
        base = replay(path, run_id, from_step, **settings)
    if not (as_json or quiet) and sys.stderr.isatty():
        click.echo("", err=True)
    if as_json:
        emit_json({"replay": report.to_dict(), "baseline": base.to_dict() if base else None})
        return
    _print(report)
    if base is not None:
        click.echo(f"\nbaseline, the same replay with {baseline}:")
        _print(base)
