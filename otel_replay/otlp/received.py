"""Telemetry as it arrives at the receivers, kept in memory as plain objects a test reads.

:class:`Received` is the tap both receivers feed through the trace store (every batch,
in arrival order, numbered); a :class:`Window` is the part of it one block owns — what
arrived while the block ran, and what arrived later in a trace the block saw. Spans come
back linked into trees (``parent`` / ``children``) within the window, so a parent that
arrived outside it is ``None`` and its children are roots.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2

from otel_replay.core.errors import OtelReplayError
from otel_replay.core.ids import hex_id
from otel_replay.otlp.attributes import any_value_to_python, attributes_to_dict
from otel_replay.otlp.codec import iter_spans

__all__ = ["LogRecord", "MetricPoint", "Received", "Span", "SpanEvent", "SpanList", "Window"]

_KINDS = {n: name.removeprefix("SPAN_KIND_") for name, n in trace_pb2.Span.SpanKind.items()}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    attributes: dict[str, Any]
    time_unix_nano: int


@dataclass(frozen=True, slots=True)
class Status:
    code: str  # "UNSET" | "OK" | "ERROR", as OpenTelemetry's StatusCode names them
    message: str = ""


@dataclass(eq=False, slots=True)
class Span:
    """One received span. ``kind`` is a ``SpanKind`` name (``"CLIENT"``, ``"INTERNAL"``…);
    ``parent`` is the parent span when it is among the spans read with it, else None."""

    name: str
    kind: str
    attributes: dict[str, Any]
    events: list[SpanEvent]
    status: Status
    trace_id: str
    span_id: str
    parent_span_id: str | None
    start_time_unix_nano: int
    end_time_unix_nano: int
    scope: str
    resource: dict[str, Any]
    parent: Span | None = None
    children: list[Span] = field(default_factory=list)

    def walk(self) -> Iterator[tuple[Span, int]]:
        """This span and its descendants, depth first in start order, with their depth."""
        stack: list[tuple[Span, int]] = [(self, 0)]
        while stack:
            span, depth = stack.pop()
            yield span, depth
            stack.extend((child, depth + 1) for child in reversed(span.children))

    def descendants(self, name: str | None = None) -> list[Span]:
        """Spans under this one (named ``name``, when given), depth first."""
        found = [span for span, depth in self.walk() if depth]
        return found if name is None else [s for s in found if s.name == name]

    @property
    def ancestors(self) -> list[Span]:
        """The parent, its parent, … up to the root."""
        chain: list[Span] = []
        node = self.parent
        while node is not None:
            chain.append(node)
            node = node.parent
        return chain

    def __repr__(self) -> str:
        return f"<Span {self.name!r} {self.kind} {self.span_id}>"


class SpanList(list[Span]):
    """Spans in arrival order, with helpers to find them and walk their trees."""

    @property
    def roots(self) -> list[Span]:
        """Spans whose parent is not among these, in start order."""
        return sorted((s for s in self if s.parent is None), key=_started)

    def named(self, name: str) -> list[Span]:
        return [s for s in self if s.name == name]

    def one(self, name: str) -> Span:
        """The one span named ``name``; an error naming the spans there are otherwise."""
        found = self.named(name)
        if len(found) != 1:
            have = ", ".join(sorted({s.name for s in self})) or "none"
            raise LookupError(f"{len(found)} spans named {name!r} (spans: {have})")
        return found[0]

    def walk(self) -> Iterator[tuple[Span, int]]:
        """Every tree depth first from its root, roots in start order."""
        for root in self.roots:
            yield from root.walk()

    def tree(self) -> str:
        """The span trees as indented text, one span a line."""
        return "\n".join(f"{'  ' * depth}{span.name} [{span.kind}]" for span, depth in self.walk())


@dataclass(frozen=True, slots=True)
class LogRecord:
    body: Any
    severity_text: str
    severity_number: int
    attributes: dict[str, Any]
    trace_id: str | None
    span_id: str | None
    time_unix_nano: int
    event_name: str
    scope: str


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One data point: ``value`` for sums and gauges, ``count`` / ``sum`` for histograms
    and summaries (``value`` is then the sum)."""

    name: str
    kind: str  # "sum" | "gauge" | "histogram" | "exponential_histogram" | "summary"
    unit: str
    attributes: dict[str, Any]
    value: float | int
    count: int | None
    time_unix_nano: int
    scope: str


def spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    return [
        Span(
            name=span.name,
            kind=_KINDS.get(span.kind, "UNSPECIFIED"),
            attributes=attributes_to_dict(span.attributes),
            events=[
                SpanEvent(e.name, attributes_to_dict(e.attributes), e.time_unix_nano)
                for e in span.events
            ],
            status=Status(_STATUS.get(span.status.code, "UNSET"), span.status.message),
            trace_id=hex_id(span.trace_id) or "",
            span_id=hex_id(span.span_id) or "",
            parent_span_id=hex_id(span.parent_span_id),
            start_time_unix_nano=span.start_time_unix_nano,
            end_time_unix_nano=span.end_time_unix_nano,
            scope=scope.name,
            resource=attributes_to_dict(resource.attributes),
        )
        for resource, scope, span in iter_spans(request)
    ]


