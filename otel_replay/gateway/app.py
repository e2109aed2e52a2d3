"""The gateway: one aiohttp application on loopback speaking the provider APIs and the
OTLP/HTTP receiver, with OTLP/gRPC beside it.

Per provider request it either replays a recording (strict, auto), or forwards live and
records (record; auto on a miss with the gateway's own key). Streams are forwarded chunk by
chunk as they arrive and teed into the exchange; faults reach the agent as the same kind of
fault and are recorded so they replay. Which of those happens is decided in ``decide``
(purely); which provider and upstream a path is for, in the ``PROVIDERS`` table; this
module only reads requests and writes answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss, UpstreamError
from otel_replay.core.exchange import JSON, Response, SSEEvent
from otel_replay.gateway import probes, refusal
from otel_replay.gateway.bodies import Bodies, Body
from otel_replay.gateway.call import (
    BodyTooDeep,
    Call,
    parse_traceparent,
    parses_within,
    redacted_body,
    within_depth,
)
from otel_replay.gateway.decide import Decision, OwnKeys, decide, lowered, matches
from otel_replay.gateway.fork import live_call
from otel_replay.gateway.guard import host_guard, read_body
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.mcp import McpMount
from otel_replay.gateway.playback import play
from otel_replay.gateway.relay import (
    OverLimit,
    StreamRelay,
    close_chunks,
    collect,
    over_limit_body,
    over_limit_event,
)
from otel_replay.gateway.turns import Turns
from otel_replay.gateway.upstream import (
    HOP_BY_HOP,
    NoUpstream,
    Upstream,
    UpstreamRequest,
    send_meanwhile,
    take_steps,
)
from otel_replay.gateway.writers import (
    abort,
    as_recorded,
    deliver,
    not_saved,
    passthrough,
    prime_answers,
)
from otel_replay.otlp.routes import add_otlp_routes
from otel_replay.providers import Route
from otel_replay.session.session import Session
from otel_replay.spans.pieces import holds_no_piece

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
        self.timing = timing
        self._own_keys = OwnKeys(os.environ if keys is None else keys)
        session.redactor.prepare()
        session.prepare()
        if session.records:  # the first call would load its API surface
            providers.all_providers()
        self._bodies_for(session)  # before the first request, which it then speeds up

    def app(self) -> web.Application:
        app, guard = web.Application(client_max_size=1024**3), host_guard(self.bind_host)
        store, seconds = (lambda: self.session.store), self.limits.body_timeout
        add_otlp_routes(app, store, read_timeout=seconds, wrap=guard)
        McpMount(lambda: self.mcp_servers, lambda: self.session, seconds).add_routes(app, guard)
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
        replayed = await self._replay_as_sent(request, route, raw, number) if at_once else None
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
        if at_once and exact is None and isinstance(match, int):  # a chain of turns begins
            self._turns_for(call.session).matched(call, match)
        own_key = isinstance(match, ReplayMiss) and self._own_keys.offered(
            call.upstream, lowered(headers)
        )
        return await self._carry_out(
            request, call, decide(mode, routed=True, match=match, own_key=own_key)
        )

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
        session.replayed_hit(index, number)
        return plain

    async def _replay_grown(
        self, request: web.Request, route: Route, raw: bytes, number: int
    ) -> web.StreamResponse | None:
        """The replay of a conversation's next turn, matched by what it adds to the last
        one (``turns``), or None (the full path then decides)."""
        provider = providers.get(route.api)
        path = route.provider_path(request.path, request.query)
        followed = self._turns_for(self.session).follow(provider, path, raw)
        if followed is None:
            return None
        index, asks_stream = followed
        self.session.by_turn += 1
        call, _ = self._call(request, route, request.headers, raw, hit=index)
        call.number, call.asks_stream = number, asks_stream
        decision = decide(self.session.mode, routed=True, match=index, own_key=False)
        return await self._carry_out(request, call, decision)

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
    ) -> tuple[Call, int | None]:
        """The call, and the recording its exact body hits (when the mode matches; ``hit``
        when already found, ``tried``: not found by its bytes; ``live``: a fork's call
        past its point, not matched)."""
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
            asks_stream=later is None and provider.wants_stream(body, path, request.query),
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
            return await self.forward(call)
        if decision.action == "miss":
            assert decision.miss is not None
            return refusal.answer_miss(call, decision.miss)
        assert decision.index is not None
        recorded = call.session.recording(decision.index)
        call.session.replayed_hit(decision.index, call.number)
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
        return self._bodies

    # -- forward and record ------------------------------------------------------------
    async def forward(self, call: Call) -> web.StreamResponse:
        """Forward live and record. A plain answer is recorded before it reaches the
        agent; a stream is recorded as its last event passes, before the stream ends. An
        answer that could not be saved reaches the agent as a failure (a plain one as a 507,
        a stream cut short), and once recording has stopped a live call is refused: what the
        agent gets is always what a replay will give it."""
        refused = refusal.refuse_misplaced(call)  # never another provider's credential
        if refused is not None:
            return refused
        failure = call.session.refuse_live()
        if failure is not None:
            return not_saved(call.provider, f"recording stopped, call not forwarded: {failure}")
        with call.session.forwarding():
            return await self._forward(call)

    async def _forward(self, call: Call) -> web.StreamResponse:
        request = call.request
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        outgoing = UpstreamRequest(
            provider=call.upstream,
            method=request.method,
            # as received, percent-encoding and all (a Bedrock model id's ':' is signed so)
            path=call.route.forward_path(request.raw_path.partition("?")[0]),
            query=request.query_string,
            headers=providers.forwarded_headers(call.upstream, headers),  # only its own credentials
            body=call.raw if call.sent is None else call.sent,
        )
        try:
            # the call is prepared while the provider works; what is left when the answer
            # comes is taken a slice per chunk once a stream's first event is relayed, and
            # before the exchange is recorded
            upstream = await send_meanwhile(self.upstream, outgoing, call.preparing)
        except NoUpstream as exc:
            return refusal.refuse_unroutable(call, exc)
        except UpstreamError as exc:
            self._record(call, Response(status=0, fault=exc.kind))
            abort(request)
            return web.Response(status=502)
        except asyncio.CancelledError:
            # the agent gave up waiting: it saw a timeout, so that is what replays
            self._record(call, Response(status=0, fault="timeout"))
            raise
        kept = providers.kept_headers(upstream.headers)
        if call.codec.is_stream(upstream.headers.get("content-type", "")):
            return await self._forward_stream(
                call, upstream.status, upstream.headers, kept, upstream.chunks
            )
        try:
            data = await collect(upstream.chunks, self.limits.max_response_bytes)
        except OverLimit as exc:
            await close_chunks(upstream.chunks)
            body, answer = over_limit_body(call.provider, exc)
            self._record(call, Response(status=502, headers=dict(answer.headers), body=body))
            return answer
        except UpstreamError as exc:
            self._record(call, Response(status=upstream.status, headers=kept, fault=exc.kind))
            abort(request)
            return web.Response(status=502)
        except asyncio.CancelledError:
            self._record(call, Response(status=0, fault="timeout"))
            raise
        try:
            await _prepared(call)
        except asyncio.CancelledError:  # the agent gave up while a module loaded
            self._record(call, Response(status=0, fault="timeout"))
            raise
        answer = web.Response(
            status=upstream.status, body=data, headers=passthrough(upstream.headers)
        )
        first = call.session.room_to_record(len(call.raw) + len(data))
        try:
            if first:  # its span cannot fail for want of room: the agent has its answer first
                await deliver(answer, request)
        finally:
            # recorded with nothing awaited once the answer is sent, so before the agent's
            # next request is read, and even when the agent has left meanwhile
            body = redacted_body(call.session.redactor, data)
            live = Response(status=upstream.status, headers=kept, body=body)
            saved = self._record(call, live, short=call.short and holds_no_piece(data))
        if not saved and not first:
            failure = call.session.write_failure or "the exchange could not be written"
            return not_saved(call.provider, f"answer not saved, recording stopped: {failure}")
        return answer

    async def _forward_stream(
        self,
        call: Call,
        status: int,
        upstream_headers: CIMultiDict[str],
        kept: dict[str, str],
        chunks: Any,
    ) -> web.StreamResponse:
        request = call.request
        stream = web.StreamResponse(status=status, headers=passthrough(upstream_headers))
        await stream.prepare(request)
        relay = StreamRelay(call.codec.decoder(), self.limits.max_event_bytes)
        events, held = relay.events, relay.held
        fault: str | None = None
        try:
            await relay.pump(stream, chunks, call.preparing())
        except UpstreamError as exc:
            fault = exc.kind
        except (asyncio.CancelledError, ConnectionResetError):
            # the agent hung up: having seen the stream's closing event it simply left
            # (the SDK closes after [DONE]); before it, it gave up waiting, which replays
            # as a timeout
            events.extend(relay.close())
            done = call.provider.stream_done(events)
            self._record_stream(call, status, kept, events, None if done else "timeout")
            raise
        if relay.over is not None:
            await close_chunks(chunks)
            events.append(over_limit_event(call.provider, relay.over, relay.now()))
            held[:] = call.codec.encode(events[-1])
        else:
            events.extend(relay.close())
        # recorded before the stream's end: the agent has every event already, and its
        # next call then does not queue behind this recording (for a stream of many
        # events it costs more than an agent's own turn between two calls)
        try:
            await _prepared(call)
        except asyncio.CancelledError:  # the agent left while a module loaded: recorded still
            self._record_stream(call, status, kept, events, fault)
            raise
        saved = self._record_stream(call, status, kept, events, fault)
        if not saved:  # an unsaved stream ends in a failure
            abort(request)
            return stream
        with contextlib.suppress(ConnectionResetError):
            if held:
                await stream.write(bytes(held))
            if fault is None:
                await stream.write_eof()
        if fault is not None:
            abort(request)
        return stream

    def _record_stream(
        self,
        call: Call,
        status: int,
        kept: dict[str, str],
        events: list[SSEEvent],
        fault: str | None,
    ) -> bool:
        events, assembled = call.redacted_stream(events)
        response = Response(status=status, headers=kept, events=events, fault=fault)
        return self._record(call, response, assembled)

    def _record(
        self, call: Call, response: Response, assembled: JSON = None, *, short: bool = False
    ) -> bool:
        """Record the call's exchange; False when it could not be saved."""
        try:
            take_steps(call.preparing(), math.inf)  # what is left (a fault's exchange)
            exchange = call.exchange(response)
            return call.session.recorded(exchange, assembled, short=short, draft=call.draft)
        except Exception:  # recording must never break the agent's call
            log.exception("otel-replay could not record an exchange")
            return True


async def _prepared(call: Call) -> None:
    """What is left of the call's preparing once its answer is in, done before it is
    recorded; a step waiting on a module still loading is waited for, the loop serving."""
    while (left := take_steps(call.preparing(), math.inf)) is not False:
        if left is not True:  # the load is the gateway's: neither cancelled with the call
            await asyncio.wait((left,))  # nor its failure raised here (the step retries it)
