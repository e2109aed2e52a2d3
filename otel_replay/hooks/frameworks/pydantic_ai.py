"""pydantic-ai: ``FunctionToolset.call_tool``, where a validated call of a function tool
runs (``@agent.tool``, ``@agent.tool_plain``, ``Tool(...)``). The recorded value comes
back as the function's return value, which pydantic-ai then serialises for the model as
it serialised the real one."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from otel_replay.hooks.calls import acall_tool

__all__ = ["MODULE", "install", "uninstall"]

MODULE = "pydantic_ai.toolsets.function"
_ORIGINAL = "__otel_replay_original__"


def install(module: ModuleType) -> bool:
    """Wrap ``FunctionToolset.call_tool``; False when this pydantic-ai has no such seam."""
    toolset = getattr(module, "FunctionToolset", None)
    original = getattr(toolset, "call_tool", None)
    if toolset is None or original is None:
        return False
    if getattr(original, _ORIGINAL, None) is not None:
        return True

    async def call_tool(
        self: Any, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any
    ) -> Any:
        return await acall_tool(name, tool_args, lambda: original(self, name, tool_args, ctx, tool))

    setattr(call_tool, _ORIGINAL, original)
    toolset.call_tool = call_tool
    return True


def uninstall(module: ModuleType) -> None:
    toolset = getattr(module, "FunctionToolset", None)
    original = getattr(getattr(toolset, "call_tool", None), _ORIGINAL, None)
    if toolset is not None and original is not None:
        toolset.call_tool = original
