"""The gateway: one aiohttp application on loopback speaking the provider APIs and the
OTLP/HTTP receiver, with OTLP/gRPC beside it.

Per provider request it either replays a recording (strict, auto), or forwards live and
records (record; auto on a miss with the gateway's own key). Streams are forwarded chunk by
chunk as they arrive and teed into the exchange; faults reach the agent as the same kind of
fault and are recorded so they replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from otel_replay import providers
from otel_replay.core import envvars as ev
from otel_replay.core.errors import ReplayMiss, UpstreamError, root_cause
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, Response, SSEEvent
from otel_replay.core.ids import new_span_id, new_trace_id
from otel_replay.gateway.upstream import HOP_BY_HOP, NoUpstream, Upstream, UpstreamRequest
from otel_replay.otlp.http import add_otlp_routes
from otel_replay.providers.azure import azure_endpoint
from otel_replay.providers.base import Provider
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session
from otel_replay.streams import sse

log = logging.getLogger("otel_replay.gateway")

# Paths the provider APIs live under: both SDKs' /v1, and Azure OpenAI's /openai.
_PROVIDER_PREFIXES = ("/v1/", providers.AZURE_PREFIX)
# Response headers kept in a recording and replayed.
_KEPT_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
_KEPT = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
    }
)
# How long a recorded hang is replayed before the gateway gives up on the agent.
REPLAYED_HANG_SECONDS = 600.0


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in _KEPT or lower.startswith(_KEPT_PREFIXES):
            kept[lower] = value
    return kept


def parse_body(raw: bytes) -> JSON:
    """The JSON value of a body; its text when it is not JSON; None when empty."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def redacted_body(redactor: Redactor, raw: bytes, body: JSON = None) -> JSON:
    """``redactor.json(parse_body(raw))`` (``body``: that parse, when already done),
    without re-serialising a clean body.

    When the raw text holds no backslash, every string of the parsed value appears in it
    verbatim, so a raw text the redactor's prefilter passes means nothing to redact."""
    if body is None:
        body = parse_body(raw)
    if isinstance(body, dict | list) and b"\\" not in raw:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and not redactor.might_hold_secret(text):
            return body
    return redactor.json(body)


def parse_traceparent(value: str | None) -> tuple[str | None, str | None]:
    """(trace_id, parent_span_id) from a W3C traceparent header, or (None, None)."""
    if not value:
        return None, None
    parts = value.strip().split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None, None
    trace_id, span_id = parts[1].lower(), parts[2].lower()
    if trace_id == "0" * 32 or span_id == "0" * 16:
        return None, None
    return trace_id, span_id


@dataclass(slots=True)
class Call:
    """What the gateway knows about one incoming provider request."""

    request: web.Request
    provider: Provider
    path: str  # the path providers read: as received, with Azure's api-version
    upstream: str  # the upstream it is forwarded to: the provider's, or "azure"
    operation: str
    raw: bytes
    body: JSON  # redacted, unless ``redacted`` is False (record mode, until recording)
    stream: bool
    start_ns: int
    trace_id: str | None
    parent_span_id: str | None
    session: Session
    redacted: bool = True
    _canonical: CanonicalRequest | None = None

    @property
    def canonical(self) -> CanonicalRequest:
        """The canonical request, computed once (matching and recording both need it)."""
        if self._canonical is None:
            self._redact()
            self._canonical = self.provider.canonical(self.path, self.body)
        return self._canonical

    def _redact(self) -> None:
        if not self.redacted:
            self.body = redacted_body(self.session.redactor, self.raw, self.body)
            self.redacted = True

    def exchange(self, response: Response) -> Exchange:
        self._redact()
        return Exchange(
            provider=self.provider.name,
            operation=self.operation,
            request=self.canonical,
            response=response,
            raw_request=self.body,
            method=self.request.method,
            stream=self.stream,
            start_ns=self.start_ns,
            end_ns=time.time_ns(),
            trace_id=self.trace_id or new_trace_id(),
            span_id=new_span_id(),
            parent_span_id=self.parent_span_id,
        )


