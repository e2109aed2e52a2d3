"""The gateway's MCP mount: MCP server NAME over Streamable HTTP at ``/mcp/NAME``.

Recording (``record``; ``auto`` for a call with no recording, or one a ``live`` rule names)
passes the traffic through to the server given by ``--mcp NAME=URL``: POST with a JSON or
SSE answer (relayed event by event), notifications, the ``Mcp-Session-Id`` the server
issued, GET streams, DELETE; each request with its answer becomes a tool call of the run
(``session.tools``: a span and a cassette interaction). Replaying answers every request
from the cassette without the server: the recorded answer, in its recorded form (JSON or
SSE), readdressed to the request's id, a fresh session id where the server issued one;
notifications and the client's answers are acknowledged (202), a GET stream is not
offered (405, as the protocol allows), DELETE ends nothing. A request no recording
answers is a miss: a JSON-RPC error the client shows, counted in the summary.

``/mcp/NAME/recorded`` takes a request and its answer relayed elsewhere (``otel-replay
mcp-stdio`` between an agent and a stdio server) and records them the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout, web

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import Exchange, Response, SSEEvent
from otel_replay.gateway.guard import Guard, read_body
from otel_replay.gateway.mcp_http import (
    JSON_TYPE,
    SSE_TYPE,
    Answered,
    passed_headers,
    replayed_other,
    session_echo,
    span_place,
    unknown_server,
)
from otel_replay.providers import mcp as wire
from otel_replay.session.session import Session
from otel_replay.session.tools import SpanPlace
from otel_replay.streams import sse

__all__ = ["McpMount"]

log = logging.getLogger("otel_replay.gateway")


class McpMount:
    """``/mcp/NAME`` on the gateway: ``servers()`` maps NAME to the server's URL (read per
    request: a test session's shared gateway serves each block's own)."""

    def __init__(
        self,
        servers: Callable[[], Mapping[str, str]],
        session: Callable[[], Session],
        body_timeout: float,
    ) -> None:
        self.servers = servers
        self._session = session
        self._body_timeout = body_timeout
        self._client: ClientSession | None = None
        self._minted: set[str] = set()  # session ids a replayed initialize issued
        # (server, minted id) -> the session the real server issued for a live call in it
        self._server_sessions: dict[tuple[str, str], str | None] = {}

    def add_routes(self, app: web.Application, guard: Guard) -> None:
        app.router.add_route("POST", "/mcp/{name}/recorded", guard(self.relayed))
        app.router.add_route("*", "/mcp/{name}", guard(self.handle))
        app.on_cleanup.append(self._close)

    async def _close(self, _app: web.Application) -> None:
        if self._client is not None:
            await self._client.close()

    def _upstream(self) -> ClientSession:
        if self._client is None:
            self._client = ClientSession(
                timeout=ClientTimeout(total=None, sock_connect=30), auto_decompress=True
            )
        return self._client

    # -- dispatch ----------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        session = self._session()
        tools = session.tools
        url = self.servers().get(name)
        if url is None and not tools.matches:  # recording a server nobody named
            return unknown_server(name)
        # a session the real server issued (auto mode: its initialize went live) is the
        # server's to hear of, notifications and all
        issued = request.headers.get(wire.SESSION_HEADER)
        theirs = url is not None and issued is not None and issued not in self._minted
        passes = not tools.matches or (tools.mode == "auto" and theirs)
        if request.method != "POST":
            if not passes:
                return replayed_other(request)
            if url is None:
                return unknown_server(name)
            return await self._pass(request, url, b"")
        raw = await read_body(request, self._body_timeout)
        if not isinstance(raw, bytes):
            return raw
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            error = wire.error_message(None, f"otel-replay: not JSON: {exc}", -32700)
            return web.json_response(error, status=400)
        kind = wire.kind(message)
        if kind != "request":  # notifications, the client's answers
            if kind == "invalid" and not passes:  # a batch, or not JSON-RPC
                error = wire.error_message(None, "otel-replay: not one JSON-RPC message", -32600)
                return web.json_response(error, status=400)
            if not passes:
                return web.Response(status=202, headers=session_echo(request))
            if url is None:
                return unknown_server(name)
            return await self._pass(request, url, raw)
        found = tools.decide(wire.canonical(name, message), can_run=url is not None)
        if isinstance(found, int):
            return await self._replay(request, session, found, message)
        if isinstance(found, ReplayMiss):
            return self._miss(request, session, found, message)
        if url is None:
            return unknown_server(name)
        return await self._record(request, session, url, raw, message)

    # -- replay ------------------------------------------------------------------------
    async def _replay(
        self, request: web.Request, session: Session, index: int, message: dict[str, Any]
    ) -> web.StreamResponse:
        start_ns = time.time_ns()
        tools = session.tools
        recorded = tools.recorded[index]
        answer = wire.answer_with_id(recorded.response, message.get("id"))
        place = span_place(request, message, start_ns)
        if wire.speaks_2026(place.protocol):
            answer = wire.with_result_type(answer)
        headers = {k: v for k, v in answer.headers.items() if k != wire.SESSION_HEADER}
        issued = wire.SESSION_HEADER in answer.headers
        if issued and message.get("method") == "initialize":
            headers[wire.SESSION_HEADER] = minted = uuid.uuid4().hex
            self._minted.add(minted)
        else:
            headers.update(session_echo(request))
        if answer.events is not None:
            headers["content-type"] = SSE_TYPE
            body = b"".join(sse.encode(event) for event in answer.events)
        else:
            headers.setdefault("content-type", JSON_TYPE)
            body = b"" if answer.body is None else json.dumps(answer.body).encode()
        if message.get("method") in wire.LISTENING:  # open until the client leaves
            stream = web.StreamResponse(status=answer.status, headers=headers)
            await stream.prepare(request)
            await stream.write(body)
            tools.replayed(index, place)
            await asyncio.Event().wait()  # cancelled as the client leaves or the gateway stops
            return stream
        response = web.Response(status=answer.status, body=body, headers=headers)
        await response.prepare(request)
        await response.write_eof()
        tools.replayed(index, place)
        return response

    def _miss(
        self, request: web.Request, session: Session, miss: ReplayMiss, message: dict[str, Any]
    ) -> web.Response:
        session.tools.missed(miss, request.path, message)
        error = wire.error_message(message.get("id"), str(miss))
        return web.json_response(error, headers=session_echo(request))

    # -- record ------------------------------------------------------------------------
    async def _record(
        self,
        request: web.Request,
        session: Session,
        url: str,
        raw: bytes,
        message: dict[str, Any],
    ) -> web.StreamResponse:
        place = span_place(request, message, time.time_ns())
        name = request.match_info["name"]

        def answered(status: int, headers: Mapping[str, str], body: bytes, events: Any) -> None:
            kept = {
                k.lower(): v
                for k, v in headers.items()
                if k.lower() in wire.KEPT_HEADERS and k.lower() != wire.SESSION_HEADER
            }
            if any(k.lower() == wire.SESSION_HEADER for k in headers):
                kept[wire.SESSION_HEADER] = wire.ISSUED
            parsed: Any = None
            if events is None and body:
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = body.decode("utf-8", "replace")
            response = Response(status=status, headers=kept, body=parsed, events=events)
            self.record(session, name, message, response, place)

        listens = message.get("method") in wire.LISTENING
        swap = None
        minted = request.headers.get(wire.SESSION_HEADER)
        if minted in self._minted:  # a live call in a replayed session: one of the server's
            assert minted is not None
            swap = (minted, await self._server_session(name, url, minted, request))
        return await self._pass(
            request, url, raw, Answered(message.get("id"), answered, listens=listens), swap
        )

    async def _server_session(
        self, name: str, url: str, minted: str, request: web.Request
    ) -> str | None:
        """The session the real server issues for replayed session ``minted`` (None: the
        server keeps none), opened by a handshake of the gateway's own at its first live
        call."""
        key = (name, minted)
        if key in self._server_sessions:
            return self._server_sessions[key]
        protocol = request.headers.get("mcp-protocol-version") or wire.HANDSHAKE_VERSION
        headers = {"accept": f"{JSON_TYPE}, {SSE_TYPE}", "mcp-protocol-version": protocol}
        issued: str | None = None
        try:
            hello = wire.initialize_request(protocol)
            async with self._upstream().post(url, json=hello, headers=headers) as answer:
                await answer.read()
                issued = answer.headers.get(wire.SESSION_HEADER)
            if issued:
                done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                headers[wire.SESSION_HEADER] = issued
                async with self._upstream().post(url, json=done, headers=headers) as answer:
                    await answer.read()
        except (ClientError, OSError) as exc:
            log.warning("otel-replay: no session with the MCP server at %s: %s", url, exc)
        self._server_sessions[key] = issued
        return issued

    @staticmethod
    def record(
        session: Session,
        name: str,
        message: dict[str, Any],
        response: Response,
        place: SpanPlace,
    ) -> None:
        """A request to server ``name`` and the answer it got, made live."""
        exchange = Exchange(
            provider=wire.MCP,
            operation=str(message.get("method")),
            request=wire.canonical(name, message),
            response=response,
        )
        session.tools.made_live(exchange, place)

    async def _pass(
        self,
        request: web.Request,
        url: str,
        raw: bytes,
        answered: Answered | None = None,
        swap: tuple[str, str | None] | None = None,
    ) -> web.StreamResponse:
        """Relay ``request`` to ``url`` and its answer back, an SSE answer event by event;
        ``answered`` is told the answer once it is complete: a JSON one as read, an SSE
        one as the event carrying the response passes (or at the stream's end). ``swap``:
        the client's session id and the server's, exchanged on the way."""
        client = self._upstream()
        started = time.monotonic()
        outgoing = passed_headers(request.headers)
        if swap is not None:
            outgoing = {k: v for k, v in outgoing.items() if k.lower() != wire.SESSION_HEADER}
            if swap[1]:
                outgoing[wire.SESSION_HEADER] = swap[1]
        try:
            upstream = await client.request(
                request.method,
                url,
                data=raw if request.method == "POST" else None,
                headers=outgoing,
                allow_redirects=False,
            )
        except (ClientError, OSError) as exc:
            detail = f"otel-replay: the MCP server at {url} cannot be reached: {exc}"
            log.warning("%s", detail)
            return web.json_response(wire.error_message(None, detail), status=502)
        async with upstream:
            headers = passed_headers(upstream.headers)
            if swap is not None:
                headers = {k: v for k, v in headers.items() if k.lower() != wire.SESSION_HEADER}
                headers[wire.SESSION_HEADER] = swap[0]
            if not upstream.headers.get("content-type", "").startswith(SSE_TYPE):
                data = await upstream.read()
                if answered is not None:
                    answered.tell(upstream.status, upstream.headers, data, None)
                return web.Response(status=upstream.status, body=data, headers=headers)
            answer = web.StreamResponse(status=upstream.status, headers=headers)
            await answer.prepare(request)
            parser = sse.SSEParser()
            events: list[SSEEvent] = []
            async for chunk in upstream.content.iter_any():
                await answer.write(chunk)
                if answered is not None and not answered.told:
                    events.extend(parser.feed(chunk, time.monotonic() - started))
                    if any(answered.answers(event) for event in events):
                        answered.tell(upstream.status, upstream.headers, b"", events)
            if answered is not None and not answered.told:
                events.extend(parser.close(time.monotonic() - started))
                answered.tell(upstream.status, upstream.headers, b"", events)
            await answer.write_eof()
            return answer

    # -- relayed elsewhere (stdio) -------------------------------------------------------
    async def relayed(self, request: web.Request) -> web.Response:
        """A request and its answer relayed by ``mcp-stdio``, recorded as a tool call:
        ``{"request": MESSAGE, "response": MESSAGE, "start_ns": N}``."""
        raw = await read_body(request, self._body_timeout)
        if not isinstance(raw, bytes):
            return raw
        try:
            doc = json.loads(raw)
            message, answer = doc["request"], doc["response"]
        except (ValueError, KeyError, TypeError, RecursionError):
            return web.json_response({"error": "expected request and response"}, status=400)
        if wire.kind(message) != "request":
            return web.json_response({"error": "not a request"}, status=400)
        session = self._session()
        if session.records or session.tools.mode == "auto":
            place = span_place(request, message, int(doc.get("start_ns") or time.time_ns()))
            place.transport = "pipe"
            response = Response(status=200, headers={"content-type": JSON_TYPE}, body=answer)
            self.record(session, request.match_info["name"], message, response, place)
        return web.Response(status=204)
