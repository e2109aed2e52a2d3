"""The agent's own tools (functions in its process) asking the gateway what to do.

A hook at a framework's tool boundary (``otel_replay.hooks``) describes each call as
``{"name", "arguments", "start_ns", "traceparent"}`` and asks ``answer_call``: replay it
(``{"do": "replay", "outcome": …}``, the recorded outcome), run it and tell how it ended
(``{"do": "record"}``, then ``record_call`` with the outcome), run it untold
(``{"do": "live"}``), or not at all (``{"do": "miss", "message": …}``). The decision is
the session's one (``ToolCalls.decide``), the same the MCP mount takes.

The hooks of a child process ask over HTTP (``/tools/call``, ``/tools/recorded``: the
road ``mcp-stdio`` takes); those of the gateway's own process (the Python API, the pytest
plugin) call the same two functions directly, found by the gateway's URL (``local``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import JSON, Exchange, Response
from otel_replay.gateway.call import parse_traceparent
from otel_replay.gateway.guard import Guard, read_body
from otel_replay.providers import mcp as wire
from otel_replay.session.session import Session
from otel_replay.session.tools import LIVE, OWN_TOOLS, SpanPlace, ToolCalls

__all__ = ["OwnToolsMount", "answer_call", "local", "record_call", "serving", "unserving"]

CALL_PATH = "/tools/call"
RECORDED_PATH = "/tools/recorded"
_JSON = {"content-type": "application/json"}

_LOCAL: dict[str, Callable[[], Session]] = {}
_LOCAL_LOCK = threading.Lock()


def serving(url: str, session: Callable[[], Session]) -> None:
    """The gateway at ``url`` runs in this process: hooks here ask it directly."""
    with _LOCAL_LOCK:
        _LOCAL[url.rstrip("/")] = session


def unserving(url: str) -> None:
    with _LOCAL_LOCK:
        _LOCAL.pop(url.rstrip("/"), None)


def local(url: str) -> Callable[[], Session] | None:
    """The session of the gateway at ``url`` when it runs in this process."""
    return _LOCAL.get(url.rstrip("/"))


def _message(doc: dict[str, Any]) -> dict[str, Any]:
    arguments = doc.get("arguments")
    params = {"name": str(doc["name"]), "arguments": arguments if arguments is not None else {}}
    return {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": params}


def _place(doc: dict[str, Any], start_ns: int) -> SpanPlace:
    trace_id, parent = parse_traceparent(doc.get("traceparent"))
    return SpanPlace(transport="inproc", start_ns=start_ns, trace_id=trace_id, parent=parent)


def answer_call(session: Session, doc: dict[str, Any]) -> dict[str, JSON]:
    """What the hook of a tool call ``doc`` does (see the module's docstring)."""
    tools: ToolCalls = session.tools
    message = _message(doc)
    found = tools.decide(wire.canonical(wire.ANY_SERVER, message))
    if isinstance(found, int):
        place = _place(doc, int(doc.get("start_ns") or time.time_ns()))
        tools.replayed(found, place)
        answer = tools.recorded[found].response.body
        outcome = answer.get("result") if isinstance(answer, dict) else None
        return {"do": "replay", "outcome": outcome if isinstance(outcome, dict) else {}}
    if isinstance(found, ReplayMiss):
        tools.missed(found, OWN_TOOLS, message)
        return {"do": "miss", "message": str(found)}
    return {"do": "live" if found == LIVE else "record"}


def record_call(session: Session, doc: dict[str, Any]) -> None:
    """A tool call the hook ran (``answer_call`` said ``record``) and how it ended:
    ``{"name", "arguments", "outcome", "start_ns", "end_ns", "traceparent"}``."""
    message = _message(doc)
    answer = {"jsonrpc": "2.0", "id": 0, "result": doc.get("outcome") or {}}
    exchange = Exchange(
        provider=wire.MCP,
        operation="tools/call",
        request=wire.canonical(wire.ANY_SERVER, message),
        response=Response(status=200, headers=dict(_JSON), body=answer),
        end_ns=int(doc.get("end_ns") or time.time_ns()),
    )
    place = _place(doc, int(doc.get("start_ns") or time.time_ns()))
    session.tools.made_live(exchange, place)


class OwnToolsMount:
    """``/tools/call`` and ``/tools/recorded`` on the gateway, for hooks in a child."""

    def __init__(self, session: Callable[[], Session], body_timeout: float) -> None:
        self._session = session
        self._body_timeout = body_timeout

    def add_routes(self, app: web.Application, guard: Guard) -> None:
        app.router.add_route("POST", CALL_PATH, guard(self.call))
        app.router.add_route("POST", RECORDED_PATH, guard(self.recorded))

    async def _doc(self, request: web.Request) -> dict[str, Any] | web.Response:
        raw = await read_body(request, self._body_timeout)
        if not isinstance(raw, bytes):
            return raw
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
            return web.json_response({"error": "expected a tool call's name"}, status=400)
        return doc

    async def call(self, request: web.Request) -> web.Response:
        doc = await self._doc(request)
        if isinstance(doc, web.Response):
            return doc
        body = orjson.dumps(answer_call(self._session(), doc))
        return web.Response(body=body, content_type="application/json")

    async def recorded(self, request: web.Request) -> web.Response:
        doc = await self._doc(request)
        if isinstance(doc, web.Response):
            return doc
        record_call(self._session(), doc)
        return web.Response(status=204)
