"""Relaying an upstream answer within the gateway's limits: a plain body up to its size
after decompression, a stream one whole event at a time up to the size of one event.

Over a limit the agent gets a one-line error in its provider's format (a 502, or an
``error`` event in a stream that has begun), and that error is what the exchange records,
so the fault replays; what came before it is relayed and recorded as it was.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterator

from aiohttp import web

from otel_replay.core.errors import OtelReplayError
from otel_replay.core.exchange import JSON, SSEEvent
from otel_replay.gateway.upstream import take_steps
from otel_replay.providers.base import Provider
from otel_replay.streams.codec import StreamDecoder

__all__ = [
    "OverLimit",
    "StreamRelay",
    "close_chunks",
    "collect",
    "over_limit_body",
    "over_limit_event",
]

log = logging.getLogger("otel_replay.gateway")

KIND = "otel_replay_upstream_too_large"
NO_RETRY = {"x-should-retry": "false"}


class OverLimit(OtelReplayError):
    """An upstream answer beyond one of the gateway's size limits."""

    def __init__(self, what: str, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"otel-replay: the upstream's {what} exceeds the gateway's limit of {limit} bytes"
        )


async def collect(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """A whole body, decompressed; :class:`OverLimit` as soon as it passes ``limit``."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise OverLimit("response (decompressed)", limit)
        parts.append(chunk)
    return b"".join(parts)


class StreamRelay:
    """Passes a stream on to the agent as its events complete, each up to ``limit`` bytes;
    decodes them on the way (stamped with their time since the stream began)."""

    def __init__(self, decoder: StreamDecoder, limit: int) -> None:
        self.decoder = decoder
        self.limit = limit
        self.events: list[SSEEvent] = []
        self.held = bytearray()  # the event still arriving: the agent gets events whole
        self.over: OverLimit | None = None
        self._started = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._started

    async def pump(
        self,
        stream: web.StreamResponse,
        chunks: AsyncIterator[bytes],
        meanwhile: Iterator[object] | None = None,
    ) -> None:
        """Relay until the upstream ends, or until its next event passes the limit (then
        ``over`` says so and the rest is not read). ``meanwhile``: steps of work taken
        once the first event has reached the agent, a slice after each chunk relayed,
        while the provider writes the next."""
        held = self.held
        first = True
        async for chunk in chunks:
            # the first event is passed on before the rest of its chunk is decoded (the
            # decoder, fed in two parts, finds the same events: where to cut is a guess)
            cut = chunk.find(b"\n\n") + 2 if first else 0
            parts = (chunk[:cut], chunk[cut:]) if 1 < cut < len(chunk) else (chunk,)
            for part in parts:
                self.events.extend(self.decoder.feed(part, self.now()))
                held += part
                whole = len(held) - self.decoder.pending
                if whole > 0:
                    await stream.write(bytes(held[:whole]))
                    del held[:whole]
                    first = False
                if self.decoder.pending > self.limit:
                    self.over = OverLimit("stream event", self.limit)
                    return
            if meanwhile is not None and not first and take_steps(meanwhile) is False:
                meanwhile = None

    def close(self) -> list[SSEEvent]:
        """The events still pending when the stream ends."""
        return self.decoder.close(self.now())


async def close_chunks(chunks: AsyncIterator[bytes]) -> None:
    """Stop reading an upstream body early: its connection is released, not drained."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()


def over_limit_body(provider: Provider, exc: OverLimit) -> tuple[JSON, web.Response]:
    """The 502 the agent gets for an oversized answer, and its body (which is recorded)."""
    log.warning("%s", exc)
    body = provider.error_body(502, str(exc), KIND)
    return body, web.json_response(body, status=502, headers=NO_RETRY)


def over_limit_event(provider: Provider, exc: OverLimit, t: float) -> SSEEvent:
    """The ``error`` event that ends a stream whose next event is oversized: the official
    SDKs raise it as an API error."""
    log.warning("%s", exc)
    data = json.dumps(provider.error_body(502, str(exc), KIND), separators=(",", ":"))
    return SSEEvent(data=data, event="error", t=t)
