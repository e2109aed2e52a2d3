"""Span readers: traces from any instrumentation turned back into exchanges.

Each reader is a small pure function from a span (with its resource) to an exchange or
None. ``read_span`` tries them from the highest fidelity down: the gateway's own spans
(exact bodies, every detail), OpenInference (exact bodies when recorded), then the GenAI
semantic conventions (a view: canonical request and a rebuilt response).

``read_exchanges`` streams export requests through the readers. One model call often shows
up as two or three spans (an instrumentation span, another instrumentation stacked on the
same SDK, the gateway's own span); those become one exchange, the highest-fidelity one.
Memory stays bounded: candidates wait in a window of ``WINDOW`` exchanges for their
duplicates, and only the parent links of recent spans are kept (see ``_Links``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import Exchange
from otel_replay.otlp.attributes import any_value_to_python, attributes_to_dict
from otel_replay.otlp.codec import iter_spans
from otel_replay.readers import openinference, semconv
from otel_replay.readers.claude_code import ClaudeCodeReader, event_name
from otel_replay.readers.view import Event
from otel_replay.spans.encode import FORMAT_ATTRIBUTE

__all__ = ["WINDOW", "Selection", "read_exchanges", "read_span"]

WINDOW = 512
"""How many exchanges wait for a duplicate before the earliest is released."""
_PARENT_LINKS = 100_000
"""Parent links are held in generations of half this many at most, and no more than
twice this many while an exchange lingers in the window (see ``_Links``)."""
_MAX_HOPS = 8
_GENAI_EVENTS = semconv.MESSAGE_EVENTS | {semconv.DETAILS_EVENT}

ErrorHandler = Callable[[TraceFormatError], None]


@dataclass(frozen=True, slots=True)
class Selection:
    """Which spans to read: trace ids (hex), ``service.name`` values and a start-time
    window ``[since_ns, until_ns)``. Empty or None means no restriction."""

    trace_ids: frozenset[str] | None = None
    services: frozenset[str] | None = None
    since_ns: int | None = None
    until_ns: int | None = None

    def resource_ok(self, resource: Mapping[str, Any]) -> bool:
        return not self.services or resource.get("service.name") in self.services

    def item_ok(self, trace_id: bytes, start_ns: int) -> bool:
        if self.trace_ids and trace_id.hex() not in self.trace_ids:
            return False
        if self.since_ns is not None and start_ns < self.since_ns:
            return False
        return self.until_ns is None or start_ns < self.until_ns


_ALL = Selection()


def read_span(
    resource: Mapping[str, Any],
    span: Span,
    events: Sequence[Event] = (),
    resource_proto: Resource | None = None,
) -> Exchange | None:
    """The exchange a span carries, from the highest-fidelity reader that knows it."""
    attrs = attributes_to_dict(span.attributes)
    if FORMAT_ATTRIBUTE in attrs:
        from otel_replay.readers.own import span_to_exchange

        return span_to_exchange(span, resource_proto)
    exchange = openinference.read_span(resource, span, attrs)
    if exchange is not None:
        return exchange
    events = [*_span_events(span), *events]
    return semconv.read_span(resource, span, attrs, events)


def _span_events(span: Span) -> list[Event]:
    return [
        (e.name, attributes_to_dict(e.attributes), None)
        for e in span.events
        if e.name in _GENAI_EVENTS
    ]


def read_exchanges(
    requests: Iterable[ExportTraceServiceRequest],
    logs: Iterable[ExportLogsServiceRequest] = (),
    *,
    selection: Selection | None = None,
    on_error: ErrorHandler | None = None,
) -> Iterator[Exchange]:
    """Every model call in the trace requests (and log requests), one exchange per call,
    in start-time order. Logs are read first: GenAI events linked to a span join it, and
    Claude Code's body events become exchanges of their own. A span that cannot be read
    goes to ``on_error`` (default: raise) and is skipped."""
    select = selection or _ALL
    handle = on_error or _raise
    linked: dict[bytes, list[Event]] = {}
    window = _Window()
    for exchange in _read_logs(logs, select, linked):
        yield from window.add(exchange)
    for request in requests:
        for resource, _scope, span in iter_spans(request):
            window.note(span)
            resource_attrs = attributes_to_dict(resource.attributes)
            if not (select.resource_ok(resource_attrs) and _span_ok(select, span)):
                continue
            try:
                found = read_span(resource_attrs, span, linked.pop(span.span_id, ()), resource)
            except Exception as exc:  # a reader must never stop the build
                where = f"span {span.span_id.hex() or '?'} ({span.name})"
                problem = exc.problem if isinstance(exc, TraceFormatError) else str(exc)
                handle(TraceFormatError(where, f"cannot read: {problem}"))
                continue
            if found is not None:
                yield from window.add(found)
    yield from window.flush()


def _raise(exc: TraceFormatError) -> None:
    raise exc


def _span_ok(select: Selection, span: Span) -> bool:
    return select.item_ok(span.trace_id, span.start_time_unix_nano)


def _read_logs(
    logs: Iterable[ExportLogsServiceRequest], select: Selection, linked: dict[bytes, list[Event]]
) -> Iterator[Exchange]:
    claude = ClaudeCodeReader()
    for request in logs:
        for resource_logs in request.resource_logs:
            resource = attributes_to_dict(resource_logs.resource.attributes)
            if not select.resource_ok(resource):
                continue
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    attrs = attributes_to_dict(record.attributes)
                    name = getattr(record, "event_name", "") or str(attrs.get("event.name", ""))
                    if name in _GENAI_EVENTS and record.span_id:
                        body = any_value_to_python(record.body)
                        linked.setdefault(record.span_id, []).append((name, attrs, body))
                        continue
                    if not event_name(record, attrs).startswith("api_"):
                        continue
                    time = record.time_unix_nano or record.observed_time_unix_nano
                    if select.item_ok(record.trace_id, time) or not record.trace_id:
                        exchange = claude.feed(record, attrs)
                        if exchange is not None:
                            yield exchange


class _Window:
    """Holds recent exchanges until their duplicates could have arrived.

    Releasing the earliest exchange compares it only with the exchanges that could be the
    same call: those of its trace (related through parent links) and, when another source
    is waiting, those starting before it ends (overlapping). Pending exchanges are kept in
    arrival order (ties keep the first), sorted by start time and grouped by trace id, so a
    release costs the size of those candidate sets, not of the window.
    """

    def __init__(self, size: int = WINDOW) -> None:
        self.size = size
        self.pending: dict[int, Exchange] = {}
        self.links = _Links(exchanges=size, spans=_PARENT_LINKS // 2, limit=_PARENT_LINKS * 2)
        self._oldest = 0  # no exchange before it is pending
        self._seq = 0
        self._by_start: list[tuple[int, int]] = []
        self._by_trace: dict[str, list[int]] = {}
        self._sources: dict[str, int] = {}

    def note(self, span: Span) -> None:
        """Remember a span's parent (any span: HTTP spans link the layers of one call)."""
        parent = span.parent_span_id
        if parent:
            self.links.add(span.span_id, parent)

    def add(self, exchange: Exchange) -> Iterator[Exchange]:
        seq = self._seq
        self._seq += 1
        self.links.tick(seq)
        self.pending[seq] = exchange
        insort(self._by_start, (exchange.start_ns, seq))
        if exchange.trace_id:
            self._by_trace.setdefault(exchange.trace_id, []).append(seq)
        self._sources[exchange.source] = self._sources.get(exchange.source, 0) + 1
        if len(self.pending) > self.size:
            yield from self._release()

    def flush(self) -> Iterator[Exchange]:
        while self.pending:
            yield from self._release()

    def _release(self) -> list[Exchange]:
        first_seq = self._by_start[0][1]
        first = self.pending[first_seq]
        group = [
            seq
            for seq in sorted(self._candidates(first))
            if seq == first_seq or self._same_call(first, self.pending[seq])
        ]
        exchanges = [self._remove(seq) for seq in group]
        oldest, pending = self._oldest, self.pending
        while oldest < self._seq and oldest not in pending:
            oldest += 1
        self._oldest = oldest
        self.links.released(oldest)
        return keep(exchanges)

    def _candidates(self, first: Exchange) -> set[int]:
        """Every pending exchange ``_same_call`` could accept for ``first`` (a superset)."""
        found = set(self._by_trace.get(first.trace_id, ())) if first.trace_id else set()
        found.add(self._by_start[0][1])
        if len(self._sources) > 1:  # the overlap rule only joins different sources
            for start_ns, seq in self._by_start:
                if start_ns > first.end_ns:
                    break
                found.add(seq)
        return found

    def _remove(self, seq: int) -> Exchange:
        exchange = self.pending.pop(seq)
        by_start = self._by_start
        del by_start[bisect_left(by_start, (exchange.start_ns, seq))]
        if exchange.trace_id:
            same_trace = self._by_trace[exchange.trace_id]
            same_trace.remove(seq)
            if not same_trace:
                del self._by_trace[exchange.trace_id]
        left = self._sources[exchange.source] - 1
        if left:
            self._sources[exchange.source] = left
        else:
            del self._sources[exchange.source]
        return exchange

    def _related(self, a: Exchange, b: Exchange) -> bool:
        return a.trace_id == b.trace_id and (self._above(a, b) or self._above(b, a))

    def _above(self, upper: Exchange, lower: Exchange) -> bool:
        if lower.parent_span_id is None or upper.span_id is None:
            return False
        try:
            node: bytes | None = bytes.fromhex(lower.parent_span_id)
            target = bytes.fromhex(upper.span_id)
        except ValueError:
            return False
        for _ in range(_MAX_HOPS):
            if node is None:
                return False
            if node == target:
                return True
            node = self.links.get(node)
        return False

    def _same_call(self, a: Exchange, b: Exchange) -> bool:
        if a.provider != b.provider or a.operation != b.operation:
            return False
        if a.request.model and b.request.model and a.request.model != b.request.model:
            return False
        if a.trace_id and b.trace_id and self._related(a, b):
            return True
        if a.source == b.source or not (a.start_ns <= b.end_ns and b.start_ns <= a.end_ns):
            return False
        return _same_messages(a, b)


