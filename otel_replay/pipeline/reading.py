"""Reading the spans of a build: trace files streamed request by request with their log
records, or the requests of another source (a tracing backend: ``Spans``), with bad
input counted and progress reported."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.core.errors import TraceFormatError
from otel_replay.otlp.files import iter_log_requests, iter_trace_requests

__all__ = ["ErrorHandler", "Progress", "Reader", "Spans"]

Progress = Callable[[int, int], None]
ErrorHandler = Callable[[TraceFormatError], None]


class Spans(Protocol):
    """Spans from elsewhere than files (``build --from``: a tracing backend, see
    ``otel_replay.sources``): ``name`` for the provenance, ``requests`` reporting
    ``progress(bytes_read, 0)``."""

    @property
    def name(self) -> str: ...

    def requests(self, progress: Progress | None = None) -> Iterator[ExportTraceServiceRequest]: ...


_LOG_MARKERS = (b'"resourceLogs"', b'"resource_logs"')
_CHUNK = 1 << 20
# Within a file, progress is estimated from the decoded size of each request.
_JSON_RATIO = 2.0
_GZIP_RATIO = 0.15


def _has_logs(path: Path) -> bool:
    """Whether a file may hold log records: JSON naming ``resourceLogs``, or protobuf
    whose file name says logs."""
    opener = gzip.open if _is_gzip(path) else open
    tail = b""
    try:
        with opener(path, "rb") as handle:
            first = True
            while chunk := handle.read(_CHUNK):
                if first and chunk.lstrip()[:1] not in (b"{", b"\xef"):
                    return "log" in path.name.lower()
                first = False
                window = tail + chunk
                if any(marker in window for marker in _LOG_MARKERS):
                    return True
                tail = chunk[-32:]
    except (OSError, EOFError):
        return False  # reported when the traces are read
    return False


def _is_gzip(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(2) == b"\x1f\x8b"
    except OSError:
        return False


class Reader:
    """Streams requests from the files, counting bad input and reporting progress."""

    def __init__(
        self,
        files: list[Path],
        progress: Progress | None,
        on_error: ErrorHandler,
        spans: Spans | None = None,
    ):
        self.files = files
        self.spans = spans
        self.sizes = [f.stat().st_size for f in files]
        self.total = sum(self.sizes)
        self.progress = progress
        self.errors = 0
        self._on_error = on_error
        self._reading: Path | None = None  # the trace file being read

    def on_error(self, exc: TraceFormatError) -> None:
        """Count and pass on ``exc``, naming the trace file its span was read from."""
        self.errors += 1
        reading = self._reading
        if reading is not None and not exc.source.startswith(str(reading)):
            exc = TraceFormatError(f"{reading}: {exc.source}", exc.problem)
        self._on_error(exc)

    def logs(self) -> Iterator[ExportLogsServiceRequest]:
        for file in self.files:
            if _has_logs(file):
                yield from iter_log_requests(file, on_error=self.on_error)

    def traces(self) -> Iterator[ExportTraceServiceRequest]:
        if self.spans is not None:
            yield from self.spans.requests(self.progress)
            return
        done = 0
        for file, size in zip(self.files, self.sizes, strict=True):
            ratio = _GZIP_RATIO if _is_gzip(file) else _JSON_RATIO
            decoded = 0
            self._reading = file
            for request in iter_trace_requests(file, on_error=self.on_error):
                yield request
                decoded += request.ByteSize()
                self._report(done + min(size, int(decoded * ratio)))
            done += size
            self._reading = None
            self._report(done)

    def _report(self, read: int) -> None:
        if self.progress is not None:
            self.progress(min(read, self.total), self.total)
