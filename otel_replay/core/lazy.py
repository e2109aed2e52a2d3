"""Modules an event loop loads on a worker thread, serving meanwhile.

Importing protobuf, gRPC or the span encoder takes tens of milliseconds (over a hundred
on a machine whose disk cache is cold): done on the loop itself, it would hold every
request that arrives meanwhile (an agent's first model call, waiting while the gateway
starts). Work on the loop that needs such a module while it is still being loaded waits
for that load (``pending``) rather than importing it too: the import would hold the loop
on the module's lock until the worker thread is done."""

from __future__ import annotations

import asyncio
import importlib

__all__ = ["import_meanwhile", "pending"]

_LOADING: dict[str, asyncio.Future[object]] = {}


async def import_meanwhile(*names: str) -> None:
    """Import the modules ``names``, in turn, on the loop's default executor."""
    loop = asyncio.get_running_loop()
    for name in names:
        loading = _LOADING[name] = loop.run_in_executor(None, importlib.import_module, name)
        try:
            await loading
        finally:
            if _LOADING.get(name) is loading:
                del _LOADING[name]


def pending(name: str) -> asyncio.Future[object] | None:
    """The load of module ``name`` that the running loop has in flight, to wait for; None
    when there is none (imported, never asked for, or loaded by another loop)."""
    loading = _LOADING.get(name)
    if loading is None or loading.done():
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loading if loading.get_loop() is loop else None