class _Links:
    """Parent links of recent spans, in generations kept while an exchange may need them.

    A generation closes after ``exchanges`` exchanges have arrived or ``spans`` links were
    noted. It is dropped once every exchange that arrived up to the close of the
    generation after it has left the window: a link joins the layers of one call, which
    end and are exported together, so it is noted close to the exchanges it joins — just
    before them (a child span ends first) or after them (another file read later). When
    an exchange lingers in the window (a start time far ahead of the others), the oldest
    generations go anyway once more than ``limit`` links are held. Memory follows the
    spans per exchange in the window, not the length of the file.
    """

    def __init__(self, exchanges: int, spans: int, limit: int) -> None:
        self._max_exchanges = exchanges
        self._max_spans = spans
        self._limit = limit
        self._current: dict[bytes, bytes] = {}
        self._closed: deque[tuple[int, dict[bytes, bytes]]] = deque()
        self._held = 0  # links in closed generations
        self._exchanges = 0
        self._last_seq = -1

    def __len__(self) -> int:
        return self._held + len(self._current)

    def add(self, child: bytes, parent: bytes) -> None:
        self._current[child] = parent
        if len(self._current) >= self._max_spans:
            self._close()

    def tick(self, seq: int) -> None:
        """Exchange ``seq`` arrived."""
        self._last_seq = seq
        self._exchanges += 1
        if self._exchanges >= self._max_exchanges:
            self._close()

    def released(self, oldest_pending: int) -> None:
        """Every exchange before ``oldest_pending`` has left the window."""
        closed = self._closed
        while len(closed) > 1 and closed[1][0] < oldest_pending:
            self._drop()

    def get(self, child: bytes) -> bytes | None:
        found = self._current.get(child)
        if found is None:
            for _, links in reversed(self._closed):
                found = links.get(child)
                if found is not None:
                    break
        return found

    def _close(self) -> None:
        self._closed.append((self._last_seq, self._current))
        self._held += len(self._current)
        self._current = {}
        self._exchanges = 0
        while self._held > self._limit:
            self._drop()

    def _drop(self) -> None:
        _, links = self._closed.popleft()
        self._held -= len(links)


