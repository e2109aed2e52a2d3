"""The engine's door without a socket: a provider request handed in by a function call
(the in-process httpx transports, ``frontends/transport.py``), answered by the gateway's
own decision, replay, miss answer and recording, with no server and no port.

:class:`Door` tells the provider by the request's host (the ``egress_hosts`` of the
``PROVIDERS`` table, or a base URL the caller named) and its path, and answers with an
:class:`Answer` (bytes, or events to write one by one, or a fault to raise), or with a
:class:`Live` call for the transport to send through a real HTTP transport: the door
records what comes back. Which happens is :meth:`Engine.decision`'s, as for the gateway.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy

from otel_replay import providers
from otel_replay.core.exchange import Response, SSEEvent
from otel_replay.gateway import refusal
from otel_replay.gateway.call import BodyTooDeep, Call, redacted_body
from otel_replay.gateway.decide import Decision, decide, lowered
from otel_replay.gateway.engine import Engine
from otel_replay.gateway.forward import record, record_stream
from otel_replay.gateway.playback import replayed
from otel_replay.gateway.upstream import HOP_BY_HOP, NoUpstream
from otel_replay.gateway.writers import not_saved
from otel_replay.matching.exact import RAW_MAX
from otel_replay.providers import Route
from otel_replay.providers.router import Router
from otel_replay.providers.spec import ProviderSpec
from otel_replay.spans.pieces import holds_no_piece
from otel_replay.streams.codec import StreamDecoder

__all__ = ["Answer", "Door", "InRequest", "Live", "StreamRecording"]

log = logging.getLogger("otel_replay.gateway")


@dataclass(frozen=True, slots=True)
class InRequest:
    """A request handed in by a function call, as the engine reads one (``Incoming``)."""

    method: str
    path: str
    raw_path: str
    query: MultiDictProxy[str]
    query_string: str
    headers: CIMultiDictProxy[str]

    @classmethod
    def of(cls, method: str, target: str, headers: Iterable[tuple[str, str]]) -> InRequest:
        """From the method, the target (path and query, percent-encoded as sent) and the
        headers."""
        raw_path, _, query = target.partition("?")
        pairs = parse_qsl(query, keep_blank_values=True)
        return cls(
            method=method,
            path=unquote(raw_path),
            raw_path=target,
            query=MultiDictProxy(MultiDict(pairs)),
            query_string=query,
            headers=CIMultiDictProxy(CIMultiDict(headers)),
        )


@dataclass(slots=True)
class Answer:
    """What the caller's client gets: ``body`` whole, or ``events`` written one by one
    (``paced``: at their recorded times); ``fault``: ``reset`` or ``timeout`` instead of an
    answer, ``reset_mid_stream`` after the events."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: list[SSEEvent] | None = None
    paced: bool = False
    fault: str | None = None
    call: Call | None = None

    @classmethod
    def of(cls, response: web.Response) -> Answer:
        """The answer the gateway would write (a response made, never sent)."""
        body = response.body
        data = body if isinstance(body, bytes) else b""
        return cls(response.status, dict(response.headers), data)


class StreamRecording:
    """A live stream's events, decoded as its chunks pass to the caller and recorded at
    its end (or when the caller stops reading)."""

    def __init__(self, call: Call, status: int, kept: dict[str, str], decoder: StreamDecoder):
        self.call = call
        self.status = status
        self.kept = kept
        self.decoder = decoder
        self.events: list[SSEEvent] = []
        self._started = time.monotonic()
        self.ended = False

    def feed(self, chunk: bytes) -> None:
        self.events.extend(self.decoder.feed(chunk, time.monotonic() - self._started))

    def end(self, fault: str | None = None, *, left: bool = False) -> bool:
        """Record the stream (``left``: the caller stopped reading: a stream whose closing
        event it had seen ended, one it had not replays as a timeout); False when it
        could not be saved."""
        if self.ended:
            return True
        self.ended = True
        self.events.extend(self.decoder.close(time.monotonic() - self._started))
        if left and fault is None and not self.call.provider.stream_done(self.events):
            fault = "timeout"
        return record_stream(self.call, self.status, self.kept, self.events, fault)


@dataclass(slots=True)
class Live:
    """A call to send upstream (``url``, ``headers``, ``body``): the transport sends it
    and hands back what came, which is recorded here."""

    call: Call
    url: str
    headers: dict[str, str]
    body: bytes
    kept: dict[str, str] = field(default_factory=dict)

    def is_stream(self, content_type: str) -> bool:
        return self.call.codec.is_stream(content_type)

    def answered(self, status: int, headers: Mapping[str, str], data: bytes) -> Answer:
        """A plain answer, recorded before the caller gets it (a 507 when it could not be
        saved, as from the gateway)."""
        call = self.call
        body = redacted_body(call.session.redactor, data)
        kept = providers.kept_headers(CIMultiDict(headers))
        live = Response(status=status, headers=kept, body=body)
        if not record(call, live, short=call.short and holds_no_piece(data)):
            failure = call.session.write_failure or "the exchange could not be written"
            why = f"answer not saved, recording stopped: {failure}"
            return Answer.of(not_saved(call.provider, why))
        passed = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
        return Answer(status, passed, data)

    def streaming(self, status: int, headers: Mapping[str, str]) -> StreamRecording:
        """A streamed answer, recorded as it ends."""
        kept = providers.kept_headers(CIMultiDict(headers))
        return StreamRecording(self.call, status, kept, self.call.codec.decoder())

    def failed(self, kind: str) -> None:
        """The upstream could not be reached, or hung: recorded so that it replays."""
        record(self.call, Response(status=0, fault=kind))


