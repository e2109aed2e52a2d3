"""The OTLP/HTTP receiver: POST /v1/traces, /v1/logs and /v1/metrics on the gateway's app
(registered by ``routes.py``, which loads this module at the first export).

Answers follow the OTLP/HTTP specification: protobuf or JSON bodies, gzip or deflate
content encoding, 200 with an Export*ServiceResponse encoded like the request (with
``partial_success`` when some items were rejected), 400 with a ``google.rpc.Status`` for an
undecodable body, 413 over the size limit, 415 for another content type. A bad request never
disturbs what was stored before it, and nothing here raises into the client.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs_pb
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_pb

from otel_replay.core import jsontext
from otel_replay.core.errors import TraceFormatError, root_cause
from otel_replay.otlp import codec
from otel_replay.otlp.store import (
    StoreSource,
    TraceStore,
    current_store,
    ingest_logs,
    ingest_metrics,
    ingest_traces,
)

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_PROTOBUF_TYPES = frozenset({PROTOBUF, "application/protobuf"})
_CHUNK = 64 * 1024
_DECODED_BY_AIOHTTP = frozenset({"gzip", "deflate", "br", "zstd"})


class _Refused(Exception):
    """A request answered with an error status and a google.rpc.Status body."""

    def __init__(self, http_status: int, code: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.code = code
        self.message = message
        self.close = close  # the body was not read to its end: the connection cannot be reused


_M = TypeVar("_M", bound=Message)


@dataclass(frozen=True, slots=True)
class _Route:
    """How one signal is decoded, checked, stored and answered."""

    from_proto: Callable[[bytes], Any]
    from_json: Callable[[bytes], Any]
    store: Callable[[TraceStore, Any], tuple[int, str]]
    response: Callable[[int, str], Message]


def _partial(response: _M, field: str, rejected: int, message: str) -> _M:
    """An Export*ServiceResponse, with its partial success filled in when anything was
    rejected (``field`` names the signal's rejected counter)."""
    if rejected or message:
        setattr(response.partial_success, field, rejected)
        response.partial_success.error_message = message
    return response


def trace_response(rejected: int, message: str) -> trace_pb.ExportTraceServiceResponse:
    return _partial(trace_pb.ExportTraceServiceResponse(), "rejected_spans", rejected, message)


def logs_response(rejected: int, message: str) -> logs_pb.ExportLogsServiceResponse:
    return _partial(logs_pb.ExportLogsServiceResponse(), "rejected_log_records", rejected, message)


def metrics_response(rejected: int, message: str) -> metrics_pb.ExportMetricsServiceResponse:
    return _partial(
        metrics_pb.ExportMetricsServiceResponse(), "rejected_data_points", rejected, message
    )


ROUTES = (
    _Route(codec.traces_from_proto, codec.traces_from_json, ingest_traces, trace_response),
    _Route(codec.logs_from_proto, codec.logs_from_json, ingest_logs, logs_response),
    _Route(
        codec.metrics_from_proto,
        codec.metrics_from_json,
        ingest_metrics,
        metrics_response,
    ),
)


def handlers(
    paths: Sequence[str], store: StoreSource, max_body: int, read_timeout: float
) -> dict[str, Handler]:
    """Each endpoint's handler by path; ``paths``: the traces', logs' and metrics' paths,
    in that order (``routes.add_otlp_routes`` registers the handlers at them)."""
    return {
        path: _handler(path, route, store, max_body, read_timeout)
        for path, route in zip(paths, ROUTES, strict=True)
    }


def _handler(
    path: str, route: _Route, store: StoreSource, max_body: int, read_timeout: float
) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        as_json = request.content_type == JSON
        try:
            if not as_json and request.content_type not in _PROTOBUF_TYPES:
                raise _Refused(
                    415,
                    code_pb2.INVALID_ARGUMENT,
                    f"unsupported content type {request.content_type!r}; use {PROTOBUF} or {JSON}",
                )
            try:
                async with asyncio.timeout(read_timeout):
                    body = await _read_body(request, max_body)
            except TimeoutError as exc:
                request.content.feed_eof()
                message = f"request body not received within {read_timeout:g} s"
                raise _Refused(408, code_pb2.DEADLINE_EXCEEDED, message, close=True) from exc
            body = _decode_content(request, body, max_body)
            try:
                message = (route.from_json if as_json else route.from_proto)(body)
            except TraceFormatError as exc:
                raise _Refused(400, code_pb2.INVALID_ARGUMENT, exc.problem) from exc
            rejected, why = route.store(current_store(store), message)
            if rejected:
                logger.warning("OTLP %s: rejected %d: %s", path, rejected, why)
            return _encode(route.response(rejected, why), 200, as_json)
        except _Refused as exc:
            logger.warning("OTLP %s: %d %s", path, exc.http_status, exc.message)
            status = status_pb2.Status(code=exc.code, message=exc.message)
            response = _encode(status, exc.http_status, as_json)
            if exc.close:
                response.force_close()
            return response
        except Exception as exc:  # the receiver answers; it never raises into the agent
            logger.exception("OTLP %s: failed to store a batch", path)
            status = status_pb2.Status(code=code_pb2.INTERNAL, message=f"{type(exc).__name__}")
            return _encode(status, 500, as_json)

    return handle


async def _read_body(request: web.Request, max_body: int) -> bytes:
    """The body, read in chunks; refused with 413 as soon as it exceeds ``max_body``."""
    if request.content_length is not None and request.content_length > max_body:
        raise _too_large(max_body)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.content.iter_chunked(_CHUNK):
            size += len(chunk)
            if size > max_body:
                raise _too_large(max_body)
            chunks.append(chunk)
    except web.RequestPayloadError as exc:  # e.g. aiohttp could not decompress it
        # The rest of the body is unreadable too: marked as ended, aiohttp does not try
        # to drain it after the answer (and log the same failure as unhandled).
        request.content.feed_eof()
        raise _Refused(
            400, code_pb2.INVALID_ARGUMENT, f"unreadable body: {root_cause(exc)}", close=True
        ) from exc
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _too_large(max_body: int) -> _Refused:
    message = f"request body exceeds {max_body} bytes"
    return _Refused(413, code_pb2.RESOURCE_EXHAUSTED, message, close=True)


def _decode_content(request: web.Request, body: bytes, max_body: int) -> bytes:
    """The body without its content encoding.

    aiohttp's server decodes gzip, deflate (and br/zstd when their libraries are present)
    while streaming, which also bounds a decompression bomb by ``max_body``; this decodes
    only when the server runs with ``auto_decompress=False``.
    """
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in _DECODED_BY_AIOHTTP:
        raise _Refused(415, code_pb2.INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}")
    if getattr(request.content, "total_compressed_bytes", 0) is not None:
        return body  # already decoded by aiohttp
    if encoding == "gzip":
        return _inflate(body, 16 + zlib.MAX_WBITS, max_body, "gzip")
    if encoding == "deflate":
        wbits = zlib.MAX_WBITS if body[:1] and body[0] & 0xF == 8 else -zlib.MAX_WBITS
        return _inflate(body, wbits, max_body, "deflate")
    raise _Refused(415, code_pb2.INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}")


def _inflate(body: bytes, wbits: int, max_body: int, name: str) -> bytes:
    """Decompress every member of ``body``, refusing output beyond ``max_body``."""
    out: list[bytes] = []
    size = 0
    data = body
    try:
        while data:
            inflater = zlib.decompressobj(wbits)
            chunk = inflater.decompress(data, max_body - size + 1)
            size += len(chunk)
            if size > max_body:
                raise _Refused(
                    413,
                    code_pb2.RESOURCE_EXHAUSTED,
                    f"{name} body inflates beyond {max_body} bytes",
                )
            if not inflater.eof:
                raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"truncated {name} body")
            out.append(chunk)
            data = inflater.unused_data
    except zlib.error as exc:
        raise _Refused(400, code_pb2.INVALID_ARGUMENT, f"invalid {name} body: {exc}") from exc
    return b"".join(out)


def _encode(message: Message, status: int, as_json: bool) -> web.Response:
    if as_json:
        text = jsontext.dumps_line(json_format.MessageToDict(message))
        return web.Response(status=status, body=text.encode("utf-8"), content_type=JSON)
    return web.Response(status=status, body=message.SerializeToString(), content_type=PROTOBUF)
