"""The trace store: OTLP JSON lines, one Export*ServiceRequest per line.

The format is the OpenTelemetry Collector file exporter's, so its output is input here and
ours is input to any tool that reads it. Writing is append-only, one ``write`` of one whole
line per batch, flushed at once: a killed process leaves every complete line valid. Each
line is checked for secrets as it is written (``redaction.trace_line``), so secrets never
reach the file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO

from otel_replay.core import diskspace
from otel_replay.redaction.keyed import PlaceholderKey
from otel_replay.redaction.trace_line import LineCheck, Redact, RedactText

if TYPE_CHECKING:  # protobuf is imported with the first line written, not at start-up
    from google.protobuf.message import Message
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

log = logging.getLogger("otel_replay")

_ASIDE = 8 * 1024 * 1024  # room set aside past a trace file's end at a time (``reserve``)

Tap = Callable[[str, "Message"], None]


def sibling(path: str | Path, signal: str) -> Path:
    """``X.jsonl`` -> ``X.<signal>.jsonl`` (any suffix; ``.jsonl`` when there is none)."""
    path = Path(path)
    suffix = path.suffix or ".jsonl"
    return path.with_name(f"{path.stem if path.suffix else path.name}.{signal}{suffix}")


class _LineFile:
    """One append-only JSON lines file, opened on first write."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: BinaryIO | None = None
        self._aside = 0  # the file's blocks are allocated up to this offset (``reserve``)
        self._end = 0  # where this writer's last line ended

    def reserve(self, size: int) -> bool:
        """Whether a line of up to ``size`` bytes has room set aside for it, past the end
        of the file and within the file-size limit, so that appending it cannot fail for
        lack of space; room for several such lines is set aside when there is too little.
        False when none can be had (the disk is full, the file cannot be opened, the file
        system sets no room aside): the line's append is then the only test. No path
        means nothing is written: True."""
        if self.path is None:
            return True
        try:
            if self._file is None:
                self._file = self._open(self.path)
            fd = self._file.fileno()
            end = os.fstat(fd).st_size
        except OSError:
            return False
        if end + size <= self._aside:
            return True
        length = max(_ASIDE, 2 * size)
        limit = diskspace.size_limit()
        if limit is not None:
            length = min(length, limit - end)
        if length < size or not diskspace.set_aside(fd, end, length):
            return False
        self._aside = end + length
        return True

    def append(self, line: bytes) -> None:
        """Write one whole line or, raising ``OSError``, none of it: a write cut short
        (a full disk, a file-size limit) is cut off again, so every line stays valid."""
        if self.path is None:
            return
        if self._file is None:
            self._file = self._open(self.path)
        fd = self._file.fileno()
        start = os.fstat(fd).st_size
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
        self._end = start + len(line)

    @staticmethod
    def _open(path: Path) -> BinaryIO:
        path.parent.mkdir(parents=True, exist_ok=True)
        # unbuffered, kept open across calls (close() closes it): each line is written
        # by ``append`` itself
        file = open(path, "ab", buffering=0)
        # A line cut short by a crash must not swallow the next one.
        if file.tell() > 0:
            with open(path, "rb") as reader:
                reader.seek(-1, os.SEEK_END)
                if reader.read(1) != b"\n":
                    file.write(b"\n")
        return file

    def close(self) -> None:
        if self._file is not None:
            fd = self._file.fileno()
            # the room set aside and not used is given back, when no other writer has
            # appended since this one's last line (a truncation then cuts nothing)
            with contextlib.suppress(OSError):
                if self._aside and os.fstat(fd).st_size == self._end:
                    os.ftruncate(fd, self._end)
            self._aside = 0
            self._file.close()
            self._file = None


