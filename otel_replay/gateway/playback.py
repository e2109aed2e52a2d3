"""Playing a recorded response back to the agent: as recorded, in the other form the call
asks for (a stream from a plain answer, a plain answer from a stream), at the recorded
pace when asked, or as the fault that was recorded (a reset, a hang, a stream cut short).
"""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from otel_replay.core.exchange import Response
from otel_replay.gateway.call import Call
from otel_replay.gateway.writers import abort, as_recorded, body_response, replayed_headers
from otel_replay.streams.codec import encode_all

__all__ = ["REPLAYED_HANG_SECONDS", "play"]

# How long a recorded hang is replayed before the gateway gives up on the agent.
REPLAYED_HANG_SECONDS = 600.0


async def play(call: Call, response: Response, timing: str = "fast") -> web.StreamResponse:
    """Answers ``call`` with the recorded ``response``; ``timing="recorded"`` paces a
    stream's events as they were recorded."""
    request = call.request
    if response.fault in ("reset", "timeout"):
        if response.fault == "timeout":
            await asyncio.sleep(REPLAYED_HANG_SECONDS)
        abort(request)
        return web.Response(status=499)
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
    stream = web.StreamResponse(status=response.status, headers=headers)
    await stream.prepare(request)
    started = time.monotonic()
    if timing != "recorded":
        await stream.write(encode_all(codec, events))
    else:
        for event in events:
            delay = event.t - (time.monotonic() - started)
            if delay > 0:
                await asyncio.sleep(delay)
            await stream.write(codec.encode(event))
    if response.fault == "reset_mid_stream":
        abort(request)
        return stream
    await stream.write_eof()
    return stream
