"""LlamaIndex: each ``FunctionTool``'s function (``FunctionTool.from_defaults``, the tools
a ``FunctionAgent`` / ``ReActAgent`` calls), wrapped as the tool is made, so ``call`` /
``acall`` build the ``ToolOutput`` (content blocks, ``raw_output``) from the recorded value
as they did from the real one. The ``Context`` a tool may take is not an argument."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from otel_replay.hooks.calls import acall_tool, call_tool

__all__ = ["install", "uninstall"]

_ORIGINAL = "__otel_replay_original__"


def _arguments(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    context = getattr(tool, "ctx_param_name", None)
    asked = {k: v for k, v in kwargs.items() if k != context}
    return {"args": list(args), **asked} if args else asked


def _wrapped(tool: Any) -> None:
    name = tool.metadata.get_name()
    sync, coro = tool.__dict__.get("_fn"), tool.__dict__.get("_async_fn")
    if callable(sync) and getattr(sync, _ORIGINAL, None) is None:

        @functools.wraps(sync)
        def fn(*args: Any, **kwargs: Any) -> Any:
            return call_tool(name, _arguments(tool, args, kwargs), lambda: sync(*args, **kwargs))

        setattr(fn, _ORIGINAL, sync)
        tool._fn = fn
    if callable(coro) and getattr(coro, _ORIGINAL, None) is None:

        @functools.wraps(coro)
        async def async_fn(*args: Any, **kwargs: Any) -> Any:
            asked = _arguments(tool, args, kwargs)
            return await acall_tool(name, asked, lambda: coro(*args, **kwargs))

        setattr(async_fn, _ORIGINAL, coro)
        tool._async_fn = async_fn


def install(module: ModuleType) -> bool:
    """Wrap the functions of every ``FunctionTool`` made from now on; False when this
    LlamaIndex has no such seam."""
    function_tool = getattr(module, "FunctionTool", None)
    init = getattr(function_tool, "__init__", None)
    if function_tool is None or init is None or not hasattr(function_tool, "acall"):
        return False
    if getattr(init, _ORIGINAL, None) is not None:
        return True

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _wrapped(self)

    setattr(__init__, _ORIGINAL, init)
    function_tool.__init__ = __init__
    return True


def uninstall(module: ModuleType) -> None:
    function_tool = getattr(module, "FunctionTool", None)
    original = getattr(getattr(function_tool, "__init__", None), _ORIGINAL, None)
    if function_tool is not None and original is not None:
        function_tool.__init__ = original
