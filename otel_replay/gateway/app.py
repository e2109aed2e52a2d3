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
import os
import time
from collections.abc import Mapping

from aiohttp import web

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.gateway import probes, refusal
from otel_replay.gateway.bodies import Bodies, Body
from otel_replay.gateway.call import (
    BodyTooDeep,
    Call,
    parse_traceparent,
    parses_within,
    within_depth,
)
from otel_replay.gateway.decide import Decision, OwnKeys, decide, lowered, matches
from otel_replay.gateway.fork import live_call
from otel_replay.gateway.forward import Forwarder
from otel_replay.gateway.guard import MAX_BODY, host_guard, read_body
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.mcp import McpMount
from otel_replay.gateway.own_tools import OwnToolsMount
from otel_replay.gateway.playback import play, prime_streams
from otel_replay.gateway.turns import Turns
from otel_replay.gateway.upstream import (
    Upstream,
)
from otel_replay.gateway.writers import (
    as_recorded,
    deliver,
    prime_answers,
)
from otel_replay.matching.exact import RAW_MAX
from otel_replay.otlp.routes import add_otlp_routes
from otel_replay.providers import Route
from otel_replay.providers.base import Provider
from otel_replay.session.session import Session

log = logging.getLogger("otel_replay.gateway")

# A larger body nearly always opens more brackets than the depth limit (tool schemas):
# counting them would only add to its parse.
_COUNTED_MAX = 16 * 1024


