"""The in-process transports' side of the HTTP libraries (``httpx2``, ``httpx``, either
as the request's own): answers made into its responses, a replayed or relayed stream as
its byte stream, a recorded fault raised as its exception, a live call as its request.
Each is given the library's module, imported from the request's own type."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_replay.gateway.inprocess import Answer, Live, StreamRecording

__all__ = [
    "AsyncPlayed",
    "AsyncRelayed",
    "Played",
    "Relayed",
    "fault",
    "kind",
    "library",
    "outgoing",
    "passed",
    "response",
]


def library(request: Any) -> ModuleType:
    """The HTTP library the request is of: ``httpx2`` or ``httpx``."""
    return importlib.import_module(type(request).__module__.partition(".")[0])


def response(m: ModuleType, answer: Answer, stream: Any = None) -> Any:
    headers = list(answer.headers.items())
    if stream is not None:
        return m.Response(answer.status, headers=headers, stream=_byte_stream(m, stream))
    return m.Response(answer.status, headers=headers, content=answer.body)


class _Wrapped:
    """A stream of ours as the client's library takes one (its own byte stream class)."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._source)

    def close(self) -> None:
        self._source.close()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._source.__aiter__()  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await self._source.aclose()


_STREAM_CLASSES: dict[tuple[str, bool], type[_Wrapped]] = {}


def _byte_stream(m: ModuleType, source: Any) -> _Wrapped:
    is_async = hasattr(source, "__aiter__")
    key = (m.__name__, is_async)
    cls = _STREAM_CLASSES.get(key)
    if cls is None:
        base = m.AsyncByteStream if is_async else m.SyncByteStream
        cls = _STREAM_CLASSES[key] = type("ReplayByteStream", (_Wrapped, base), {})
    return cls(source)


def fault(m: ModuleType, kind: str, request: Any) -> Exception:
    """The exception a recorded fault replays as (the same kind the client saw)."""
    if kind == "timeout":
        return m.ReadTimeout("otel-replay: a timeout, as recorded", request=request)  # type: ignore[no-any-return]
    where = "during its answer" if kind == "reset_mid_stream" else "before answering"
    message = f"otel-replay: the connection was reset {where}, as recorded"
    return m.RemoteProtocolError(message, request=request)  # type: ignore[no-any-return]


def kind(m: ModuleType, exc: BaseException, *, mid_stream: bool = False) -> str:
    if isinstance(exc, m.TimeoutException):
        return "timeout"
    return "reset_mid_stream" if mid_stream else "reset"


def outgoing(m: ModuleType, live: Live, request: Any) -> Any:
    return m.Request(
        request.method,
        live.url,
        headers=live.headers,
        content=live.body,
        extensions=request.extensions,
    )


def passed(status: int, headers: Mapping[str, str]) -> Answer:
    from otel_replay.gateway.inprocess import Answer
    from otel_replay.gateway.upstream import HOP_BY_HOP

    return Answer(status, {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP})


class Played:
    """A replayed stream, event by event (at the recorded pace when asked)."""

    def __init__(self, m: ModuleType, answer: Answer, request: Any) -> None:
        self.m, self.answer, self.request = m, answer, request

    def __iter__(self) -> Iterator[bytes]:
        answer = self.answer
        assert answer.events is not None and answer.call is not None
        codec = answer.call.codec
        if not answer.paced:
            from otel_replay.streams.codec import encode_all

            yield encode_all(codec, answer.events)
        else:
            started = time.monotonic()
            for event in answer.events:
                delay = event.t - (time.monotonic() - started)
                if delay > 0:
                    time.sleep(delay)
                yield codec.encode(event)
        if answer.fault == "reset_mid_stream":
            raise fault(self.m, answer.fault, self.request)

    def close(self) -> None:
        pass


class AsyncPlayed(Played):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        answer = self.answer
        assert answer.events is not None and answer.call is not None
        codec = answer.call.codec
        started = time.monotonic()
        for event in answer.events:
            if answer.paced:
                delay = event.t - (time.monotonic() - started)
                if delay > 0:
                    await asyncio.sleep(delay)
            yield codec.encode(event)
        if answer.fault == "reset_mid_stream":
            raise fault(self.m, answer.fault, self.request)

    async def aclose(self) -> None:
        pass


class Relayed:
    """A live stream passed to the caller chunk by chunk, recorded as it ends."""

    def __init__(
        self, m: ModuleType, upstream: Any, recording: StreamRecording, held: contextlib.ExitStack
    ) -> None:
        self.m, self.upstream, self.recording, self._held = m, upstream, recording, held

    def _end(self, fault: str | None = None, *, left: bool = False) -> bool:
        try:
            return self.recording.end(fault, left=left)
        finally:
            self._held.close()

    def _unsaved(self) -> Exception:
        message = "otel-replay: the stream could not be saved, recording stopped"
        return self.m.RemoteProtocolError(message)  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self.upstream.iter_bytes():
                self.recording.feed(chunk)
                yield chunk
        except self.m.TransportError as exc:
            self._end(kind(self.m, exc, mid_stream=True))
            raise
        if not self._end():
            raise self._unsaved()

    def close(self) -> None:
        self.upstream.close()
        self._end(left=True)


class AsyncRelayed(Relayed):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.upstream.aiter_bytes():
                self.recording.feed(chunk)
                yield chunk
        except self.m.TransportError as exc:
            self._end(kind(self.m, exc, mid_stream=True))
            raise
        if not self._end():
            raise self._unsaved()

    async def aclose(self) -> None:
        await self.upstream.aclose()
        self._end(left=True)