def logs_of(request: ExportLogsServiceRequest) -> list[LogRecord]:
    return [
        LogRecord(
            body=any_value_to_python(record.body),
            severity_text=record.severity_text,
            severity_number=record.severity_number,
            attributes=attributes_to_dict(record.attributes),
            trace_id=hex_id(record.trace_id),
            span_id=hex_id(record.span_id),
            time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano,
            event_name=record.event_name,
            scope=scope_logs.scope.name,
        )
        for resource_logs in request.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def metrics_of(request: ExportMetricsServiceRequest) -> list[MetricPoint]:
    points: list[MetricPoint] = []
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                for point in getattr(metric, kind).data_points:
                    points.append(_point(metric, kind, point, scope_metrics.scope.name))
    return points


def _point(metric: Any, kind: str, point: Any, scope: str) -> MetricPoint:
    if kind in ("sum", "gauge"):
        value: float | int = getattr(point, point.WhichOneof("value") or "as_int")
        count = None
    else:
        value, count = point.sum, point.count
    return MetricPoint(
        metric.name,
        kind,
        metric.unit,
        attributes_to_dict(point.attributes),
        value,
        count,
        point.time_unix_nano,
        scope,
    )


class Received:
    """Every span, log record and metric point received, numbered in arrival order.

    ``tap`` is called by the trace store on the receivers' threads; reading takes a
    snapshot under the same lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Span | LogRecord | MetricPoint] = []  # numbered by position

    def tap(self, signal: str, message: Message) -> None:
        """Keep one received batch (``signal``: ``traces``, ``logs`` or ``metrics``)."""
        items: list[Any]
        if isinstance(message, ExportTraceServiceRequest):
            items = spans_of(message)
        elif isinstance(message, ExportLogsServiceRequest):
            items = logs_of(message)
        elif isinstance(message, ExportMetricsServiceRequest):
            items = metrics_of(message)
        else:
            raise OtelReplayError(f"cannot keep a {type(message).__name__} ({signal})")
        with self._lock:
            self._items.extend(items)

    def mark(self) -> int:
        """The number of the next item to arrive: a window's start or end."""
        with self._lock:
            return len(self._items)

    def window(self, start: int = 0, end: int | None = None) -> Window:
        return Window(self, start, end)

    def _snapshot(self) -> list[Span | LogRecord | MetricPoint]:
        with self._lock:
            return self._items[:]


class Window:
    """What one block owns: items numbered ``start`` up to ``end`` (open while None), and
    items arriving after ``end`` in a trace seen inside the window."""

    def __init__(self, received: Received, start: int, end: int | None = None) -> None:
        self.received = received
        self.start = start
        self.end = end
        self._cache: tuple[int, SpanList, list[LogRecord], list[MetricPoint]] | None = None

    def close(self) -> None:
        if self.end is None:
            self.end = self.received.mark()

    def _read(self) -> tuple[SpanList, list[LogRecord], list[MetricPoint]]:
        items = self.received._snapshot()
        count = len(items)
        if self._cache is not None and self._cache[0] == count:
            return self._cache[1], self._cache[2], self._cache[3]
        end = count if self.end is None else self.end
        inside = range(self.start, end)
        spans = [(n, i) for n, i in enumerate(items) if isinstance(i, Span)]
        logs = [(n, i) for n, i in enumerate(items) if isinstance(i, LogRecord)]
        metrics = [(n, i) for n, i in enumerate(items) if isinstance(i, MetricPoint)]
        traces = {s.trace_id for n, s in spans if n in inside}
        traces |= {r.trace_id for n, r in logs if n in inside and r.trace_id}

        def ours(n: int, trace_id: str | None) -> bool:
            return n in inside or (n >= end and trace_id in traces)

        own_spans = linked(s for n, s in spans if ours(n, s.trace_id))
        own_logs = [r for n, r in logs if ours(n, r.trace_id)]
        own_metrics = [p for n, p in metrics if n in inside]
        self._cache = (count, own_spans, own_logs, own_metrics)
        return own_spans, own_logs, own_metrics

    @property
    def spans(self) -> SpanList:
        return self._read()[0]

    @property
    def logs(self) -> list[LogRecord]:
        return self._read()[1]

    @property
    def metrics(self) -> list[MetricPoint]:
        return self._read()[2]


def linked(spans: Iterable[Span]) -> SpanList:
    """Copies of ``spans`` with ``parent`` and ``children`` set among themselves (children
    in start order); the originals are shared by every window and stay unlinked. Ids that
    loop back (untrusted input) are cut where the loop closes; time is linear."""
    copies = SpanList(replace(s, parent=None, children=[]) for s in spans)
    by_id = {(s.trace_id, s.span_id): s for s in copies}
    parent_of: dict[Span, Span | None] = {}
    for span in copies:
        parent = by_id.get((span.trace_id, span.parent_span_id or ""))
        parent_of[span] = parent if parent is not span else None
    done: dict[Span, bool] = {}  # False while on the path being walked
    for span in copies:
        path: list[Span] = []
        node: Span | None = span
        while node is not None and node not in done:
            done[node] = False
            path.append(node)
            node = parent_of[node]
        if node is not None and not done[node]:
            parent_of[node] = None  # a loop: the span it closes on becomes a root
        for walked in path:
            done[walked] = True
    for span in sorted(copies, key=_started):
        parent = parent_of[span]
        if parent is not None:
            span.parent = parent
            parent.children.append(span)
    return copies


def _started(span: Span) -> tuple[int, int]:
    return span.start_time_unix_nano, span.end_time_unix_nano