class Gateway:
    """The aiohttp application and its per-request logic."""

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
    ) -> None:
        self.session = session
        self.mcp_servers = dict(mcp or {})  # MCP servers by name, served at /mcp/NAME
        self._bodies: Bodies | None = None
        self._turns: Turns | None = None
        self.bind_host = bind_host
        self.limits = limits or Limits()
        self.upstream = upstream
        self.forwarder = Forwarder(upstream, self.limits)
        self.timing = timing
        self._own_keys = OwnKeys(os.environ if keys is None else keys)
        self.prime(session)

    def prime(self, session: Session) -> None:
        """Make what ``session``'s first request would otherwise wait for: its redactor's
        tables, its index, the body reader primed with its recordings."""
        session.redactor.prepare()
        session.prepare()
        if session.records:  # the first call would load its API surface
            providers.all_providers()
        self._bodies_for(session)  # before the first request, which it then speeds up

    def app(self) -> web.Application:
        app, guard = web.Application(client_max_size=MAX_BODY), host_guard(self.bind_host)
        store, seconds = (lambda: self.session.store), self.limits.body_timeout
        add_otlp_routes(app, store, read_timeout=seconds, wrap=guard)
        McpMount(lambda: self.mcp_servers, lambda: self.session, seconds).add_routes(app, guard)
        OwnToolsMount(lambda: self.session, seconds).add_routes(app, guard)
        app.router.add_route("*", "/{tail:.*}", guard(self.handle))  # every route guarded
        return app

    # -- dispatch ----------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        headers = request.headers  # names looked up in any case
        kind = probes.probe(request.method, request.path, headers)
        if kind is not None:  # not a model call: answered here, never recorded or counted
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
        fork = self.session.fork
        number = 0 if fork is None else fork.take()  # a fork counts the calls
        live = fork is not None and fork.live(number)
        at_once = self._at_once() and not live
        small = at_once and len(raw) <= RAW_MAX  # a larger body is no recording's as sent
        replayed = await self._replay_as_sent(request, route, raw, number) if small else None
        if replayed is None and at_once:
            replayed = await self._replay_grown(request, route, raw, number)
        if replayed is not None:
            return replayed
        try:
            call, exact = self._call(request, route, headers, raw, tried=at_once, live=live)
        except BodyTooDeep as exc:
            log.warning("%s (%s %s)", exc, request.method, request.path)
            error = providers.get(route.api).error_body(400, str(exc), "invalid_request_error")
            return web.json_response(error, status=400, headers={"x-should-retry": "false"})
        call.number = number
        if live and fork is not None:  # past the fork point: live, never matched
            return await self._carry_out(request, call, live_call(call, fork, self._own_keys))
        mode = call.session.mode
        if mode == "auto" and call.session.has_live_rules and call.session.is_live(call.canonical):
            own = self._own_keys.offered(call.upstream, lowered(headers))
            if own:
                decision = decide(mode, routed=True, match=None, own_key=True, live=True)
                return await self._carry_out(request, call, decision)
        match: int | ReplayMiss | None = exact
        if matches(mode) and match is None:
            try:
                match = call.session.matcher.match(call.canonical)
            except ReplayMiss as miss:
                match = miss
        turns = None
        if at_once and isinstance(match, int):  # a chain of turns begins (exact hits too)
            turns = self._turns_for(call.session)
            turns.matched(call, match)
        own_key = isinstance(match, ReplayMiss) and self._own_keys.offered(
            call.upstream, lowered(headers)
        )
        answer = await self._carry_out(
            request, call, decide(mode, routed=True, match=match, own_key=own_key)
        )
        if turns is not None:
            _after_answer(turns, call.provider, call.path)
        return answer

    def _at_once(self) -> bool:
        """Whether a request sent exactly as a recording was is replayed before any other
        work: when matching, no live rule can claim it and no span is written for it."""
        session = self.session
        return matches(session.mode) and not (
            session.has_live_rules or session.writes_replayed_spans
        )

    async def _replay_as_sent(
        self, request: web.Request, route: Route, raw: bytes, number: int = 0
    ) -> web.StreamResponse | None:
        """The replay of the recording whose body is exactly ``raw`` (a small body, as
        sent), or None when there is none (the full path then decides)."""
        session = self.session
        self._bodies_for(session)  # a session swapped in is primed by its first request
        provider = providers.get(route.api)
        path = route.provider_path(request.path, request.query)
        index = session.exact_hit_raw(provider.name, path, raw)
        if index is None:
            return None
        recorded = session.recording(index)
        stream = provider.wants_stream(recorded.raw_request, path, request.query)
        plain = as_recorded(recorded.response, stream)
        if plain is None:  # it changes form or replays a fault
            call, _ = self._call(request, route, request.headers, raw, hit=index)
            call.number = number
            decision = decide(session.mode, routed=True, match=index, own_key=False)
            return await self._carry_out(request, call, decision)
        traceparent = request.headers.get("traceparent")
        trace_id = parse_traceparent(traceparent)[0] if traceparent else None
        session.replayed_hit(index, number, sent=raw, trace_id=trace_id)
        return plain

    async def _replay_grown(
        self, request: web.Request, route: Route, raw: bytes, number: int
    ) -> web.StreamResponse | None:
        """The replay of a conversation's next turn, matched by what it adds to the last
        one (``turns``), or None (the full path then decides)."""
        provider = providers.get(route.api)
        path = route.provider_path(request.path, request.query)
        turns = self._turns_for(self.session)
        followed = turns.follow(provider, path, raw)
        if followed is None:
            return None
        index, asks_stream = followed
        self.session.by_turn += 1
        call, _ = self._call(
            request, route, request.headers, raw, hit=index, asks_stream=asks_stream
        )
        call.number = number
        decision = decide(self.session.mode, routed=True, match=index, own_key=False)
        answer = await self._carry_out(request, call, decision)
        _after_answer(turns, provider, path)
        return answer

    def _turns_for(self, session: Session) -> Turns:
        reader = self._bodies_for(session)
        turns = self._turns
        if turns is None or turns.session is not session or turns.reader is not reader:
            turns = self._turns = Turns(session, reader)
        return turns

    def _shallow(self, raw: bytes, reader: Bodies) -> bool:
        """Whether ``raw`` surely nests within the depth limit, so that it may be sent
        before it is read: a body opening few brackets, else one orjson parses (a tool
        schema nests a few levels, but a coding agent's request opens hundreds). When
        the reader found the last body mostly remembered, reading this one is the faster
        check, so it is read at once."""
        limit = self.limits.max_depth
        if len(raw) <= _COUNTED_MAX and within_depth(raw, limit):
            return True
        return not reader.reusing and parses_within(raw, limit)

    def _call(
        self,
        request: web.Request,
        route: Route,
        headers: Mapping[str, str],
        raw: bytes,
        *,
        tried: bool = False,
        hit: int | None = None,
        live: bool = False,
        asks_stream: bool | None = None,
    ) -> tuple[Call, int | None]:
        """The call, and the recording its exact body hits (when the mode matches; ``hit``
        when already found, ``tried``: not found by its bytes; ``live``: a fork's call
        past its point, not matched; ``asks_stream``: whether it asks for a stream, when
        known)."""
        session = self.session
        provider = providers.get(route.api)
        path = route.provider_path(request.path, request.query)
        matching = matches(session.mode) and not live
        exact_first = matching and not session.has_live_rules  # a live call consumes nothing
        reader = self._bodies_for(session)
        later, exact = None, hit
        read: Body | None = None
        if hit is not None:
            body = session.recordings.request_body(hit)
        elif matching or not self._shallow(raw, reader):
            body, exact, read = reader.for_call(
                session, provider.name, path, raw, exact_first, matching, tried
            )
        else:  # recorded as it is: read while the provider works (it cannot nest too deep)
            body, later = None, reader.later(raw)
        trace_id, parent = parse_traceparent(headers.get("traceparent"))
        call = Call(
            request=request,
            route=route,
            provider=provider,
            path=path,
            operation=provider.operation(path),
            raw=raw,
            parsed=body,
            asks_stream=(
                asks_stream
                if asks_stream is not None
                else later is None and provider.wants_stream(body, path, request.query)
            ),
            start_ns=time.time_ns(),
            trace_id=trace_id,
            parent_span_id=parent,
            session=session,
            # record mode redacts when it records, off the agent's critical path
            redacted=matching,
            reading=read,
            reader=later,
        )
        return call, exact

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
            return refusal.answer_miss(call, decision.miss)
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

    def _bodies_for(self, session: Session) -> Bodies:
        """The body reader of ``session``'s redactor (what it remembers is redacted by it)."""
        if self._bodies is None or self._bodies.redactor is not session.redactor:
            recorded = session.recordings if matches(session.mode) else ()
            self._bodies = Bodies.primed(session.redactor, recorded, self.limits.max_depth)
            prime_answers(ex.response.body for ex in recorded)
            prime_streams(recorded)
        return self._bodies


def _after_answer(turns: Turns, provider: Provider, path: str) -> None:
    """Has ``turns`` make ahead what the conversation's next turn needs, once the loop is
    done answering this one: the agent has its answer, and reads it meanwhile (an agent
    runs its tools, and at the least parses the answer, before its next request)."""
    asyncio.get_running_loop().call_soon(turns.prepare, provider, path)
