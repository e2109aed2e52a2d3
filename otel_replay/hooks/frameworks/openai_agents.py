"""openai-agents: each ``FunctionTool``'s ``on_invoke_tool`` (``@function_tool``), which
takes the model's JSON arguments and returns what the model is shown — the SDK's error
text included when the function failed and a failure function handled it. The recorded
output comes back as that return value."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from otel_replay.hooks.calls import acall_tool

__all__ = ["MODULE", "install", "uninstall"]

MODULE = "agents.tool"
_ORIGINAL = "__otel_replay_original__"


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {"input": text}


def _wrapped(tool: Any) -> None:
    invoke = tool.__dict__.get("on_invoke_tool")
    if invoke is None or getattr(invoke, _ORIGINAL, None) is not None:
        return

    async def on_invoke_tool(ctx: Any, arguments: str) -> Any:
        return await acall_tool(tool.name, _arguments(arguments), lambda: invoke(ctx, arguments))

    setattr(on_invoke_tool, _ORIGINAL, invoke)
    for marker in dir(invoke):
        if marker.startswith("__agents_"):  # the SDK's own marks on its invoker
            setattr(on_invoke_tool, marker, getattr(invoke, marker))
    tool.on_invoke_tool = on_invoke_tool


def install(module: ModuleType) -> bool:
    """Wrap the invoker of every ``FunctionTool`` made from now on; False when this
    openai-agents has no such seam."""
    function_tool = getattr(module, "FunctionTool", None)
    post_init = getattr(function_tool, "__post_init__", None)
    if function_tool is None or post_init is None:
        return False
    if getattr(post_init, _ORIGINAL, None) is not None:
        return True

    def __post_init__(self: Any) -> None:
        post_init(self)
        _wrapped(self)

    setattr(__post_init__, _ORIGINAL, post_init)
    function_tool.__post_init__ = __post_init__
    return True


def uninstall(module: ModuleType) -> None:
    function_tool = getattr(module, "FunctionTool", None)
    original = getattr(getattr(function_tool, "__post_init__", None), _ORIGINAL, None)
    if function_tool is not None and original is not None:
        function_tool.__post_init__ = original
