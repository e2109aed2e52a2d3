"""The gateway: one aiohttp application on loopback speaking the provider APIs and the
OTLP/HTTP receiver, with OTLP/gRPC beside it.

Per provider request it either replays a recording (strict, auto), or forwards live and
records (record; auto on a miss with the gateway's own key: ``forward``). A request sent
exactly as recorded, or a conversation's next turn (``turns``), is replayed before the rest
of that work. Which of those happens is decided in ``decide``
(purely); which provider and upstream a path is for, in the ``PROVIDERS`` table; this
module only reads requests and writes answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

from aiohttp import web

from otel_replay import providers
from otel_replay.gateway import probes, refusal
from otel_replay.gateway.call import (
    BodyTooDeep,
    Call,
    Incoming,
)
from otel_replay.gateway.control import Control
from otel_replay.gateway.decide import Decision, decide, lowered
from otel_replay.gateway.engine import Engine
from otel_replay.gateway.forward import Forwarder
from otel_replay.gateway.guard import MAX_BODY, host_guard, read_body
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.mcp import McpMount
from otel_replay.gateway.own_tools import OwnToolsMount
from otel_replay.gateway.playback import play
from otel_replay.gateway.turns import Turns
from otel_replay.gateway.upstream import (
    Upstream,
)
from otel_replay.gateway.writers import (
    deliver,
)
from otel_replay.matching.exact import RAW_MAX
from otel_replay.otlp.routes import add_otlp_routes
from otel_replay.providers import Route
from otel_replay.providers.base import Provider
from otel_replay.session.session import Session

if TYPE_CHECKING:  # the WebSocket APIs' modules: loaded at the first upgrade
    from otel_replay.gateway.websocket import WebSockets
    from otel_replay.gateway.ws_replay import Decided

log = logging.getLogger("otel_replay.gateway")


class Gateway(Engine):
    """The aiohttp application: the engine (``engine.Engine``) behind a socket."""

    def __init__(
        self,
        session: Session,
        upstream: Upstream,
        *,
        keys: Mapping[str, str] | None = None,
        timing: str = "fast",
        bind_host: str = "127.0.0.1",
        limits: Limits | None = None,
        mcp: Mapping[str, str] | None = None,
        control: Control | None = None,
    ) -> None:
        self.control = control  # serve's `use` line over HTTP, with its token
        self.mcp_servers = dict(mcp or {})  # MCP servers by name, served at /mcp/NAME
        self._turns: Turns | None = None
        self.bind_host = bind_host
        self.upstream = upstream
        self.timing = timing
        super().__init__(session, keys=keys, limits=limits)
        self.forwarder = Forwarder(upstream, self.limits)
        self._websockets: WebSockets | None = None  # made at the first upgrade

    @property
    def websockets(self) -> WebSockets:
        """The APIs' WebSocket connections (their modules loaded when one first comes)."""
        if self._websockets is None:
            from otel_replay.gateway.websocket import WebSockets

            sockets = WebSockets(
                lambda: self.session, self.upstream, self.limits, lambda: self.timing, self.own_keys
            )
            sockets.door = self.decided_body  # a response.create found as HTTP's body
            self._websockets = sockets
        return self._websockets

    async def _close_websockets(self, app: web.Application) -> None:
        """Tells the open WebSockets the gateway is stopping (none made: nothing to do)."""
        if self._websockets is not None:
            await self._websockets.close_all(app)

    def app(self) -> web.Application:
        app, guard = web.Application(client_max_size=MAX_BODY), host_guard(self.bind_host)
        store, seconds = (lambda: self.session.store), self.limits.body_timeout
        add_otlp_routes(app, store, read_timeout=seconds, wrap=guard)
        McpMount(lambda: self.mcp_servers, lambda: self.session, seconds).add_routes(app, guard)
        OwnToolsMount(lambda: self.session, seconds).add_routes(app, guard)
        if self.control is not None:
            self.control.add_route(app, guard)
        app.router.add_route("*", "/{tail:.*}", guard(self.handle))  # every route guarded
        app.on_shutdown.append(self._close_websockets)  # open WebSockets told at once
        return app

    # -- dispatch ----------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        headers = request.headers  # names looked up in any case
        kind = probes.probe(request.method, request.path, headers)
        if kind is not None:  # not a model call: answered here, never recorded or counted
            if kind == "websocket" and (frames := self.websockets.frames(request)) is not None:
                return await self.websockets.handle(request, frames)  # an API's WebSocket
            return probes.answer(kind)
        route = providers.ROUTER.route(request.path, headers)
        if route is None:
            refused = refusal.refuse_unplaced(self.session, request, lowered(headers))
            if refused is not None:
                return refused
            decision = decide(self.session.mode, routed=False, match=None, own_key=False)
            return await self._carry_out(request, None, decision)
        raw = await read_body(request, self.limits.body_timeout)
        if not isinstance(raw, bytes):  # not against StreamResponse: an ABC, slow at first
            return raw
        number, live = self.numbered()
        at_once = self.at_once() and not live
        small = at_once and len(raw) <= RAW_MAX  # a larger body is no recording's as sent
        replayed = await self._replay_as_sent(request, route, raw, number) if small else None
        if replayed is None and at_once:
            replayed = await self._replay_grown(request, route, raw, number)
        if replayed is not None:
            return replayed
        try:
            call, decision, turns = self._decided(request, route, raw, number, at_once, live)
        except BodyTooDeep as exc:
            log.warning("%s (%s %s)", exc, request.method, request.path)
            error = providers.get(route.api).error_body(400, str(exc), "invalid_request_error")
            return web.json_response(error, status=400, headers={"x-should-retry": "false"})
        answer = await self._carry_out(request, call, decision)
        if turns is not None:
            _after_answer(turns, call.provider, call.path)
        return answer

    def _decided(
        self, request: Incoming, route: Route, raw: bytes, number: int, at_once: bool, live: bool
    ) -> tuple[Call, Decision, Turns | None]:
        """The full path: the call read and decided; a match, found with ``at_once``,
        begins a chain of turns (exact hits too), which it returns (raises BodyTooDeep)."""
        call, exact = self.call(request, route, request.headers, raw, tried=at_once, live=live)
        call.number = number
        decision = self.decision(call, exact, live=live)
        turns = None
        if at_once and decision.index is not None:
            turns = self._turns_for(call.session)
            turns.matched(call, decision.index)
        return call, decision, turns

    def decided_body(self, request: Incoming, session: Session, raw: bytes) -> Decided | None:
        """What the body ``raw`` of a model call a door answers itself comes to (a
        ``response.create`` frame's, ``request`` its WebSocket's upgrade, ``session`` the
        one it began in), found as ``handle`` finds an HTTP request's: as sent, as its
        conversation's next turn, else by the full path (raises BodyTooDeep). None when
        another session has been swapped in since (the door matches it as before)."""
        if session is not self.session:
            return None
        from otel_replay.gateway.ws_replay import Decided  # loaded with the WebSockets

        route = providers.ROUTER.route(request.path, request.headers)
        assert route is not None, f"no provider serves {request.path}"
        number, live = self.numbered()
        at_once = self.at_once() and not live
        session = self.session
        if at_once and len(raw) <= RAW_MAX:
            self._bodies_for(session)  # a session swapped in is primed by its first request
            path = route.provider_path(request.path, request.query)
            index = session.exact_hit_raw(providers.get(route.api).name, path, raw)
            if index is not None:
                return Decided(decide(session.mode, routed=True, match=index, own_key=False))
        found = self._grown(request, route, raw, number) if at_once else None
        call, decision, turns = found or self._decided(request, route, raw, number, at_once, live)
        if turns is None:
            return Decided(decision, call)
        return Decided(decision, call, partial(_after_answer, turns, call.provider, call.path))

    async def _replay_as_sent(
        self, request: web.Request, route: Route, raw: bytes, number: int = 0
    ) -> web.StreamResponse | None:
        """The replay of the recording whose body is exactly ``raw`` (a small body, as
        sent), or None when there is none (the full path then decides)."""
        found = self.replayed_as_sent(request, route, raw, number)
        if not isinstance(found, tuple):  # not against StreamResponse: an ABC, slow at first
            return found
        call, index = found
        decision = decide(self.session.mode, routed=True, match=index, own_key=False)
        return await self._carry_out(request, call, decision)

    async def _replay_grown(
        self, request: web.Request, route: Route, raw: bytes, number: int
    ) -> web.StreamResponse | None:
        """The replay of a conversation's next turn, matched by what it adds to the last
        one (``turns``), or None (the full path then decides)."""
        found = self._grown(request, route, raw, number)
        if found is None:
            return None
        call, decision, turns = found
        answer = await self._carry_out(request, call, decision)
        _after_answer(turns, call.provider, call.path)
        return answer

    def _grown(
        self, request: Incoming, route: Route, raw: bytes, number: int
    ) -> tuple[Call, Decision, Turns] | None:
        """A conversation's next turn matched by what it adds to the last one (``turns``,
        counted in ``by_turn``), or None (the full path then decides)."""
        provider = providers.get(route.api)
        path = route.provider_path(request.path, request.query)
        turns = self._turns_for(self.session)
        followed = turns.follow(provider, path, raw)
        if followed is None:
            return None
        index, asks_stream = followed
        self.session.by_turn += 1
        call, _ = self.call(
            request, route, request.headers, raw, hit=index, asks_stream=asks_stream
        )
        call.number = number
        return call, decide(self.session.mode, routed=True, match=index, own_key=False), turns

    def _turns_for(self, session: Session) -> Turns:
        reader = self._bodies_for(session)
        turns = self._turns
        if turns is None or turns.session is not session or turns.reader is not reader:
            turns = self._turns = Turns(session, reader)
        return turns

    async def _carry_out(
        self, request: web.Request, call: Call | None, decision: Decision
    ) -> web.StreamResponse:
        if call is None or decision.action == "not_provider":
            # health checks and strays: not a provider API call, so neither a miss nor live
            return web.json_response(
                {"error": {"message": f"otel-replay: {request.path} is not a provider API path"}},
                status=404,
            )
        if decision.action == "forward":
            return await self.forwarder.forward(call)
        if decision.action == "miss":
            assert decision.miss is not None
            keyless = call.session.mode == "auto" and self._own_keys.missing(call.upstream)
            return refusal.answer_miss(call, decision.miss, keyless=keyless)
        assert decision.index is not None
        recorded = call.session.recording(decision.index)
        call.session.replayed_hit(
            decision.index, call.number, sent=call.raw, trace_id=call.trace_id
        )
        answer = await play(call, recorded.response, self.timing)
        if call.session.writes_replayed_spans:  # the agent has its answer first
            await deliver(answer, request)
            call.session.replayed_span(call.exchange(recorded.response))
        return answer


def _after_answer(turns: Turns, provider: Provider, path: str) -> None:
    """Has ``turns`` make ahead what the conversation's next turn needs, once the loop is
    done answering this one: the agent has its answer, and reads it meanwhile (an agent
    runs its tools, and at the least parses the answer, before its next request)."""
    asyncio.get_running_loop().call_soon(turns.prepare, provider, path)
