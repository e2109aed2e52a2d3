"""The stream codec seam: one codec per wire format a provider streams in.

A codec turns the bytes of a streamed response into events as they arrive (each stamped
with its time since the stream began) and turns recorded events back into bytes. Server-sent
events (:mod:`otel_replay.streams.sse`) are the first codec; a binary framing is another
module with the same three parts: ``decoder()``, ``encode(event)``, ``content_type``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from otel_replay.core.exchange import SSEEvent

__all__ = ["StreamCodec", "StreamDecoder", "decode_all", "encode_all"]


class StreamDecoder(Protocol):
    """Incremental decoding of one stream: feed chunks as they arrive, close at the end."""

    pending: int
    """Bytes fed that do not yet make a whole event (the tail a relay holds back)."""

    def feed(self, chunk: bytes, t: float = 0.0) -> list[SSEEvent]:
        """The events that ``chunk`` completes, stamped ``t`` (seconds since the start)."""
        ...

    def close(self, t: float = 0.0) -> list[SSEEvent]:
        """The events still pending when the stream ends."""
        ...


class StreamCodec(Protocol):
    """One streaming wire format."""

    name: str
    """Short name of the format, e.g. ``"sse"``."""

    content_type: str
    """The ``content-type`` a replayed stream is sent with."""

    def is_stream(self, content_type: str) -> bool:
        """Whether a response with this ``content-type`` is a stream in this format."""
        ...

    def decoder(self) -> StreamDecoder:
        """A fresh incremental decoder."""
        ...

    def encode(self, event: SSEEvent) -> bytes:
        """The wire form of one event."""
        ...


def encode_all(codec: StreamCodec, events: Iterable[SSEEvent]) -> bytes:
    """The wire form of a whole stream."""
    return b"".join(codec.encode(event) for event in events)


def decode_all(codec: StreamCodec, payload: bytes) -> list[SSEEvent]:
    """Every event of a complete stream."""
    decoder = codec.decoder()
    return decoder.feed(payload) + decoder.close()