class Door:
    """The engine's door for requests handed in by a function call."""

    def __init__(
        self,
        engine: Engine,
        *,
        timing: str = "fast",
        upstreams: Mapping[str, str] | None = None,
        gateway: str = "",
    ) -> None:
        self.engine = engine
        self.timing = timing
        self.gateway = gateway.rstrip("/")  # a block's gateway, whose paths it routes too
        self.upstreams = {name: url.rstrip("/") for name, url in (upstreams or {}).items()}
        self._routers: dict[tuple[str, ...], Router] = {}

    def route(self, origin: str, host: str, path: str, headers: Mapping[str, str]) -> Route | None:
        """The route of a request to ``origin`` (scheme, host and port) ``host``: the rows
        whose hosts it is, or whose base URL the caller named, route its path; a request
        to the block's gateway (its environment points the SDKs there) is routed by the
        gateway's mounts."""
        if self.gateway and origin == self.gateway:
            return providers.ROUTER.route(path, headers)
        rows = _rows_for(host)
        for name, base in self.upstreams.items():
            under = base[len(origin) :]
            if base.startswith(origin) and under[:1] in ("", "/") and path.startswith(under):
                row = providers.upstream_spec(name)
                if row is not None and row not in rows:
                    rows = (*rows, row)
        if not rows:
            return None
        key = tuple(row.name for row in rows)
        router = self._routers.get(key)
        if router is None:
            router = self._routers[key] = Router(rows)
        return router.route(path, headers)

    def handle(self, request: InRequest, origin: str, host: str, raw: bytes) -> Answer | Live:
        """The answer to one request (or the live call to make), as the gateway decides."""
        engine = self.engine
        headers = request.headers
        route = self.route(origin, host, request.path, headers)
        if route is None:
            refused = refusal.refuse_unplaced(engine.session, request, lowered(headers))
            if refused is not None:
                return Answer.of(refused)
            why = f"otel-replay: {origin}{request.path} is not a provider API path"
            return Answer(404, {"content-type": "application/json"}, _error(why))
        number, live = engine.numbered()
        at_once = engine.at_once() and not live
        if at_once and len(raw) <= RAW_MAX:
            found = engine.replayed_as_sent(request, route, raw, number)
            if isinstance(found, web.Response):
                return Answer.of(found)
            if found is not None:
                call, index = found
                decision = decide(call.session.mode, routed=True, match=index, own_key=False)
                return self._carry_out(call, decision, origin)
        try:
            call, exact = engine.call(request, route, headers, raw, tried=at_once, live=live)
        except BodyTooDeep as exc:
            error = providers.get(route.api).error_body(400, str(exc), "invalid_request_error")
            return Answer.of(web.json_response(error, status=400, headers=_NO_RETRY))
        call.number = number
        return self._carry_out(call, engine.decision(call, exact, live=live), origin)

    def _carry_out(self, call: Call, decision: Decision, origin: str) -> Answer | Live:
        session = call.session
        if decision.action == "forward":
            refused = refusal.refuse_misplaced(call)  # never another provider's credential
            if refused is not None:
                return Answer.of(refused)
            failure = session.refuse_live()
            if failure is not None:
                why = f"recording stopped, call not forwarded: {failure}"
                return Answer.of(not_saved(call.provider, why))
            if origin == self.gateway and call.upstream not in self.upstreams:
                # addressed to the block's gateway, with no upstream of its own to go to
                return Answer.of(refusal.refuse_unroutable(call, NoUpstream(call.upstream)))
            return self._live(call, origin)
        if decision.action == "miss":
            assert decision.miss is not None
            keyless = session.mode == "auto" and self.engine.own_keys.missing(call.upstream)
            return Answer.of(refusal.answer_miss(call, decision.miss, keyless=keyless))
        assert decision.index is not None
        recorded = session.recording(decision.index)
        session.replayed_hit(decision.index, call.number, sent=call.raw, trace_id=call.trace_id)
        response = recorded.response
        if response.fault in ("reset", "timeout"):
            answer = Answer(0, {}, fault=response.fault, call=call)
        else:
            played = replayed(call, response, self.timing)
            if isinstance(played, web.Response):
                answer = Answer.of(played)
            else:
                paced = self.timing == "recorded"
                answer = Answer(response.status, played.headers, events=played.events)
                answer.paced, answer.fault, answer.call = paced, response.fault, call
        if session.writes_replayed_spans:
            session.replayed_span(call.exchange(response))
        return answer

    def _live(self, call: Call, origin: str) -> Live:
        request = call.request
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        path = call.route.forward_path(request.raw_path.partition("?")[0])
        base = self.upstreams.get(call.upstream)
        url = f"{origin}{path}" if base is None else call.route.spec.join(base, path)
        if request.query_string:
            url = f"{url}?{request.query_string}"
        sent = call.raw if call.sent is None else call.sent
        return Live(call, url, providers.forwarded_headers(call.upstream, headers), sent)


_NO_RETRY = {"x-should-retry": "false"}


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message}}).encode()


@functools.lru_cache(maxsize=256)
def _rows_for(host: str) -> tuple[ProviderSpec, ...]:
    """The upstreams whose public hosts ``host`` is one of."""
    host = host.lower()
    return tuple(
        row
        for row in providers.PROVIDERS
        if any(fnmatch.fnmatchcase(host, pattern) for pattern in row.egress_hosts)
    )
