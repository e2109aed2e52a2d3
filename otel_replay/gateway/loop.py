"""The gateway's event loop: uvloop's where it is installed, else asyncio's.

Per recorded or replayed call, the loop's own work (waking on a socket, reading it,
scheduling the handler, writing the answer) is a large part of what the gateway adds;
uvloop does it in C, over libuv. The gateway uses nothing uvloop lacks."""

from __future__ import annotations

import asyncio


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # a platform without its wheels
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
