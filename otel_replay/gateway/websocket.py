"""The provider APIs served over a WebSocket, on the gateway's own port: the Responses
API's WebSocket mode (``GET /v1/responses`` upgraded), the Realtime API (``/v1/realtime``)
and the Gemini Live API (its ``BidiGenerateContent`` path). Which client frame asks for a
model call and which server frame ends its answer is ``frames``' business.

Recording, the upstream's WebSocket is opened with the upgrade's own credentials (only
its provider's, as for HTTP; a refused upgrade is answered with the upstream's status, so
a client that falls back to HTTP on ``426`` still does) and frames are relayed both ways
as they come; each call's frames are recorded once its last server frame has reached the
agent. Replaying (``ws_replay``), a call is matched like an HTTP request and its recorded
server frames are sent back. In an ``auto`` run a Responses call no recording matches
goes live when the upgrade offers the caller's own key (``_LiveTurns``), as an HTTP call
does. Any other upgrade is refused (``probes``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from functools import partial

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import Response, SSEEvent
from otel_replay.core.ids import new_trace_id
from otel_replay.gateway import probes, refusal
from otel_replay.gateway.call import parse_traceparent
from otel_replay.gateway.decide import OwnKeys, lowered, matches
from otel_replay.gateway.frames import Frames, call_exchange, frames_for, parsed_frame
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.upstream import NoUpstream, Upstream, UpstreamRequest
from otel_replay.gateway.writers import not_saved
from otel_replay.gateway.ws_replay import Decided, Player, protocols_of
from otel_replay.session.session import Session

__all__ = ["WebSockets"]

log = logging.getLogger("otel_replay.gateway")


class WebSockets:
    """The WebSocket upgrades of a gateway whose session is ``session()``."""

    def __init__(
        self,
        session: Callable[[], Session],
        upstream: Upstream,
        limits: Limits,
        timing: Callable[[], str],
        keys: OwnKeys | None = None,
    ) -> None:
        self._session = session
        self.upstream = upstream
        self.limits = limits
        self._timing = timing
        self.keys = keys or OwnKeys({})  # the caller's own keys: an auto miss goes live
        self._open: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()
        # finds a Responses call's body as an HTTP request's (``app.Gateway.decided_body``)
        self.door: Callable[[web.Request, Session, bytes], Decided | None] | None = None

    async def close_all(self, app: web.Application | None = None) -> None:
        """Closes the connections still open (the gateway is stopping: going away)."""
        for ws in list(self._open):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"otel-replay: stopping")

    @staticmethod
    def frames(request: web.Request) -> Frames | None:
        """The calls an upgrade's frames will make, or None when its path serves none."""
        return frames_for(request.path, dict(request.query))

    async def handle(self, request: web.Request, frames: Frames) -> web.StreamResponse:
        session = self._session()
        trace_id, parent = parse_traceparent(request.headers.get("traceparent"))
        place = (trace_id or new_trace_id(), parent)  # one trace for the connection's calls
        if matches(session.mode):
            if frames.api == "responses" and _recorded_over_http(session, frames.endpoint):
                return probes.answer("websocket")  # refused when recorded: refused again
            ws = self._server_side(protocols_of(request))
            await ws.prepare(request)
            # the Responses API's calls stand alone: one may go live (the stateful APIs'
            # session state is the provider's, which a replayed session never built)
            auto = session.mode == "auto" and frames.api == "responses"
            live = None
            if auto and self.keys.offered(frames.upstream, lowered(request.headers)):
                live = _LiveTurns(self, request, session, ws, place)
            keyless = auto and self.keys.missing(frames.upstream)
            answer = None if live is None else live.answer
            door = None if self.door is None else partial(self.door, request, session)
            player = Player(session, frames, ws, self._timing(), place, answer, keyless, door=door)
            try:
                await player.run()
            finally:
                if live is not None:
                    await live.close()
            return ws
        return await self._record(request, frames, session, place)

    def _server_side(self, protocols: tuple[str, ...]) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(
            protocols=protocols, compress=True, max_msg_size=self.limits.max_event_bytes
        )
        self._open.add(ws)
        return ws

    async def _record(
        self,
        request: web.Request,
        frames: Frames,
        session: Session,
        place: tuple[str, str | None],
    ) -> web.StreamResponse:
        provider = providers.get(frames.provider)
        name = frames.upstream
        spec = providers.upstream_spec(name)
        why = None if spec is None else refusal.why_misplaced(spec, request)
        if why is not None:  # never another provider's credential
            return refusal.refused(session, provider, request.path, None, why)
        failure = session.refuse_live()
        if failure is not None:
            return not_saved(provider, f"recording stopped, call not forwarded: {failure}")
        try:
            upstream = await self.open_upstream(request, frames)
        except aiohttp.WSServerHandshakeError as exc:
            # refused upstream, refused here: a client that falls back to HTTP on it still does
            message = f"otel-replay: the upstream refused the WebSocket ({exc.status})"
            body = provider.error_body(exc.status, message, "websocket_refused")
            return web.json_response(body, status=exc.status)
        except NoUpstream as exc:  # counted, as an HTTP call with nowhere to go is
            session.missed(ReplayMiss(str(exc)), provider.name, request.path, None)
            body = provider.error_body(502, f"otel-replay: {exc}", "otel_replay_no_upstream")
            return web.json_response(body, status=502, headers={"x-should-retry": "false"})
        except (aiohttp.ClientError, OSError) as exc:
            message = f"otel-replay: the upstream's WebSocket could not be opened: {exc}"
            body = provider.error_body(502, message, "otel_replay_upstream")
            return web.json_response(body, status=502)
        chosen = (upstream.protocol,) if upstream.protocol else ()
        ws = self._server_side(chosen)
        try:
            await ws.prepare(request)
            with session.forwarding():
                tee = _Tee(session, frames, place)
                try:
                    await _relay(ws, upstream, tee)
                finally:
                    tee.closed()
        finally:
            await upstream.close()
        return ws

    async def open_upstream(
        self, request: web.Request, frames: Frames
    ) -> aiohttp.ClientWebSocketResponse:
        """The provider's WebSocket, opened with the upgrade's own credentials (raises
        ``NoUpstream``, ``aiohttp.WSServerHandshakeError``, ``aiohttp.ClientError``)."""
        name = frames.upstream
        headers = providers.forwarded_headers(name, dict(request.headers))
        outgoing = UpstreamRequest(name, "GET", request.path, request.query_string, headers, b"")
        connect = getattr(self.upstream, "websocket", None)
        if connect is None:
            raise NoUpstream(name, "this upstream serves no WebSockets")
        upstream: aiohttp.ClientWebSocketResponse = await connect(outgoing, protocols_of(request))
        return upstream


