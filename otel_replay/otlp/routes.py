"""The OTLP/HTTP endpoints on an aiohttp app, registered before their receiver is loaded.

The receiver (``otlp/http.py``, given the paths: it imports nothing from here) needs
protobuf and the OTLP messages, tens of milliseconds to import. A gateway started for an
agent serves the agent's model calls first: each endpoint loads the receiver, on a worker
thread, at the first export it is sent (``core/lazy.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from otel_replay.core.lazy import import_meanwhile

if TYPE_CHECKING:
    from otel_replay.otlp.store import StoreSource

__all__ = ["PATHS", "Handler", "add_otlp_routes"]

PATHS = ("/v1/traces", "/v1/logs", "/v1/metrics")
"""The signals' paths, in the receiver's order."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_otlp_routes(
    app: web.Application,
    store: StoreSource,
    *,
    max_body: int = 32 * 1024 * 1024,
    read_timeout: float = 30.0,
    wrap: Callable[[Handler], Handler] | None = None,
) -> None:
    """Register the OTLP/HTTP endpoints on ``app``, storing into ``store`` (or the store a
    zero-argument function returns at each request).

    ``max_body`` limits both the body on the wire and the body after decompression; the app
    itself may allow larger bodies, since the handler reads in chunks and stops early.
    ``read_timeout``: seconds the body may take to arrive in full (then 408). ``wrap``:
    what each handler is registered wrapped in (the gateway's host guard).
    """
    loaded: dict[str, Handler] = {}

    def endpoint(path: str) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            if not loaded:
                await import_meanwhile("otel_replay.otlp.http")
                from otel_replay.otlp.http import handlers

                loaded.update(handlers(PATHS, store, max_body, read_timeout))
            return await loaded[path](request)

        return handle

    for path in PATHS:
        handler = endpoint(path)
        app.router.add_post(path, handler if wrap is None else wrap(handler))
