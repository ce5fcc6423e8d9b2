"""Chat models and tools answered by the recorded world, at the LangChain layer.

``BaseChatModel.generate`` / ``agenerate`` (which ``invoke``, ``ainvoke``, ``batch`` and,
with streaming turned off, ``stream`` go through) and ``BaseTool.run`` / ``arun`` (which
``invoke`` and ToolNode go through) are replaced for the whole child process, so a node
that calls a model or a tool by itself is answered too. Nothing reaches a real model or
tool: the replacement never calls the original method.

Where a call comes from (the node, the namespace, the namespace's own step) is read from
the runnable config LangGraph sets for the running task.
"""

from __future__ import annotations

from typing import Any

from debugger.replay.graph.revive import revive
from debugger.replay.graph.world import WRITE_MARK, GraphContext, is_write
from loaders.langgraph.map import idempotency_args, key_in


def _where() -> tuple[str, int | None, int | None]:
    """The calling task's graph namespace, that graph's step, and its ``Send`` index."""
    from langchain_core.runnables.config import var_child_runnable_config

    config = var_child_runnable_config.get() or {}
    ns = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
    meta = config.get("metadata") or {}
    step = meta.get("langgraph_step")
    path: Any = meta.get("langgraph_path") or ()
    push = path[1] if len(path) > 1 and path[0] == "__pregel_push" else None
    # a node's own namespace is ``node:task``; its subgraph's calls have a parent part
    parent = ns.rsplit("|", 1)[0] if "|" in ns else ""
    return (parent, step if isinstance(step, int) else None,
            push if isinstance(push, int) else None)  # fmt: skip


def _as_ai_message(value: Any) -> Any:
    from langchain_core.messages import AIMessage, BaseMessage

    value = revive(value) if isinstance(value, dict) and "__type__" in value else value
    if isinstance(value, BaseMessage):
        return value
    if isinstance(value, dict):
        return AIMessage(**value)
    return AIMessage(content=str(value))


class Interceptor:
    """Installs the replacements and turns each call into a :class:`GraphContext` call."""

    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx
        self.key_names = idempotency_args()

    # -- models ---------------------------------------------------------------------------
    def model(self, messages: list[Any], model_name: str) -> Any:
        """The recorded AI message for one prompt."""
        request = {"messages": [m.id for m in messages if getattr(m, "id", None)]}
        answer, _ = self.ctx.graph_call("model", model_name, request, None, False, _where())
        return _as_ai_message(answer)

    # -- tools ----------------------------------------------------------------------------
    def tool(self, tool: Any, tool_input: Any, tool_call_id: str | None) -> Any:
        """The recorded answer of one tool call (a ToolMessage when it has a call id)."""
        args = self._args(tool, tool_input)
        mark = (getattr(tool, "metadata", None) or {}).get(WRITE_MARK)
        write = is_write(tool.name, self.ctx.writes, mark if isinstance(mark, bool) else None)
        key = key_in(args, self.key_names)
        answer, source = self.ctx.graph_call("tool", tool.name, args, key, write, _where())
        recorded = self.ctx.answers.get(tool_call_id) if tool_call_id else None
        if recorded is not None and source == "tape":
            return revive(recorded)
        return self._tool_output(tool, answer, tool_call_id)

    @staticmethod
    def _args(tool: Any, tool_input: Any) -> Any:
        if not isinstance(tool_input, dict):
            return {"input": tool_input}
        injected = set(getattr(tool, "_injected_args_keys", ()) or ())
        return {k: v for k, v in tool_input.items() if k not in injected}

    @staticmethod
    def _tool_output(tool: Any, answer: Any, tool_call_id: str | None) -> Any:
        from langchain_core.messages import ToolMessage

        if isinstance(answer, dict) and "__type__" in answer:
            answer = revive(answer)
        if tool_call_id is None or isinstance(answer, ToolMessage):
            return answer
        artifact = None
        if isinstance(answer, dict) and set(answer) == {"content", "artifact"}:
            answer, artifact = answer["content"], answer["artifact"]
        content = answer if isinstance(answer, str | list) else repr(answer)
        return ToolMessage(content=content, artifact=artifact, tool_call_id=tool_call_id,
                           name=tool.name)  # fmt: skip

    # -- installing -----------------------------------------------------------------------
    def install(self) -> None:
        """Replace the LangChain methods (for the rest of the child process)."""
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.outputs import ChatGeneration, LLMResult
        from langchain_core.tools import BaseTool

        me = self

        def generate(self: Any, messages: list[list[Any]], *a: Any, **kw: Any) -> Any:
            name = str(getattr(self, "model_name", None) or getattr(self, "model", None)
                       or "model")  # fmt: skip
            gens = [[ChatGeneration(message=me.model(list(m), name))] for m in messages]
            return LLMResult(generations=gens)  # type: ignore[arg-type]

        async def agenerate(self: Any, messages: list[list[Any]], *a: Any, **kw: Any) -> Any:
            return generate(self, messages, *a, **kw)

        def run(self: Any, tool_input: Any, *a: Any, tool_call_id: str | None = None,
                **kw: Any) -> Any:  # fmt: skip
            return me.tool(self, tool_input, tool_call_id)

        async def arun(self: Any, tool_input: Any, *a: Any, tool_call_id: str | None = None,
                       **kw: Any) -> Any:  # fmt: skip
            return me.tool(self, tool_input, tool_call_id)

        BaseChatModel.generate = generate  # type: ignore[method-assign]
        BaseChatModel.agenerate = agenerate  # type: ignore[method-assign]
        BaseChatModel._should_stream = lambda self, **kw: False  # type: ignore[method-assign]
        BaseTool.run = run  # type: ignore[method-assign]
        BaseTool.arun = arun  # type: ignore[method-assign]