class TraceStore:
    """Appends received (and the gateway's own) telemetry to OTLP JSON lines files.

    A path of None counts batches without writing them. Safe to call from several threads
    (the gRPC receiver may); files are opened lazily and their parent directories created.
    """

    def __init__(
        self,
        traces: str | Path | None,
        logs: str | Path | None = None,
        metrics: str | Path | None = None,
        *,
        redact: Redact | None = None,
        redact_text: RedactText | None = None,
        by_parts: bool = False,
        might_hold: Callable[[str], bool] | None = None,
        placeholder_key: PlaceholderKey | None = None,
    ) -> None:
        """How each line is checked for secrets: ``redaction.trace_line.LineCheck``
        (``by_parts`` applies to otel-replay's own lines, ``traces_line``)."""
        self.check = LineCheck(
            redact,
            redact_text,
            by_parts=by_parts,
            might_hold=might_hold,
            placeholder_key=placeholder_key,
        )
        self._traces = _LineFile(Path(traces) if traces is not None else None)
        self._logs = _LineFile(Path(logs) if logs is not None else None)
        self._metrics = _LineFile(Path(metrics) if metrics is not None else None)
        self._lock = threading.Lock()
        self.spans_received = 0
        self.logs_received = 0
        self.metric_points_received = 0
        self.failure: str | None = None  # the first write that failed, once one has
        self.lines_lost = 0
        self.observers: list[Tap] = []
        """Each sees every received batch (a block's ``run.spans``, bypass detection)."""

    @classmethod
    def beside(
        cls,
        traces_path: str | Path,
        redact: Redact | None = None,
        redact_text: RedactText | None = None,
        by_parts: bool = False,
        might_hold: Callable[[str], bool] | None = None,
        placeholder_key: PlaceholderKey | None = None,
    ) -> TraceStore:
        """A store writing traces to ``X.jsonl``, logs and metrics to ``X.logs.jsonl`` and
        ``X.metrics.jsonl`` beside it."""
        traces = Path(traces_path)
        logs, metrics = sibling(traces, "logs"), sibling(traces, "metrics")
        return cls(
            traces,
            logs,
            metrics,
            redact=redact,
            redact_text=redact_text,
            by_parts=by_parts,
            might_hold=might_hold,
            placeholder_key=placeholder_key,
        )

    @property
    def traces_path(self) -> Path | None:
        return self._traces.path

    @property
    def logs_path(self) -> Path | None:
        return self._logs.path

    @property
    def metrics_path(self) -> Path | None:
        return self._metrics.path

    def write_traces(
        self,
        msg: ExportTraceServiceRequest,
        *,
        received: bool = True,
    ) -> None:
        """Store one trace batch; ``received=False`` for spans otel-replay made itself."""
        from otel_replay.otlp import codec

        count = codec.count_spans(msg) if received else 0
        if received:
            self._tapped("traces", msg)
        line = self._line(self._traces, msg, bool(msg.resource_spans))
        with self._lock:
            self.spans_received += count
            if line is not None:
                self._append(self._traces, line)

    def traces_line(self, doc: dict[str, Any]) -> bytes | None:
        """The line ``write_traces`` would store for the request whose OTLP JSON form
        (``codec.to_json``) is ``doc``, redacted; None when this store keeps no traces.
        Building it can fail (a value JSON cannot carry) without touching the store."""
        return self.own_line(doc)[0]

    def own_line(self, doc: dict[str, Any]) -> tuple[bytes | None, bool]:
        """``traces_line``, and whether redaction left the line as ``doc`` encodes (only
        then does the line hold each string of ``doc`` exactly)."""
        if self._traces.path is None or not doc.get("resourceSpans"):
            return None, True
        return self.check.line(doc, own=True)

    def learning(self, texts: list[str]) -> Iterator[None]:
        """Check ahead the strings a line of the gateway's own is about to hold (a
        recorded call's request, while its provider works), as that line will hold
        them, so that writing it checks only what is new in it (``by_parts``); a step
        for each text checked."""
        if self._traces.path is not None:
            yield from self.check.learning(texts)

    def room_for_traces(self, size: int) -> bool:
        """Whether a line of up to ``size`` bytes appended to the traces file cannot fail
        for lack of space (see ``_LineFile.reserve``); False once the store has stopped."""
        with self._lock:
            return self.failure is None and self._traces.reserve(size)

    def append_traces(self, line: bytes | None) -> bool:
        """Store a line from ``traces_line`` (otel-replay's own spans: not counted as
        received), flushed at once like every batch; False when it could not be."""
        if line is None:
            return True
        with self._lock:
            return self._append(self._traces, line)

    def write_logs(self, msg: ExportLogsServiceRequest) -> None:
        from otel_replay.otlp import codec

        count = codec.count_log_records(msg)
        self._tapped("logs", msg)
        line = self._line(self._logs, msg, bool(msg.resource_logs))
        with self._lock:
            self.logs_received += count
            if line is not None:
                self._append(self._logs, line)

    def write_metrics(self, msg: ExportMetricsServiceRequest) -> None:
        from otel_replay.otlp import codec

        count = codec.count_metric_points(msg)
        self._tapped("metrics", msg)
        line = self._line(self._metrics, msg, bool(msg.resource_metrics))
        with self._lock:
            self.metric_points_received += count
            if line is not None:
                self._append(self._metrics, line)

    def _tapped(self, signal: str, msg: Message) -> None:
        for observe in self.observers:
            try:
                observe(signal, msg)
            except Exception:  # a reader's fault never costs the batch its place on disk
                log.exception("otel-replay: could not read a received %s batch", signal)

    def _append(self, target: _LineFile, line: bytes) -> bool:
        """Write one line (under ``_lock``). The first failure stops the store: that
        line and every later one are counted in ``lines_lost``, not written, so what is
        on disk is a clean prefix of the run (``failure`` says why)."""
        if self.failure is None:
            try:
                target.append(line)
                return True
            except OSError as exc:
                self.failure = f"cannot write {target.path}: {exc.strerror or exc}"
                log.error("otel-replay: %s; nothing more is written", self.failure)
        self.lines_lost += 1
        return False

    def _line(self, target: _LineFile, msg: Message, nonempty: bool) -> bytes | None:
        """The redacted JSON line for ``msg``, or None when there is nothing to write."""
        if target.path is None or not nonempty:
            return None
        from otel_replay.otlp import codec

        return self.check.line(codec.to_json(msg))[0]

    def close(self) -> None:
        """Close the files; a later write opens them again (appending)."""
        with self._lock:
            for target in (self._traces, self._logs, self._metrics):
                target.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


StoreSource = TraceStore | Callable[[], TraceStore]
"""A store, or a function returning the current one (a gateway whose session changes)."""


def current_store(source: StoreSource) -> TraceStore:
    return source if isinstance(source, TraceStore) else source()


def ingest_traces(store: TraceStore, request: ExportTraceServiceRequest) -> tuple[int, str]:
    """What both OTLP receivers do with a trace batch: drop spans the spec rejects (ids of
    the wrong length), store the rest, and say how many were rejected and why."""
    from otel_replay.otlp import codec

    rejected = codec.drop_invalid_spans(request)
    store.write_traces(request)
    return rejected


def ingest_logs(store: TraceStore, request: ExportLogsServiceRequest) -> tuple[int, str]:
    from otel_replay.otlp import codec

    rejected = codec.drop_invalid_log_records(request)
    store.write_logs(request)
    return rejected


def ingest_metrics(store: TraceStore, request: ExportMetricsServiceRequest) -> tuple[int, str]:
    store.write_metrics(request)
    return 0, ""