def keep(group: list[Exchange]) -> list[Exchange]:
    """What one call's exchanges (in arrival order) leave in the cassette: the
    highest-fidelity one — except that the gateway's own spans are each an HTTP attempt
    (an SDK retrying a 429 sends several under one instrumentation span), so when the
    group holds several, every distinct one is kept, in start order."""
    own: dict[str | None, Exchange] = {}
    for exchange in group:
        if exchange.source == "otel-replay":
            own.setdefault(exchange.span_id, exchange)
    if len(own) > 1:
        return sorted(own.values(), key=lambda e: e.start_ns)
    return [max(group, key=_fidelity)]


def _fidelity(exchange: Exchange) -> tuple[int, int]:
    rank = 3 if exchange.source == "otel-replay" else 2 if exchange.raw_request is not None else 1
    return rank, len(exchange.request.known)


def _same_messages(a: Exchange, b: Exchange) -> bool:
    """Whether two overlapping, unrelated spans describe the same conversation."""
    if "messages" not in a.request.known or "messages" not in b.request.known:
        return True
    ma, mb = a.request.messages or [], b.request.messages or []
    return len(ma) == len(mb) and (not ma or _text(ma[-1]) == _text(mb[-1]))


def _text(message: Any) -> str:
    parts = message.get("parts") if isinstance(message, dict) else None
    return "".join(
        str(p.get("content", p.get("response", ""))) for p in parts or [] if isinstance(p, dict)
    )
