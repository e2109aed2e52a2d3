"""AWS event-stream framing (``application/vnd.amazon.eventstream``) as a stream codec.

AWS streams (Bedrock's ``ConverseStream`` and ``InvokeModelWithResponseStream``) are binary
messages: a prelude (total and header lengths, CRC32), typed headers, a payload and a CRC32
of the whole message. A message becomes one event: its ``:event-type`` is the event's name
and its payload (JSON) the event's data. An exception in the stream is the event
``exception:{:exception-type}``, an error ``error:{:error-code}`` whose data is its
``:error-message``; so a recorded stream reads like an SSE one and replays byte for byte
equivalent.

Decoding uses botocore's own parser (imported when a live stream is first decoded: only
recording Bedrock needs it, and that needs botocore to sign anyway); encoding is the
framing written out, so a replay needs no AWS library.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import SSEEvent

__all__ = ["EVENTSTREAM", "EventStreamCodec", "EventStreamDecoder", "encode", "event_headers"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7  # the header value type of a string


def event_headers(event: SSEEvent) -> dict[str, str]:
    """The headers of the message an event stands for (a bare ``error`` event, which the
    gateway ends a stream with, is an internal server exception)."""
    kind, _, name = (event.event or "").partition(":")
    if kind == "error" and not name:
        kind, name = "exception", "internalServerException"
    if kind == "exception" and name:
        return {
            ":message-type": "exception",
            ":exception-type": name,
            ":content-type": "application/json",
        }
    if kind == "error" and name:
        return {":message-type": "error", ":error-code": name, ":error-message": event.data}
    return {
        ":event-type": event.event or "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }


def _event_name(headers: dict[str, Any]) -> str | None:
    kind = headers.get(":message-type", "event")
    if kind == "exception":
        return f"exception:{headers.get(':exception-type', '')}"
    if kind == "error":
        return f"error:{headers.get(':error-code', '')}"
    name = headers.get(":event-type")
    return name if isinstance(name, str) else None


def _header(name: str, value: str) -> bytes:
    key, text = name.encode(), value.encode()
    return struct.pack("B", len(key)) + key + struct.pack(">BH", _STRING, len(text)) + text


def encode(event: SSEEvent) -> bytes:
    """The wire form of one event: one event-stream message."""
    headers = event_headers(event)
    head = b"".join(_header(k, v) for k, v in headers.items())
    payload = b"" if headers[":message-type"] == "error" else event.data.encode()
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


class EventStreamDecoder:
    """Incremental decoding with botocore's ``EventStreamBuffer``. A message that fails its
    checks ends decoding (the bytes still pass through to the agent, whose own parser will
    then fail the same way)."""

    def __init__(self) -> None:
        try:
            from botocore.eventstream import EventStreamBuffer, ParserError
        except ImportError as exc:  # pragma: no cover - botocore ships with boto3
            raise ConfigError(
                "recording an AWS event stream needs botocore: pip install botocore"
            ) from exc
        self._buffer = EventStreamBuffer()
        self._error: type[Exception] = ParserError
        self._broken = False
        self.pending = 0

    def feed(self, chunk: bytes, t: float = 0.0) -> list[SSEEvent]:
        if self._broken:
            return []
        self._buffer.add_data(chunk)
        self.pending += len(chunk)
        events: list[SSEEvent] = []
        try:
            for message in self._buffer:
                self.pending -= message.prelude.total_length
                events.append(_event(message.headers, message.payload, t))
        except self._error:
            self._broken = True
            self.pending = 0
        return events

    def close(self, t: float = 0.0) -> list[SSEEvent]:
        """An event stream has no message that its end completes."""
        return []


def _event(headers: dict[str, Any], payload: bytes, t: float) -> SSEEvent:
    name = _event_name(headers)
    if name is not None and name.startswith("error:"):
        return SSEEvent(data=str(headers.get(":error-message", "")), event=name, t=t)
    return SSEEvent(data=payload.decode("utf-8", "replace"), event=name, t=t)


class EventStreamCodec:
    """AWS event-stream framing as a :class:`~otel_replay.streams.codec.StreamCodec`."""

    name = "aws-eventstream"
    content_type = CONTENT_TYPE

    def is_stream(self, content_type: str) -> bool:
        return content_type.startswith(CONTENT_TYPE)

    def decoder(self) -> EventStreamDecoder:
        return EventStreamDecoder()

    def encode(self, event: SSEEvent) -> bytes:
        return encode(event)


EVENTSTREAM = EventStreamCodec()
"""The codec of AWS streaming APIs (Bedrock Runtime)."""
