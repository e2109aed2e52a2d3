"""Server-sent events: an incremental parser for teeing a live stream, the encoder that
replays recorded events, and both as the ``SSE`` stream codec. Pure functions over bytes."""

from __future__ import annotations

from otel_replay.core.exchange import SSEEvent


class SSEParser:
    """Feed bytes as they arrive; get complete events back.

    Follows the WHATWG event-stream rules that matter for provider APIs: events end at a
    blank line, ``data:`` lines join with newlines, one space after the colon is dropped,
    comment lines (``:``) are ignored, CRLF and LF both end lines.
    """

    __slots__ = ("_buffer", "_data", "_event", "_parts", "pending")

    def __init__(self) -> None:
        self._buffer = b""
        self._parts: list[bytes] = []  # chunks of a line still without its end
        self._data: list[str] = []
        self._event: str | None = None
        # bytes fed since the last blank line: the event not yet complete; everything fed
        # before them makes up whole events, which a relay may pass on as they are
        self.pending = 0

    def feed(self, chunk: bytes, t: float = 0.0) -> list[SSEEvent]:
        if b"\n" not in chunk:  # a long line arriving in pieces is joined once, at its end
            self._parts.append(chunk)
            self.pending += len(chunk)
            return []
        if self._parts:
            self._buffer += b"".join(self._parts)
            self._parts = []
        buffer = self._buffer + chunk
        events: list[SSEEvent] = []
        start = 0
        boundary = -1
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                boundary = start
            event = self._line(line.decode("utf-8", "replace"), t)
            if event is not None:
                events.append(event)
        self._buffer = buffer[start:]
        self.pending = self.pending + len(chunk) if boundary < 0 else len(buffer) - boundary
        return events

    def close(self, t: float = 0.0) -> list[SSEEvent]:
        """Flush an event that the stream ended without a blank line after."""
        events = self.feed(b"\n", t) if self._buffer or self._parts else []
        final = self._line("", t)
        return events + ([final] if final is not None else [])

    def _line(self, line: str, t: float) -> SSEEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None
            event = SSEEvent(data="\n".join(self._data), event=self._event, t=t)
            self._data = []
            self._event = None
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def encode(event: SSEEvent) -> bytes:
    """The wire form of one event."""
    data = event.data
    if "\n" in data:
        body = "".join(f"data: {line}\n" for line in data.split("\n"))
    else:  # the common case: one data line
        body = f"data: {data}\n"
    if event.event is not None:
        return f"event: {event.event}\n{body}\n".encode()
    return f"{body}\n".encode()


def parse_all(payload: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    return parser.feed(payload) + parser.close()


class SSECodec:
    """Server-sent events (``text/event-stream``) as a :class:`StreamCodec`."""

    name = "sse"
    content_type = "text/event-stream; charset=utf-8"

    def is_stream(self, content_type: str) -> bool:
        return content_type.startswith("text/event-stream")

    def decoder(self) -> SSEParser:
        return SSEParser()

    def encode(self, event: SSEEvent) -> bytes:
        return encode(event)


SSE = SSECodec()
"""The SSE codec, which every current provider streams in."""
