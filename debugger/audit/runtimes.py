"""What each runtime can record, so the audit judges a run against its own runtime.

Stepscope's native runtime writes all six items of the contract. Other runtimes keep what
their checkpointer has room for: a LangGraph checkpoint has a step, a state and the messages'
token usage, but no state-schema version unless the application puts one in the config, and
no tool versions at all. An item the runtime cannot carry is a warning with a hint on where to
record it in that runtime, not a restart: the run is as resumable as its runtime makes it.

One :class:`Runtime` per runtime, keyed by the import flavour that reads it
(``sources.flavour``); a new runtime (issue 21) is one more entry in :data:`RUNTIMES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from debugger.json_text import preview
from debugger.model import Checkpoint

__all__ = [
    "ADK",
    "CREWAI",
    "LANGGRAPH",
    "NATIVE",
    "OPENAI_AGENTS",
    "PYDANTIC_AI",
    "RUNTIMES",
    "TEMPORAL",
    "Runtime",
    "open_interrupts",
    "runtime_of",
]

QUESTION_CHARS = 80
"""Longest interrupt value quoted in a resume hint."""


def _meta(c: Checkpoint) -> dict[str, Any]:
    return c.metadata if isinstance(c.metadata, dict) else {}


def _never(c: Checkpoint) -> str | None:
    return None


def _no_hint(head: Checkpoint) -> str | None:
    return None


def _never_true(c: Checkpoint) -> bool:
    return False


@dataclass(frozen=True)
class Runtime:
    """What one runtime records, and how a run of it is resumed."""

    name: str
    """The import flavour that reads this runtime's checkpoints."""
    uncarried: dict[str, str] = field(default_factory=dict)
    """Contract rule ids the runtime has no place for, each with the hint on recording it."""
    applied_kinds: frozenset[str] = frozenset()
    """Kinds of pending entries the runtime keeps and applies itself on resume (not in doubt)."""
    forked_on_purpose: Callable[[Checkpoint], str | None] = _never
    """How a checkpoint was written on purpose off the run's course (an edit, a replay)."""
    resume_hint: Callable[[Checkpoint], str | None] = _no_hint
    """How to resume a parked head in this runtime, if it has its own way."""

    state_elsewhere: Callable[[Checkpoint], bool] = _never_true
    """Whether the runtime keeps what a resume of this checkpoint needs outside its working
    state (a LangGraph entrypoint's state is its output: a resume starts again from its
    input, its tasks' results and what it saved, all LangGraph's own); the working-state
    rules (missing, prose) then pass it."""

    tool_calls_in_state: bool = False
    """Whether a pending tool call is one the state asks for and no answer has reached yet
    (LangGraph: a tool call of an AI message with no tool message), not a recorded attempt."""

    def attempted(self, pending: dict[str, Any], head: Checkpoint) -> bool:
        """Whether a pending effect at the head may have happened (its outcome is in doubt).

        Native entries say so with ``status: unknown``. A LangGraph tool call still
        unanswered at the head ran, or started, unless the run is parked before the tool.
        """
        if not (self.tool_calls_in_state and pending.get("kind") == "tool_call"):
            return pending.get("status") == "unknown"
        m = _meta(head)
        return str(m.get("status", "")).lower() != "parked" and not m.get("interrupt")


NATIVE = Runtime("native")
"""Stepscope's own runtime: every item of the contract, no runtime-specific resume."""


def _lg_functional(c: Checkpoint) -> bool:
    lg = _meta(c).get("langgraph")
    return isinstance(lg, dict) and lg.get("functional") is True


def _lg_fork(c: Checkpoint) -> str | None:
    source = _meta(c).get("source")
    if source == "update":
        return "written by update_state (metadata.source update)"
    if source == "fork":
        return "a replay from an older checkpoint (metadata.source fork)"
    return None


