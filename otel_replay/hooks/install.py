"""Installing the framework adapters (``hooks.frameworks``), as a pair with removing them.

A framework already imported is patched at once; one imported later is patched as its
module finishes loading (a finder on ``sys.meta_path`` that wraps the module's loader, as
OpenTelemetry's instrumentations do), so installing costs nothing for frameworks an
agent never imports. An adapter whose seam this framework version lacks says so once
and leaves its tools live.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

from otel_replay.hooks.frameworks import langchain, openai_agents, pydantic_ai

__all__ = ["ADAPTERS", "install", "installed", "uninstall"]

log = logging.getLogger("otel_replay")

Install = Callable[[ModuleType], bool]
Uninstall = Callable[[ModuleType], None]

ADAPTERS: dict[str, tuple[Install, Uninstall]] = {
    pydantic_ai.MODULE: (pydantic_ai.install, pydantic_ai.uninstall),
    openai_agents.MODULE: (openai_agents.install, openai_agents.uninstall),
    **{name: (langchain.install, langchain.uninstall) for name in langchain.MODULES},
}
"""The module each adapter patches, and its pair of functions."""

_LOCK = threading.Lock()
_PATCHED: set[str] = set()


def _patch(module: ModuleType) -> None:
    name = module.__name__
    with _LOCK:
        if name in _PATCHED:
            return
        _PATCHED.add(name)
    try:
        done = ADAPTERS[name][0](module)
    except Exception:  # an adapter must never break the agent's import
        log.exception("otel-replay: could not hook the tools of %s", name)
        return
    if not done:
        log.warning("otel-replay: %s has no tool seam otel-replay knows: its tools run live", name)


class _Loader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of an adapted module, so it is patched once loaded."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in ADAPTERS or fullname in _PATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
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
            ADAPTERS[name][1](module)
        _PATCHED.discard(name)
