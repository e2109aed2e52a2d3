"""Playing a recorded response back to the agent: as recorded, in the other form the call
asks for (a stream from a plain answer, a plain answer from a stream), at the recorded
pace when asked, or as the fault that was recorded (a reset, a hang, a stream cut short).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import web

from otel_replay.core.exchange import Exchange, Response, SSEEvent
from otel_replay.gateway.call import Call
from otel_replay.gateway.writers import abort, as_recorded, body_response, replayed_headers, served
from otel_replay.streams.codec import StreamCodec, encode_all
from otel_replay.streams.sse import SSE

__all__ = ["REPLAYED_HANG_SECONDS", "Paced", "play", "prime_streams", "replayed"]

_ENCODED: dict[tuple[int, int], tuple[object, list[SSEEvent], bytes, int]] = {}
_ENCODED_MAX = 256

# How long a recorded hang is replayed before the gateway gives up on the agent.
REPLAYED_HANG_SECONDS = 600.0


async def play(call: Call, response: Response, timing: str = "fast") -> web.StreamResponse:
    """Answers ``call`` with the recorded ``response``; ``timing="recorded"`` paces a
    stream's events as they were recorded."""
    request = served(call.request)
    if response.fault in ("reset", "timeout"):
        if response.fault == "timeout":
            await asyncio.sleep(REPLAYED_HANG_SECONDS)
        abort(request)
        return web.Response(status=499)
    answer = replayed(call, response, timing)
    if not isinstance(answer, Paced):  # not against web.Response: an ABC, slow at first
        return answer
    stream = web.StreamResponse(status=response.status, headers=answer.headers)
    await stream.prepare(request)
    started = time.monotonic()
    codec = call.codec
    if timing != "recorded":
        await stream.write(encode_all(codec, answer.events))
    else:
        for event in answer.events:
            delay = event.t - (time.monotonic() - started)
            if delay > 0:
                await asyncio.sleep(delay)
            await stream.write(codec.encode(event))
    if response.fault == "reset_mid_stream":
        abort(request)
        return stream
    await stream.write_eof()
    return stream


@dataclass(frozen=True, slots=True)
class Paced:
    """A replayed stream written event by event (at its recorded pace, or cut short as
    recorded): its headers and events."""

    headers: dict[str, str]
    events: list[SSEEvent]


def replayed(call: Call, response: Response, timing: str = "fast") -> web.Response | Paced:
    """The answer replaying ``response`` for ``call`` (a fault's reset or hang aside), in
    the form the call asks for (a stream from a plain answer, a plain answer from a
    stream): whole, when it goes in one write; else the stream to write event by event.
    The gateway and the in-process transports both answer with it."""
    plain = as_recorded(response, call.stream)
    if plain is not None:
        return plain
    headers = replayed_headers(response)
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
        return body_response(response.status, headers, body)
    codec = call.codec
    headers["content-type"] = codec.content_type
    if timing != "recorded" and response.fault is None:
        # the whole stream is known: sent with its headers in one write (a stream's
        # headers, events and end, written in turn, cost three sends, each waking the
        # agent), its length given rather than chunked
        recorded = events is response.events  # not converted for this call: remembered
        wire = _encoded(codec, events) if recorded else encode_all(codec, events)
        for name in ("content-length", "transfer-encoding"):
            headers.pop(name, None)
        return web.Response(status=response.status, headers=headers, body=wire)
    return Paced(headers, events)


def _encoded(codec: StreamCodec, events: list[SSEEvent]) -> bytes:
    """``encode_all(codec, events)``, remembered for the last streams played by identity
    (a recording's events are the same objects each time it is replayed)."""
    key = (id(codec), id(events))
    found = _ENCODED.get(key)
    if found is not None and found[0] is codec and found[1] is events and found[3] == len(events):
        return found[2]
    wire = encode_all(codec, events)
    if len(_ENCODED) >= _ENCODED_MAX:
        _ENCODED.clear()
    _ENCODED[key] = (codec, events, wire, len(events))
    return wire


def prime_streams(recorded: Iterable[Exchange]) -> None:
    """Encodes the recorded streams replayed first (as many as ``_encoded`` keeps) before
    the first request, so replaying one costs no encoding: each recording's events are
    encoded once whichever request replays them. Bedrock's binary streams are left to
    their first replay."""
    for exchange in recorded:
        events = exchange.response.events
        if events is None or exchange.response.fault is not None:
            continue
        if exchange.provider.startswith("aws."):
            continue
        if len(_ENCODED) >= _ENCODED_MAX:
            return
        _encoded(SSE, events)
