"""The HTTP pieces of the gateway's MCP mount (``gateway.mcp``): the headers passed on,
the answers to what is not a recorded request, where a tool call's span goes, and the
watch for the answer to a request relayed as an SSE stream."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from otel_replay.core.exchange import SSEEvent
from otel_replay.gateway.call import parse_traceparent
from otel_replay.gateway.upstream import HOP_BY_HOP
from otel_replay.providers import mcp as wire
from otel_replay.session.tools import SpanPlace

__all__ = [
    "JSON_TYPE",
    "SSE_TYPE",
    "Answered",
    "passed_headers",
    "replayed_other",
    "session_echo",
    "span_place",
    "unknown_server",
]

_DROPPED = HOP_BY_HOP | {"host", "content-length", "accept-encoding", "content-encoding"}
JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"


def passed_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _DROPPED}


class Answered:
    """Told once the answer to the request with id ``request_id`` is complete."""

    def __init__(
        self,
        request_id: Any,
        tell: Callable[[int, Mapping[str, str], bytes, Any], None],
        *,
        listens: bool = False,
    ) -> None:
        self.request_id = request_id
        self._tell = tell
        self.listens = listens  # a stream left open: its first event is its answer
        self.told = False

    def answers(self, event: SSEEvent) -> bool:
        return self.listens or bool(wire.response_id(event.data) == self.request_id)

    def tell(self, status: int, headers: Mapping[str, str], body: bytes, events: Any) -> None:
        self.told = True
        self._tell(status, headers, body, events)


def session_echo(request: web.Request) -> dict[str, str]:
    value = request.headers.get(wire.SESSION_HEADER)
    return {wire.SESSION_HEADER: value} if value else {}


def replayed_other(request: web.Request) -> web.Response:
    """GET (a stream the server would open: not offered) or DELETE (nothing to end)."""
    if request.method == "DELETE":
        return web.Response(status=200, headers=session_echo(request))
    return web.Response(status=405, headers={"allow": "POST, DELETE"})


def unknown_server(name: str) -> web.Response:
    detail = f"otel-replay: no MCP server {name} was given (--mcp {name}=URL)"
    return web.json_response(wire.error_message(None, detail), status=404)


def span_place(request: web.Request, message: dict[str, Any], start_ns: int) -> SpanPlace:
    """Where a tool call's span goes and what it says of the transport."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    carried = meta.get("traceparent") if isinstance(meta, dict) else None
    trace_id, parent = parse_traceparent(carried or request.headers.get("traceparent"))
    protocol = request.headers.get("mcp-protocol-version")
    if protocol is None and isinstance(meta, dict):
        protocol = meta.get("io.modelcontextprotocol/protocolVersion")
    if protocol is None and isinstance(params, dict) and message.get("method") == "initialize":
        protocol = params.get("protocolVersion")
    return SpanPlace(
        request_id=message.get("id"),
        protocol=protocol if isinstance(protocol, str) else None,
        start_ns=start_ns,
        trace_id=trace_id,
        parent=parent,
    )
