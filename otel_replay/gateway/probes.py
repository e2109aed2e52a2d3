"""Requests that are not model calls, answered at once and never recorded or counted.

- A WebSocket upgrade on a path no API serves over a WebSocket gets ``426 Upgrade
  Required``: the client's signal that the server speaks only plain HTTP there, on which
  Codex falls back to HTTP streaming for the rest of the session. (The Responses API's
  WebSocket mode, the Realtime API and the Gemini Live API are served: the gateway hands
  those upgrades to ``websocket``, which answers the same ``426`` in a replay of calls
  the provider had made over HTTP by refusing the upgrade.)
- A connectivity probe (Claude Code's ``HEAD /``; any ``HEAD``, which carries no model
  call; a ``GET /``) gets ``200`` with nothing in it. Other paths no provider owns are
  still answered 404 by the gateway, uncounted.
- The token exchange of the placeholder Google credentials a replay gives an agent on
  Vertex AI (``POST /_otel_replay/google/token``) gets a placeholder token.

:func:`probe` decides from the method, path and headers alone; the gateway writes the
answer before routing, so neither reaches an upstream, a cassette or the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from aiohttp import web

from otel_replay.providers import vertex

__all__ = ["Probe", "answer", "probe"]

Probe = Literal["websocket", "connectivity", "token"]


def probe(method: str, path: str, headers: Mapping[str, str]) -> Probe | None:
    """What kind of non-model request this is (``headers`` read by lower-case names:
    a case-insensitive mapping, or one with lower-case names), or None for anything else."""
    upgrade = headers.get("upgrade", "")
    if upgrade and "websocket" in upgrade.lower():
        return "websocket"
    if method == "HEAD" or (method == "GET" and path == "/"):
        return "connectivity"
    if method == "POST" and path == vertex.TOKEN_PATH:
        return "token"
    return None


def answer(kind: Probe) -> web.Response:
    """The quick answer to a probe of ``kind``."""
    if kind == "websocket":
        message = "otel-replay: WebSockets are not served; use HTTP (server-sent events)"
        return web.json_response(
            {"error": {"message": message, "type": "websocket_not_supported"}},
            status=426,
            headers={"x-should-retry": "false"},
        )
    if kind == "token":
        return web.json_response(vertex.token_answer())
    # a body in bytes, as a replayed answer's: the gateway's ``GET /`` of itself at its
    # start makes aiohttp's first check of such a body (against an ABC, slow at first)
    return web.Response(status=200, body=b"")