class Gateway:
    """The aiohttp application and its per-request logic."""

    def __init__(
        self,
        session: Session,
        upstream: Upstream,
        *,
        keys: Mapping[str, str] | None = None,
        timing: str = "fast",
    ) -> None:
        self.session = session
        self.upstream = upstream
        self.timing = timing
        env = os.environ if keys is None else keys
        # auto mode forwards a miss only with exactly one of the caller's own credentials
        credentials = {
            "openai": (ev.OPENAI_API_KEY,),
            "anthropic": (ev.ANTHROPIC_API_KEY,),
            "azure": (ev.AZURE_OPENAI_API_KEY, ev.AZURE_OPENAI_AD_TOKEN),
        }
        self._keys = {
            upstream: tuple(
                env[name].encode()
                for name in names
                if env.get(name) and env[name] != ev.PLACEHOLDER_KEY
            )
            for upstream, names in credentials.items()
        }

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024**3)
        add_otlp_routes(app, lambda: self.session.store)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # -- dispatch ----------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not request.path.startswith(_PROVIDER_PREFIXES):
            # health checks and strays: not a provider API call, so neither a miss nor live
            return web.json_response(
                {"error": {"message": f"otel-replay: {request.path} is not a provider API path"}},
                status=404,
            )
        try:
            raw = await request.read()
        except web.RequestPayloadError as exc:  # e.g. a corrupt compressed body
            request.content.feed_eof()  # nothing more to drain after the answer
            return web.json_response(
                {"error": {"message": f"otel-replay: unreadable request body: {root_cause(exc)}"}},
                status=400,
                headers={"Connection": "close"},
            )
        headers = {k.lower(): v for k, v in request.headers.items()}
        provider = providers.provider_for(request.path, headers)
        path = azure_endpoint(request.path, request.query)
        trace_id, parent = parse_traceparent(headers.get("traceparent"))
        session = self.session
        # a body identical to a recorded (hence already redacted) one replays at once:
        # first as the bytes sent, then as the parsed body
        exact = None
        if session.mode != "record":
            exact = session.exact_hit_raw(provider.name, path, raw)
        if exact is not None:
            body = session.cassette.interactions[exact].raw_request
        else:
            body = parse_body(raw)
            if session.mode != "record":
                exact = session.exact_hit(provider.name, path, body)
            if exact is None and session.mode != "record":
                body = redacted_body(session.redactor, raw, body)
        call = Call(
            request=request,
            provider=provider,
            path=path,
            upstream=providers.upstream_for(request.path, provider.name),
            operation=provider.operation(path),
            raw=raw,
            body=body,
            stream=False,
            start_ns=time.time_ns(),
            trace_id=trace_id,
            parent_span_id=parent,
            session=session,
            # record mode redacts when it records, off the agent's critical path
            redacted=session.mode != "record",
        )
        call.stream = provider.wants_stream(call.body)
        mode = session.mode
        if mode == "record":
            return await self.forward(call)
        try:
            index = exact if exact is not None else session.matcher.match(call.canonical)
        except ReplayMiss as miss:
            if mode == "auto" and self._carries_own_key(call.upstream, headers):
                return await self.forward(call)
            return self.miss(call, miss)
        recorded = session.cassette.interactions[index]
        session.replayed_hit(index, self._replayed_exchange(call, recorded))
        return await self.replay(call, recorded.response)

    def _carries_own_key(self, upstream: str, headers: Mapping[str, str]) -> bool:
        keys = self._keys.get(upstream, ())
        offered = headers.get("x-api-key") or headers.get("api-key") or ""
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            offered = offered or auth[7:].strip()
        given = offered.encode()
        return bool(offered) and any(secrets.compare_digest(given, key) for key in keys)

    def _replayed_exchange(self, call: Call, recorded: Exchange) -> Exchange | None:
        if not self.session.writes_replayed_spans:
            return None
        return call.exchange(recorded.response)

    # -- miss --------------------------------------------------------------------------
    def miss(self, call: Call, miss: ReplayMiss) -> web.Response:
        self.session.missed(miss, call.provider.name, call.path, call.body)
        log.info("%s", miss)
        body = call.provider.error_body(400, str(miss), "replay_miss")
        return web.json_response(
            body, status=400, headers={"x-should-retry": "false", "x-otel-replay": "miss"}
        )

    def unroutable(self, call: Call, exc: NoUpstream) -> web.Response:
        """A live call with no upstream to go to: the agent is told what to set, and the
        run counts it as a miss (nothing is recorded, since no provider answered), so it
        cannot pass unnoticed when the agent swallows the error."""
        log.warning("otel-replay: %s", exc)
        self.session.missed(ReplayMiss(str(exc)), call.provider.name, call.path, call.body)
        body = call.provider.error_body(502, f"otel-replay: {exc}", "otel_replay_no_upstream")
        return web.json_response(body, status=502, headers={"x-should-retry": "false"})

    # -- replay ------------------------------------------------------------------------
    async def replay(self, call: Call, response: Response) -> web.StreamResponse:
        request = call.request
        if response.fault in ("reset", "timeout"):
            if response.fault == "timeout":
                await asyncio.sleep(REPLAYED_HANG_SECONDS)
            _abort(request)
            return web.Response(status=499)
        headers = dict(response.headers)
        headers["x-otel-replay"] = "replayed"
        events = response.events
        body = response.body
        # a successful JSON answer can change form; anything else replays as recorded
        convertible = response.status < 400 and response.fault is None
        if call.stream and events is None and convertible and not isinstance(body, str):
            events = call.provider.stream_from_body(call.operation, body)
        elif not call.stream and events is not None and convertible:
            body = call.provider.body_from_stream(call.operation, events)
            events = None
            headers.pop("content-type", None)
        if events is None:
            return _body_response(response.status, headers, body)
        headers["content-type"] = "text/event-stream; charset=utf-8"
        stream = web.StreamResponse(status=response.status, headers=headers)
        await stream.prepare(request)
        recorded_pace = self.timing == "recorded"
        started = time.monotonic()
        if not recorded_pace:
            await stream.write(b"".join(sse.encode(e) for e in events))
        else:
            for event in events:
                delay = event.t - (time.monotonic() - started)
                if delay > 0:
                    await asyncio.sleep(delay)
                await stream.write(sse.encode(event))
        if response.fault == "reset_mid_stream":
            _abort(request)
            return stream
        await stream.write_eof()
        return stream

    # -- forward and record ------------------------------------------------------------
    async def forward(self, call: Call) -> web.StreamResponse:
        """Forward live and record. A plain answer reaches the agent first and is recorded
        right after (the session's ``finish`` waits for it); a stream is recorded as its
        last event passes, before the stream ends."""
        with call.session.forwarding():
            return await self._forward(call)

    async def _forward(self, call: Call) -> web.StreamResponse:
        request = call.request
        outgoing = UpstreamRequest(
            provider=call.upstream,
            method=request.method,
            path=request.path,
            query=request.query_string,
            headers={k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP},
            body=call.raw,
        )
        try:
            upstream = await self.upstream.send(outgoing)
        except NoUpstream as exc:
            return self.unroutable(call, exc)
        except UpstreamError as exc:
            self._record(call, Response(status=0, fault=exc.kind))
            _abort(request)
            return web.Response(status=502)
        except asyncio.CancelledError:
            # the agent gave up waiting: it saw a timeout, so that is what replays
            self._record(call, Response(status=0, fault="timeout"))
            raise
        kept = kept_headers(upstream.headers)
        if upstream.is_stream:
            return await self._forward_stream(
                call, upstream.status, upstream.headers, kept, upstream.chunks
            )
        chunks: list[bytes] = []
        try:
            async for chunk in upstream.chunks:
                chunks.append(chunk)
        except UpstreamError as exc:
            self._record(call, Response(status=upstream.status, headers=kept, fault=exc.kind))
            _abort(request)
            return web.Response(status=502)
        except asyncio.CancelledError:
            self._record(call, Response(status=0, fault="timeout"))
            raise
        data = b"".join(chunks)
        response = web.Response(
            status=upstream.status, body=data, headers=_passthrough(upstream.headers)
        )
        try:
            await response.prepare(request)
            await response.write_eof()
        finally:
            body = redacted_body(call.session.redactor, data)
            self._record(call, Response(status=upstream.status, headers=kept, body=body))
        return response

    async def _forward_stream(
        self,
        call: Call,
        status: int,
        upstream_headers: CIMultiDict[str],
        kept: dict[str, str],
        chunks: Any,
    ) -> web.StreamResponse:
        request = call.request
        stream = web.StreamResponse(status=status, headers=_passthrough(upstream_headers))
        await stream.prepare(request)
        parser = sse.SSEParser()
        events: list[SSEEvent] = []
        fault: str | None = None
        started = time.monotonic()
        try:
            async for chunk in chunks:
                await stream.write(chunk)
                events.extend(parser.feed(chunk, time.monotonic() - started))
        except UpstreamError as exc:
            fault = exc.kind
        except (asyncio.CancelledError, ConnectionResetError):
            events.extend(parser.close(time.monotonic() - started))
            self._record_stream(call, status, kept, events, "timeout")
            raise
        events.extend(parser.close(time.monotonic() - started))
        # recorded before the stream's end: the agent has every event already, and its
        # next call then does not queue behind this recording
        self._record_stream(call, status, kept, events, fault)
        if fault is not None:
            _abort(request)
        else:
            with contextlib.suppress(ConnectionResetError):
                await stream.write_eof()
        return stream

    def _record_stream(
        self,
        call: Call,
        status: int,
        kept: dict[str, str],
        events: list[SSEEvent],
        fault: str | None,
    ) -> None:
        events, assembled = self._redact_stream(call, events)
        response = Response(status=status, headers=kept, events=events, fault=fault)
        self._record(call, response, assembled)

    def _redact_stream(self, call: Call, events: list[SSEEvent]) -> tuple[list[SSEEvent], JSON]:
        """Redact each event, then the message they assemble into: a secret split across
        two deltas is caught there, and the stream is then rebuilt from the redacted
        message (same content and order of events, coarser chunks). Returns the events and
        the message, which the span needs too."""
        redactor = call.session.redactor
        for event in events:
            event.data = redactor.text(event.data)
        try:
            body = call.provider.body_from_stream(call.operation, events)
            clean = redactor.json(body)
            if clean == body:
                return events, body
            rebuilt = call.provider.stream_from_body(call.operation, clean)
        except Exception:  # an odd stream: the per-event redaction stands
            log.debug("could not reassemble a recorded stream", exc_info=True)
            return events, None
        last = events[-1].t if events else 0.0
        for i, event in enumerate(rebuilt):
            event.t = events[i].t if i < len(events) else last
        return rebuilt, clean

    def _record(self, call: Call, response: Response, assembled: JSON = None) -> None:
        try:
            call.session.recorded(call.exchange(response), assembled)
        except Exception:  # recording must never break the agent's call
            log.exception("otel-replay could not record an exchange")


def _passthrough(headers: CIMultiDict[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in HOP_BY_HOP)


def _body_response(status: int, headers: dict[str, str], body: JSON) -> web.Response:
    """A recorded body: JSON as JSON; text (not JSON) as recorded, with its content type."""
    if body is None:
        return web.Response(status=status, headers=headers)
    if isinstance(body, str):
        headers.setdefault("content-type", "text/plain; charset=utf-8")
        return web.Response(status=status, headers=headers, body=body.encode())
    headers["content-type"] = "application/json"
    data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return web.Response(status=status, headers=headers, body=data)


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()
