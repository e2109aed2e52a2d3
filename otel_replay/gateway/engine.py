"""The gateway's engine: what one provider request comes to, whichever door it came in by.

:class:`Engine` holds a run's session, its limits and the caller's own keys; it reads a
request's body into a :class:`~otel_replay.gateway.call.Call` (``call``) and decides what
to do with it (``decision``: replay, forward, miss), as ``decide`` says, purely. The
aiohttp gateway (``app.Gateway``) is an engine with a socket; the in-process httpx
transports (``frontends/transport.py``) call the same engine with no socket at all. This
module carries nothing out: the doors answer as the decision says.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.gateway.bodies import Bodies, Body
from otel_replay.gateway.call import Call, Incoming, parse_traceparent, parses_within, within_depth
from otel_replay.gateway.decide import Decision, OwnKeys, decide, lowered, matches
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.playback import prime_streams
from otel_replay.gateway.writers import as_recorded, prime_answers
from otel_replay.providers import Route
from otel_replay.session.session import Session

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["Engine"]

# A larger body nearly always opens more brackets than the depth limit (tool schemas):
# counting them would only add to its parse.
_COUNTED_MAX = 16 * 1024


class Engine:
    """One run's requests read and decided, without I/O of its own."""

    def __init__(
        self,
        session: Session,
        *,
        keys: Mapping[str, str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.session = session
        self.limits = limits or Limits()
        self._bodies: Bodies | None = None
        self._own_keys = OwnKeys(os.environ if keys is None else keys)
        self.prime(session)

    @property
    def own_keys(self) -> OwnKeys:
        """The caller's own credentials, per upstream."""
        return self._own_keys

    def prime(self, session: Session) -> None:
        """Make what ``session``'s first request would otherwise wait for: its redactor's
        tables, its index, the body reader primed with its recordings."""
        session.redactor.prepare()
        session.prepare()
        if session.records:  # the first call would load its API surface
            providers.all_providers()
        self._bodies_for(session)  # before the first request, which it then speeds up

    def numbered(self) -> tuple[int, bool]:
        """The next call's place among a fork's calls (0: no fork), and whether it is past
        the fork point (live, never matched)."""
        fork = self.session.fork
        number = 0 if fork is None else fork.take()  # a fork counts the calls
        return number, fork is not None and fork.live(number)

    def at_once(self) -> bool:
        """Whether a request sent exactly as a recording was is replayed before any other
        work: when matching, no live rule can claim it and no span is written for it."""
        session = self.session
        return matches(session.mode) and not (
            session.has_live_rules or session.writes_replayed_spans
        )

    def replayed_as_sent(
        self, request: Incoming, route: Route, raw: bytes, number: int = 0
    ) -> web.Response | tuple[Call, int] | None:
        """The replay of the recording whose body is exactly ``raw`` (a small body, as
        sent; None when there is none): its answer as recorded, counted as replayed; or,
        when it changes form or replays a fault, the call and the recording to replay."""
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
            call, _ = self.call(request, route, request.headers, raw, hit=index)
            call.number = number
            return call, index
        traceparent = request.headers.get("traceparent")
        trace_id = parse_traceparent(traceparent)[0] if traceparent else None
        session.replayed_hit(index, number, sent=raw, trace_id=trace_id)
        return plain

    def decision(self, call: Call, exact: int | None, *, live: bool = False) -> Decision:
        """What to do with ``call`` (``exact``: the recording its body hit as sent, if
        any; ``live``: a fork's call past its point): forward it when a fork or a ``live``
        rule sends it to the provider, else as matching and the caller's key decide."""
        headers = call.request.headers
        fork = call.session.fork
        if live and fork is not None:  # past the fork point: live, never matched
            from otel_replay.gateway.fork import live_call  # loaded when a run forks

            return live_call(call, fork, self._own_keys)
        mode = call.session.mode
        if mode == "auto" and call.session.has_live_rules and call.session.is_live(call.canonical):
            if self._own_keys.offered(call.upstream, lowered(headers)):
                return decide(mode, routed=True, match=None, own_key=True, live=True)
        match: int | ReplayMiss | None = exact
        if matches(mode) and match is None:
            try:
                match = call.session.match(call.canonical)
            except ReplayMiss as miss:
                match = miss
        own_key = isinstance(match, ReplayMiss) and self._own_keys.offered(
            call.upstream, lowered(headers)
        )
        return decide(mode, routed=True, match=match, own_key=own_key)

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

    def call(
        self,
        request: Incoming,
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

    def _bodies_for(self, session: Session) -> Bodies:
        """The body reader of ``session``'s redactor (what it remembers is redacted by it)."""
        if self._bodies is None or self._bodies.redactor is not session.redactor:
            recorded = session.recordings if matches(session.mode) else ()
            self._bodies = Bodies.primed(session.redactor, recorded, self.limits.max_depth)
            prime_answers(ex.response.body for ex in recorded)
            prime_streams(recorded)
        return self._bodies