def _value_text(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("question", "message", "reason", "action"):
            if value.get(key):
                return preview(value[key], QUESTION_CHARS)
    return preview(value, QUESTION_CHARS)


def _ids(raw: Any) -> set[str]:
    items = raw if isinstance(raw, list) else []
    return {str(i.get("id") if isinstance(i, dict) else i) for i in items}


def open_interrupts(head: Checkpoint) -> list[dict[str, Any]]:
    """The LangGraph interrupts still waiting for an answer at the head (``{value, id}``).

    The loader writes ``metadata.interrupts`` (every interrupt of the head) or
    ``metadata.interrupt`` (the first), and the answered ones in ``metadata.resolved`` or
    ``resolved_interrupts``; an interrupt answered by id is not open.
    """
    m = _meta(head)
    listed = m.get("interrupts")
    raw: list[Any] = listed if isinstance(listed, list) else [m.get("interrupt")]
    answered = _ids(m.get("resolved")) | _ids(m.get("resolved_interrupts"))
    return [
        i for i in raw
        if isinstance(i, dict) and (i.get("id") is None or str(i["id"]) not in answered)
    ]  # fmt: skip


def _lg_config(head: Checkpoint) -> str:
    lg = _meta(head).get("langgraph")
    thread = lg.get("thread_id") if isinstance(lg, dict) else None
    return f'{{"configurable": {{"thread_id": "{thread}"}}}}' if thread else "the run's config"


def _lg_resume(head: Checkpoint) -> str | None:
    where = _lg_config(head)
    asks = open_interrupts(head)
    if len(asks) == 1:
        return (
            f"resume with graph.invoke(Command(resume=ANSWER), {where}), ANSWER answering the "
            f"open interrupt: {_value_text(asks[0].get('value'))}"
        )
    if asks:
        listed = "; ".join(f"{a.get('id')}: {_value_text(a.get('value'))}" for a in asks)
        return (
            f"resume with graph.invoke(Command(resume={{INTERRUPT_ID: ANSWER, ...}}), {where}), "
            f"one answer per open interrupt: {listed}"
        )
    nexts = _meta(head).get("next")
    if isinstance(nexts, list) and nexts:
        return (
            f"resume with graph.invoke(None, {where}): it runs {', '.join(map(str, nexts))} "
            "(a breakpoint stopped before it)"
        )
    return None


_LG_SCHEMA = (
    "LangGraph keeps no state-schema version of its own: record one in every checkpoint's "
    'metadata, e.g. graph.invoke(x, {"configurable": {"thread_id": ...}, "metadata": '
    '{"schema_version": 2}}) (config metadata and configurable values are copied into the '
    "checkpoint metadata, where the loader reads schema_version)"
)
_LG_RUN_METADATA = (
    "LangGraph records no tool versions, and the model version only as the AI messages' "
    "response_metadata.model_name: keep the tool versions in the config's metadata as JSON "
    'text, e.g. "metadata": {"tool_versions": json.dumps({"search": "1.2"})} (LangGraph copies '
    "text values into every checkpoint's metadata, where the loader reads tool_versions) to "
    "compare them before a resume"
)

LANGGRAPH = Runtime(
    "langgraph",
    uncarried={"missing-schema-version": _LG_SCHEMA, "missing-run-metadata": _LG_RUN_METADATA},
    applied_kinds=frozenset({"write"}),
    forked_on_purpose=_lg_fork,
    resume_hint=_lg_resume,
    state_elsewhere=_lg_functional,
    tool_calls_in_state=True,
)
"""LangGraph checkpointers (SqliteSaver, PostgresSaver): no schema or tool versions; pending
writes of finished tasks are applied by LangGraph on resume; ``update_state`` and replays are
forks made on purpose; a parked run resumes with ``Command(resume=...)``; an entrypoint's
(functional API) state is its output, not what a resume starts from."""


def _oai_resume(head: Checkpoint) -> str | None:
    oai = _meta(head).get("openai_agents")
    if not (isinstance(oai, dict) and oai.get("source") == "run_state"):
        return None
    asks = ", ".join(str(a.get("id")) for a in open_interrupts(head)) or "the open calls"
    return (
        f"resume with state = await RunState.from_string(agent, open({oai.get('file')!r}).read()),"
        f" state.approve(item) or state.reject(item) for each of state.get_interruptions() "
        f"({asks}), then await Runner.run(agent, state)"
    )


_OAI_SCHEMA = (
    "an OpenAI Agents session records no schema version (only a saved RunState carries "
    "$schemaVersion): keep the version of your own state in the session id or save the "
    "RunState (result.to_state().to_string()) at each pause"
)
_OAI_RUN_METADATA = (
    "the OpenAI Agents SDK saves neither the model name nor tool versions in sessions or "
    "RunState: record them in your own metadata (e.g. the trace metadata of RunConfig) to "
    "compare them before a resume"
)
_OAI_BUDGETS = (
    "a plain SQLiteSession records no token usage: use AdvancedSQLiteSession and call "
    "session.store_run_usage(result) after each run (its turn_usage table gives the tokens)"
)

OPENAI_AGENTS = Runtime(
    "openai-agents",
    uncarried={
        "missing-schema-version": _OAI_SCHEMA,
        "missing-run-metadata": _OAI_RUN_METADATA,
        "missing-budgets": _OAI_BUDGETS,
    },
    resume_hint=_oai_resume,
    tool_calls_in_state=True,
)
"""The OpenAI Agents SDK (sessions, RunState files): no state-schema version in a session, no
model or tool versions anywhere, no tokens in a plain SQLiteSession; a function call without
output is a call the items ask for; a parked RunState resumes with approve/reject."""


def _pai_resume(head: Checkpoint) -> str | None:
    asks = open_interrupts(head)
    if not asks:
        return None
    ids = ", ".join(f"{a.get('id')!r}: True" for a in asks)
    return (
        "resume with agent.run(message_history=MESSAGES, deferred_tool_results="
        f"DeferredToolResults(approvals={{{ids}}})) (False, or ToolDenied, to refuse; "
        "external calls answer in calls=), MESSAGES the saved history"
    )


PYDANTIC_AI = Runtime(
    "pydantic-ai",
    uncarried={
        "missing-schema-version": (
            "a pydantic-ai message history has no schema version: save one beside the "
            'messages (e.g. {"schema_version": 2, "messages": [...]}) if your state changes shape'
        ),
        "missing-run-metadata": (
            "pydantic-ai records the model (model_name on each response) but no tool versions: "
            "keep them with the saved history to compare them before a resume"
        ),
    },
    resume_hint=_pai_resume,
    tool_calls_in_state=True,
)
"""pydantic-ai message histories: no schema or tool versions; an unanswered tool call is one
the history asks for; a run parked on deferred tool calls resumes with DeferredToolResults."""


def _crew_resume(head: Checkpoint) -> str | None:
    fb = _meta(head).get("feedback")
    asks = open_interrupts(head)
    if not isinstance(fb, dict) or not asks:
        return None
    flow_class = str(fb.get("flow_class") or "YourFlow").rsplit(".", 1)[-1]
    return (
        f"resume with {flow_class}.from_pending({head.run_id!r}, SQLiteFlowPersistence(DB))"
        f".resume(FEEDBACK), FEEDBACK answering: {_value_text(asks[0].get('value'))}"
    )


CREWAI = Runtime(
    "crewai",
    uncarried={
        "missing-schema-version": (
            "CrewAI keeps no version of a flow's state: add an integer schema_version field "
            "to the state model (the loader reads it from each persisted state)"
        ),
        "missing-run-metadata": (
            "CrewAI flow persistence records no model or tool versions: keep them in the "
            "flow's state to compare them before a resume"
        ),
    },
    resume_hint=_crew_resume,
)
"""CrewAI flows (``@persist``): no model or tool versions, no state version unless the state
model has one; a flow parked for feedback resumes with ``from_pending(...).resume(...)``."""


def _adk_resume(head: Checkpoint) -> str | None:
    asked = _meta(head).get("interrupt")
    adk = _meta(head).get("adk")
    session = adk.get("session_id") if isinstance(adk, dict) else None
    if not isinstance(asked, dict) or not asked.get("request_id"):
        return None
    return (
        f"resume with runner.run_async(user_id=..., session_id={session!r}, new_message=a "
        "user Content whose part is FunctionResponse(id="
        f"{asked['request_id']!r}, name='adk_request_confirmation', response={{'confirmed': "
        f"True}})): ADK then runs {asked.get('tool')} once"
    )


ADK = Runtime(
    "adk",
    uncarried={
        "missing-schema-version": (
            "ADK keeps no state-schema version: put one in the session state when it is "
            "created, create_session(..., state={'schema_version': 2}) (the loader reads the "
            "state's schema_version key)"
        ),
        "missing-run-metadata": (
            "ADK records the model version on model events but no tool versions: keep them "
            "in the app state, e.g. state {'app:tool_versions': {'issue_refund': '1.4'}} "
            "(the loader reads tool_versions or app:tool_versions from the state)"
        ),
    },
    applied_kinds=frozenset({"held_tool_call"}),
    resume_hint=_adk_resume,
)
"""Google ADK sessions: no schema or tool versions; a call held for a tool confirmation has
not run (ADK runs it once on ``confirmed: true``), so it is not in doubt."""

TEMPORAL = Runtime(
    "temporal",
    uncarried={
        "missing-schema-version": (
            "Temporal keeps no state-schema version: the workflow's code version is its "
            "patches (workflow.patched, kept as markers) and the worker's build id (shown "
            "in tool_versions); a workflow can record a version in its input or a memo"
        ),
        "missing-run-metadata": (
            "Temporal records the SDK version and the worker's build id (tool_versions) but "
            "no model version: an activity that calls a model can return the model's "
            "version with its result"
        ),
    },
    resume_hint=lambda head: (
        "Temporal resumes the workflow itself: send the signal (or update) it waits for, "
        "e.g. temporal workflow signal --workflow-id "
        f"{(_meta(head).get('temporal') or {}).get('workflow_id', 'ID')} --name NAME "
        "--input JSON"
    ),
)
"""Temporal histories: an activity has its key (workflow id + activity id); no schema or
model versions; a waiting workflow resumes on a signal, sent to Temporal."""

RUNTIMES: dict[str, Runtime] = {
    r.name: r for r in (NATIVE, LANGGRAPH, ADK, TEMPORAL, OPENAI_AGENTS, PYDANTIC_AI, CREWAI)
}
"""Every known runtime by flavour name; a flavour not listed (``mapped``) is held to the
whole contract, like the native runtime."""


def runtime_of(flavour: str | None, checkpoints: list[Checkpoint]) -> Runtime:
    """The runtime of a run: by its import flavour, else from its checkpoints' metadata.

    Records built by hand have no flavour; a checkpoint mapped by the LangGraph loader carries
    ``metadata.langgraph`` (saver, thread, namespace), which is enough to tell.
    """
    if flavour in RUNTIMES:
        return RUNTIMES[flavour]
    if flavour is None and any(isinstance(_meta(c).get("langgraph"), dict) for c in checkpoints):
        return LANGGRAPH
    return NATIVE
