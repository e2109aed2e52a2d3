"""Modules an event loop loads on a worker thread, serving meanwhile.

Importing protobuf, gRPC or the span encoder takes tens of milliseconds: done on the loop
itself, it would hold every request that arrives meanwhile (an agent's first model call,
waiting while the gateway starts)."""

from __future__ import annotations

import asyncio
import importlib

__all__ = ["import_meanwhile"]


async def import_meanwhile(*names: str) -> None:
    """Import the modules ``names``, in turn, on the loop's default executor."""
    loop = asyncio.get_running_loop()
    for name in names:
        await loop.run_in_executor(None, importlib.import_module, name)
