"""The gateway's control route: the ``serve`` protocol's ``use`` line over HTTP, for a
process that does not hold the engine's standard input (a Vitest worker switching an
engine its run's setup started).

``POST /_otel_replay/use`` with the header ``x-otel-replay-token`` carries one protocol
line, ``{"use": {"cassette": PATH, "mode": MODE}}``, and is answered the line standard
input would get: ``{"used": {...}}`` (200) or ``{"error": "…"}`` (400). The route exists
only when the engine was given a token (``OTEL_REPLAY_CONTROL`` in its environment); a
request without it, or with another, is refused (403) before its body is read. The path
is under ``/_otel_replay/``, which no provider API uses.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from otel_replay.gateway.guard import Guard, read_body

__all__ = ["CONTROL_PATH", "TOKEN_HEADER", "Control"]

CONTROL_PATH = "/_otel_replay/use"
TOKEN_HEADER = "x-otel-replay-token"
_BODY_SECONDS = 30.0


@dataclass(frozen=True)
class Control:
    """The token a control request must carry, and what answers its line: the function
    standard input's lines go to (None: not a request), on a thread of its own (it may
    wait for the gateway's loop); first ``at_once``, on the loop, which answers when it
    can without waiting (None: it cannot, and ``answer`` does)."""

    token: str
    answer: Callable[[str], dict[str, Any] | None]
    at_once: Callable[[str], dict[str, Any] | None] | None = None

    def add_route(self, app: web.Application, guard: Guard) -> None:
        app.router.add_route("POST", CONTROL_PATH, guard(self.handle))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        given = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            response = _answer({"error": "otel-replay: the control route needs its token"}, 403)
            response.force_close()  # the body is not read
            return response
        raw = await read_body(request, _BODY_SECONDS)
        if not isinstance(raw, bytes):
            return raw
        line = raw.decode("utf-8", "replace")
        said = self.at_once(line) if self.at_once is not None else None
        if said is None:  # on a thread: the switch waits for the gateway's own loop, this one
            said = await asyncio.to_thread(self.answer, line)
        if said is None:
            said = {"error": 'otel-replay: the body is one line {"use": {...}}'}
        return _answer(said, 400 if "error" in said else 200)


def _answer(message: dict[str, Any], status: int) -> web.Response:
    return web.json_response(message, status=status, headers={"x-should-retry": "false"})
