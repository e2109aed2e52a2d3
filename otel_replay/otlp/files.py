"""Reading trace and log files: OTLP JSON lines (the Collector's file exporter), one OTLP
JSON document, or OTLP protobuf, each optionally gzip-compressed."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.core.errors import TraceFormatError
from otel_replay.otlp.codec import LOGS, TRACES, M, Signal, from_doc, from_proto, load_json

__all__ = ["ErrorHandler", "iter_log_requests", "iter_trace_requests"]

ErrorHandler = Callable[[TraceFormatError], None]


def iter_trace_requests(
    path: str | Path, *, on_error: ErrorHandler | None = None
) -> Iterator[ExportTraceServiceRequest]:
    """Requests from an OTLP JSON lines file, one OTLP JSON document or OTLP protobuf,
    optionally gzip-compressed. A bad line goes to ``on_error`` (default: raise) naming
    ``path:line``, and reading continues; lines of another signal are skipped."""
    return _iter_requests(TRACES, Path(path), on_error)


def iter_log_requests(
    path: str | Path, *, on_error: ErrorHandler | None = None
) -> Iterator[ExportLogsServiceRequest]:
    """``iter_trace_requests`` for logs files."""
    return _iter_requests(LOGS, Path(path), on_error)


def _raise(exc: TraceFormatError) -> None:
    raise exc


_READ_ERRORS = (OSError, EOFError, zlib.error)


def _open(path: Path) -> io.BufferedReader | gzip.GzipFile:
    try:
        with open(path, "rb") as probe:
            compressed = probe.read(2) == b"\x1f\x8b"
        return gzip.open(path, "rb") if compressed else open(path, "rb")
    except OSError as exc:
        raise TraceFormatError(path, f"cannot read: {exc.strerror or exc}") from exc


_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def _looks_like_json(head: bytes, path: Path | None = None) -> bool:
    """Text is JSON (lines), even when its first line is garbage; OTLP protobuf soon has
    small tag and length bytes, which JSON text never contains. A ``.json``/``.jsonl``
    name settles it."""
    if path is not None and path.name.removesuffix(".gz").endswith(_JSON_SUFFIXES):
        return True
    return not any(b < 0x20 and b not in (9, 10, 13) for b in head[:4096])


def _iter_requests(signal: Signal[M], path: Path, on_error: ErrorHandler | None) -> Iterator[M]:
    handle = on_error or _raise
    with _open(path) as stream:
        try:
            is_json = _looks_like_json(stream.peek(4096), path)
            data = b"" if is_json else stream.read()
        except _READ_ERRORS as exc:
            handle(TraceFormatError(path, f"cannot read: {exc}"))
            return
        if is_json:
            yield from _iter_json(signal, path, enumerate(stream, 1), handle)
            return
        try:
            request = from_proto(signal, data, str(path))
        except TraceFormatError as exc:
            handle(exc)
            return
        yield request


def _iter_json(
    signal: Signal[M], path: Path, lines: Iterator[tuple[int, bytes]], handle: ErrorHandler
) -> Iterator[M]:
    """JSON lines; or, when the first line is not a JSON value, one multi-line document."""
    lineno = 0
    try:
        for lineno, raw in lines:
            if not raw.strip():
                continue
            try:
                doc: Any = json.loads(raw)
            except (ValueError, RecursionError):
                yield from _iter_document(signal, path, lineno, raw, lines, handle)
                return
            yield from _one(signal, doc, f"{path}:{lineno}", handle)
            break
        for lineno, raw in lines:
            if raw.strip():
                source = f"{path}:{lineno}"
                try:
                    doc = load_json(raw, source)
                except TraceFormatError as exc:
                    handle(exc)
                    continue
                yield from _one(signal, doc, source, handle)
    except _READ_ERRORS as exc:
        handle(TraceFormatError(f"{path}:{lineno + 1}", f"cannot read: {exc}"))


def _one(signal: Signal[M], doc: Any, source: str, handle: ErrorHandler) -> Iterator[M]:
    if isinstance(doc, dict) and signal.top[0] not in doc and signal.top[1] not in doc:
        return  # another signal's line (a Collector file exporter may share one file)
    try:
        request = from_doc(signal, doc, source)
    except TraceFormatError as exc:
        handle(exc)
        return
    yield request


def _iter_document(
    signal: Signal[M],
    path: Path,
    first_lineno: int,
    first: bytes,
    lines: Iterator[tuple[int, bytes]],
    handle: ErrorHandler,
) -> Iterator[M]:
    """The rest of the file as one document; when that fails too and the first line does
    not open a pretty-printed object, the file is JSON lines with a bad first line."""
    rest = [raw for _, raw in lines]
    try:
        doc = json.loads(b"".join([first, *rest]))
    except (ValueError, RecursionError) as exc:
        if first.strip() == b"{":
            where = first_lineno + getattr(exc, "lineno", 1) - 1
            handle(TraceFormatError(f"{path}:{where}", f"invalid JSON: {exc}"))
            return
        try:
            load_json(first, f"{path}:{first_lineno}")
        except TraceFormatError as line_error:
            handle(line_error)
        yield from _iter_json(signal, path, enumerate(rest, first_lineno + 1), handle)
        return
    yield from _one(signal, doc, str(path), handle)