class _LiveTurns:
    """An ``auto`` run's Responses WebSocket where the cassette misses: the provider's
    WebSocket is opened at the first miss (with the upgrade's own credentials, the same
    checks as recording), and each missed ``response.create`` is sent on it alone, since
    it is all the provider needs (what it continues it names: ``previous_response_id``);
    its frames are relayed to the agent as they come and recorded as a record run's."""

    def __init__(
        self,
        sockets: WebSockets,
        request: web.Request,
        session: Session,
        ws: web.WebSocketResponse,
        place: tuple[str, str | None],
    ) -> None:
        self.sockets, self.request, self.session = sockets, request, session
        self.ws, self.place = ws, place
        self.upstream: aiohttp.ClientWebSocketResponse | None = None
        self.failed: str | None = None  # why the provider cannot be reached: misses stay

    async def answer(self, data: str | bytes) -> bool:
        """Sends a missed call's client frame to the provider and relays its answer; False
        when the provider cannot be reached (the call is then a miss)."""
        upstream = await self._open()
        if upstream is None:
            return False
        frames = WebSockets.frames(self.request)
        assert frames is not None
        tee = _Tee(self.session, frames, self.place)
        with self.session.forwarding():
            tee.client(data)
            if isinstance(data, bytes):
                await upstream.send_bytes(data)
            else:
                await upstream.send_str(data)
            while frames.asked is not None:  # until the frame that ends its answer
                message = await upstream.receive()
                if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                    tee.closed()  # cut short: recorded so, and the agent told so
                    self.upstream = None
                    await self.ws.close(code=1011, message=b"otel-replay: the upstream closed")
                    break
                if message.type == WSMsgType.TEXT:
                    await self.ws.send_str(message.data)
                else:
                    await self.ws.send_bytes(message.data)
                tee.server(message.data)
        return True

    async def _open(self) -> aiohttp.ClientWebSocketResponse | None:
        if self.upstream is not None or self.failed is not None:
            return self.upstream
        request, session = self.request, self.session
        frames = WebSockets.frames(request)
        assert frames is not None
        spec = providers.upstream_spec(frames.upstream)
        why = None if spec is None else refusal.why_misplaced(spec, request)
        failure = why or session.refuse_live()
        if failure is None:
            try:
                self.upstream = await self.sockets.open_upstream(request, frames)
            except (NoUpstream, aiohttp.ClientError, OSError) as exc:
                failure = f"the upstream's WebSocket could not be opened: {exc}"
        if failure is not None:
            self.failed = failure
            log.warning("otel-replay: a WebSocket call missed and cannot go live: %s", failure)
        return self.upstream

    async def close(self) -> None:
        if self.upstream is not None:
            await self.upstream.close()


