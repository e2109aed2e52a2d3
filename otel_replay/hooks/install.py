"""Installing the framework adapters (``hooks.frameworks``), as a pair with removing them.

A framework already imported is patched at once; one imported later is patched as its
module finishes loading (a finder on ``sys.meta_path`` that wraps the module's loader, as
OpenTelemetry's instrumentations do), so installing costs nothing for frameworks an
agent never imports. An adapter whose seam this framework version lacks says so once
and leaves its tools live.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

__all__ = ["ADAPTERS", "install", "installed", "uninstall"]

_FRAMEWORKS = "otel_replay.hooks.frameworks."
ADAPTERS: dict[str, str] = {
    "pydantic_ai.toolsets.function": _FRAMEWORKS + "pydantic_ai",
    "agents.tool": _FRAMEWORKS + "openai_agents",
    "langchain_core.tools.structured": _FRAMEWORKS + "langchain",
    "langchain_core.tools.simple": _FRAMEWORKS + "langchain",
    "llama_index.core.tools.function_tool": _FRAMEWORKS + "llama_index",
}
"""The module each adapter patches, and the adapter (its ``install`` / ``uninstall``
pair), imported only once that module loads: installing costs a Python that never
imports a framework (every child of a run) next to nothing."""


def _adapter(name: str) -> ModuleType:
    return importlib.import_module(ADAPTERS[name])


_LOCK = threading.Lock()
_PATCHED: set[str] = set()


def _patch(module: ModuleType) -> None:
    name = module.__name__
    with _LOCK:
        if name in _PATCHED:
            return
        _PATCHED.add(name)
    import logging

    log = logging.getLogger("otel_replay")
    try:
        done = _adapter(name).install(module)
    except Exception:  # an adapter must never break the agent's import
        log.exception("otel-replay: could not hook the tools of %s", name)
        return
    if not done:
        log.warning("otel-replay: %s has no tool seam otel-replay knows: its tools run live", name)


class _Loader:
    """A module's loader, then the adapter's patch (a loader by its methods: no
    ``importlib.abc`` import as every child of a run starts)."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module)


class _Finder:
    """Wraps the loader of an adapted module, so it is patched once loaded."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in ADAPTERS or fullname in _PATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)  # type: ignore[assignment]
                return spec
        return None


_FINDER = _Finder()


def install() -> None:
    """Hook the tools of every framework otel-replay adapts, now or as it is imported."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in ADAPTERS:
        module = sys.modules.get(name)
        if module is not None:
            _patch(module)


def installed() -> bool:
    return _FINDER in sys.meta_path


def uninstall() -> None:
    """Remove every adapter (the frameworks' seams as they were)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in list(_PATCHED):
        module = sys.modules.get(name)
        if module is not None:
            _adapter(name).uninstall(module)
        _PATCHED.discard(name)
