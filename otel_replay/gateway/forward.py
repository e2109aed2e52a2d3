"""Forwarding a call live and recording its exchange: a plain answer recorded before it
reaches the agent, a stream relayed event by event and recorded as its last event
passes; faults reach the agent as the same kind of fault and are recorded so they replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from otel_replay import providers
from otel_replay.core.errors import UpstreamError
from otel_replay.core.exchange import JSON, Response, SSEEvent
from otel_replay.gateway import refusal
from otel_replay.gateway.call import Call, redacted_body
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.relay import (
    OverLimit,
    StreamRelay,
    close_chunks,
    collect,
    over_limit_body,
    over_limit_event,
)
from otel_replay.gateway.upstream import (
    HOP_BY_HOP,
    NoUpstream,
    Upstream,
    UpstreamRequest,
    send_meanwhile,
    take_steps,
)
from otel_replay.gateway.writers import abort, deliver, not_saved, passthrough, served
from otel_replay.spans.pieces import holds_no_piece

__all__ = ["Forwarder", "record", "record_stream"]

log = logging.getLogger("otel_replay.gateway")


class Forwarder:
    """Forwards calls to ``upstream`` within ``limits``, recording each exchange."""

    def __init__(self, upstream: Upstream, limits: Limits) -> None:
        self.upstream = upstream
        self.limits = limits

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
        request = served(call.request)
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
        request = served(call.request)
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
        return record_stream(call, status, kept, events, fault)

    def _record(
        self, call: Call, response: Response, assembled: JSON = None, *, short: bool = False
    ) -> bool:
        return record(call, response, assembled, short=short)


def record_stream(
    call: Call, status: int, kept: dict[str, str], events: list[SSEEvent], fault: str | None
) -> bool:
    """Record a streamed live exchange (its events redacted, ``kept``: the headers kept);
    False when it could not be saved."""
    events, assembled = call.redacted_stream(events)
    response = Response(status=status, headers=kept, events=events, fault=fault)
    return record(call, response, assembled)


def record(call: Call, response: Response, assembled: JSON = None, *, short: bool = False) -> bool:
    """Record the call's live exchange (``assembled``: a stream's message, when put
    together; ``short``: no string of it long enough to be a piece); False when it could
    not be saved. The gateway and the in-process transports record with it."""
    try:
        take_steps(call.preparing(), math.inf)  # what is left (a fault's exchange)
        exchange = call.exchange(response)
        return call.session.recorded(
            exchange,
            assembled,
            short=short,
            draft=call.draft,
            trace_id=call.trace_id,
        )
    except Exception:  # recording must never break the agent's call
        log.exception("otel-replay could not record an exchange")
        return True


async def _prepared(call: Call) -> None:
    """What is left of the call's preparing once its answer is in, done before it is
    recorded; a step waiting on a module still loading is waited for, the loop serving."""
    while (left := take_steps(call.preparing(), math.inf)) is not False:
        if left is not True:  # the load is the gateway's: neither cancelled with the call
            await asyncio.wait((left,))  # nor its failure raised here (the step retries it)