def _recorded_over_http(session: Session, endpoint: str) -> bool:
    """Whether the calls ``session`` recorded at ``endpoint`` (an API with both forms) all
    went over HTTP: the provider refused the WebSocket then (the client fell back), so a
    replay does too."""
    methods = {ex.method for ex in session.recordings if ex.request.endpoint == endpoint}
    return bool(methods) and "GET" not in methods


class _Tee:
    """The frames of a recorded connection, made into exchanges call by call."""

    def __init__(self, session: Session, frames: Frames, place: tuple[str, str | None]) -> None:
        self.session, self.frames, self.place = session, frames, place
        self.provider = providers.get(frames.provider)
        self.events: list[SSEEvent] = []
        self.began = time.monotonic()
        self.start_ns = 0

    def client(self, data: str | bytes) -> None:
        if not self.frames.client_events and not self.events:
            self.began = time.monotonic()  # a turn's time counts from its first frame
        if self.frames.client(parsed_frame(data)) is not None:
            self.start_ns = time.time_ns()

    def server(self, data: str | bytes) -> None:
        frame = parsed_frame(data)
        if not self.frames.client_events and not self.events:
            self.began = time.monotonic()
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        kind = frame.get("type") if isinstance(frame, dict) else None
        t = time.monotonic() - self.began
        self.events.append(SSEEvent(data=text, event=kind if isinstance(kind, str) else None, t=t))
        if self.frames.server(frame):
            self._record()

    def closed(self) -> None:
        """The connection has ended: a call whose answer was cut short is recorded so,
        and replays so (its frames, then the socket closed)."""
        if self.frames.asked is not None:
            log.warning("otel-replay: a WebSocket closed before a call's answer ended")
            self._record(fault="reset_mid_stream")

    def _record(self, fault: str | None = None) -> None:
        frames, session = self.frames, self.session
        events, self.events = self.events, []
        body = frames.asked
        frames.ended()
        try:
            redactor = session.redactor
            raw = redactor.json(body)
            for event, text in zip(events, redactor.texts([e.data for e in events]), strict=True):
                event.data = text
            operation = self.provider.operation(frames.endpoint)
            request = self.provider.canonical(frames.endpoint, raw)
            response = Response(status=_status(events), events=events, fault=fault)
            exchange = call_exchange(
                frames, operation, request, response, raw, self.start_ns, self.place
            )
            session.recorded(exchange, trace_id=self.place[0])
        except Exception:  # recording must never break the agent's session
            log.exception("otel-replay could not record a WebSocket call")


def _status(events: list[SSEEvent]) -> int:
    """The status a call's answer stands for: an error frame's own, else 200."""
    last = parsed_frame(events[-1].data) if events else None
    if isinstance(last, dict) and last.get("type") == "error":
        status = last.get("status") or last.get("status_code")
        return status if isinstance(status, int) else 400
    return 200


async def _relay(
    ws: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse, tee: _Tee
) -> None:
    """Frames both ways as they come, each teed; either side closing closes the other."""

    async def from_agent() -> None:
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                tee.client(message.data)
                await upstream.send_str(message.data)
            elif message.type == WSMsgType.BINARY:
                tee.client(message.data)
                await upstream.send_bytes(message.data)
        await upstream.close()

    async def from_upstream() -> None:
        code, reason = 1000, b""
        while True:
            message = await upstream.receive()
            if message.type == WSMsgType.TEXT:
                await ws.send_str(message.data)
                tee.server(message.data)  # the agent has it first
            elif message.type == WSMsgType.BINARY:
                await ws.send_bytes(message.data)
                tee.server(message.data)
            else:
                if message.type == WSMsgType.CLOSE:
                    code, reason = int(message.data or 1000), str(message.extra or "").encode()
                break
        await ws.close(code=upstream.close_code or code, message=reason)

    tasks = [asyncio.ensure_future(from_agent()), asyncio.ensure_future(from_upstream())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        # the other side is closed too: its task ends once the close is through
        await asyncio.wait(tasks, timeout=5.0)
    finally:
        for task in tasks:
            task.cancel()
        for result in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(result, Exception):  # a side that broke off: the other closed
                log.debug("WebSocket relay ended: %r", result)
