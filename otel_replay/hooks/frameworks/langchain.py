"""LangChain / LangGraph: ``StructuredTool`` and ``Tool`` (``@tool``,
``StructuredTool.from_function``), where ``_run`` / ``_arun`` call the user's function.
The recorded value comes back as the function's return value, so LangChain builds the
``ToolMessage`` (content and artifact) as it did from the real one."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from otel_replay.hooks.calls import acall_tool, call_tool

__all__ = ["MODULES", "install", "uninstall"]

MODULES = {
    "langchain_core.tools.structured": "StructuredTool",
    "langchain_core.tools.simple": "Tool",
}
_ORIGINAL = "__otel_replay_original__"


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"args": list(args), **kwargs} if args else dict(kwargs)


def _as_returned(tool: Any, value: Any) -> Any:
    """A replayed value in the form the tool returns: content and artifact as a pair."""
    if getattr(tool, "response_format", None) == "content_and_artifact" and isinstance(value, list):
        return tuple(value)
    return value


def install(module: ModuleType) -> bool:
    """Wrap the tool class's ``_run`` and ``_arun``; False when it has no such seam."""
    cls = getattr(module, MODULES.get(module.__name__, ""), None)
    run, arun = getattr(cls, "_run", None), getattr(cls, "_arun", None)
    if cls is None or run is None or arun is None:
        return False
    if getattr(run, _ORIGINAL, None) is not None:
        return True

    @functools.wraps(run)  # LangChain reads the signature (``config``, ``run_manager``)
    def _run(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked = {k: v for k, v in kwargs.items() if k not in ("config", "run_manager")}
        value = call_tool(self.name, _arguments(args, asked), lambda: run(self, *args, **kwargs))
        return _as_returned(self, value)

    @functools.wraps(arun)
    async def _arun(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked = {k: v for k, v in kwargs.items() if k not in ("config", "run_manager")}
        called = lambda: arun(self, *args, **kwargs)  # noqa: E731
        return _as_returned(self, await acall_tool(self.name, _arguments(args, asked), called))

    setattr(_run, _ORIGINAL, run)
    setattr(_arun, _ORIGINAL, arun)
    cls._run, cls._arun = _run, _arun
    return True


def uninstall(module: ModuleType) -> None:
    cls = getattr(module, MODULES.get(module.__name__, ""), None)
    for name in ("_run", "_arun"):
        original = getattr(getattr(cls, name, None), _ORIGINAL, None)
        if original is not None:
            setattr(cls, name, original)
