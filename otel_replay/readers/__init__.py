"""Span readers: traces from any instrumentation turned back into exchanges.

Each reader is a small pure projection from the attribute groups a span carries to an
exchange; ``registry.READERS`` lists them with the groups they need and their fidelity,
and ``read_span`` takes the exchange from the most faithful one that reads the span: the
gateway's own spans (exact bodies, every detail), OpenInference (exact bodies when
recorded), then the GenAI semantic conventions and OpenInference's messages (a view:
canonical request and a rebuilt response).

``read_exchanges`` streams export requests through the readers, and through the dedupe
window (``readers.window``) that makes the spans of one model call one exchange.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core import genai
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import Exchange
from otel_replay.otlp.attributes import any_value_to_python, attributes_to_dict
from otel_replay.otlp.codec import iter_spans
from otel_replay.readers.agent_spans import AgentSpans
from otel_replay.readers.census import Census, Problem, Source
from otel_replay.readers.claude_code import ClaudeCodeReader, event_name
from otel_replay.readers.diagnose import SETTINGS as CONTENT_SETTINGS
from otel_replay.readers.diagnose import diagnose, model_call, no_call
from otel_replay.readers.entry import EntrySpans
from otel_replay.readers.evidence import cannot_judge
from otel_replay.readers.pieces import Pieces
from otel_replay.readers.registry import BODY_EVENTS, Reading, read_call
from otel_replay.readers.tools import read_tool
from otel_replay.readers.view import Event, with_details
from otel_replay.readers.window import WINDOW, Window

__all__ = [
    "WINDOW",
    "AgentSpans",
    "Census",
    "EntrySpans",
    "Selection",
    "read_exchanges",
    "read_span",
]

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
        return not self.services or resource.get(genai.SERVICE_NAME) in self.services

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
    """The exchange a span carries, from the highest-fidelity reader that knows it.
    ``resource`` and ``resource_proto`` describe the span's origin; no reader needs them
    to read a call."""
    del resource, resource_proto
    reading = _read(span, events)
    return None if reading is None else reading.exchange


def _read(span: Span, events: Sequence[Event]) -> Reading | None:
    attrs = attributes_to_dict(span.attributes)
    return read_call(span, attrs, [*_span_events(span), *events])


def _span_events(span: Span) -> list[Event]:
    return [
        (e.name, attributes_to_dict(e.attributes), None)
        for e in span.events
        if e.name in genai.GENAI_EVENTS
    ]


def read_exchanges(
    requests: Iterable[ExportTraceServiceRequest],
    logs: Iterable[ExportLogsServiceRequest] = (),
    *,
    selection: Selection | None = None,
    on_error: ErrorHandler | None = None,
    body_events: ClaudeCodeReader | None = None,
    census: Census | None = None,
    agent_spans: AgentSpans | None = None,
    entries: EntrySpans | None = None,
    tools: list[Exchange] | None = None,
) -> Iterator[Exchange]:
    """Every model call in the trace requests (and log requests), one exchange per call,
    in start-time order. Logs are read first: GenAI events linked to a span join it, and
    Claude Code's body events become exchanges of their own (read by ``body_events``, when
    the caller wants its tallies afterwards). A span that cannot be read goes to
    ``on_error`` (default: raise) and is skipped. ``census`` counts, per source, the model
    calls seen and how replayable they are (see ``readers.census``); Claude Code's tallies
    join it once the logs are read. ``agent_spans`` collects the spans that are not model
    calls (``readers.agent_spans``); ``entries`` every selected span, for the run's entry
    (``readers.entry``); ``tools`` the tool executions whose arguments and result the spans
    kept, as tool calls (``readers.tools``), counted in the census."""
    select = selection or _ALL
    handle = on_error or _raise
    counts = census or Census()
    linked: dict[bytes, list[Event]] = {}
    window = Window()
    pieces = Pieces()
    claude = body_events if body_events is not None else BODY_EVENTS.make()
    for exchange in _read_logs(logs, select, linked, claude):
        yield from window.add(exchange, BODY_EVENTS.fidelity)
    for name, tally in claude.tallies.items():
        counts.tallied(
            Source(*name.rsplit(" ", 1)),
            tally.seen,
            tally.read,
            {Problem(skip.reason, skip.fix): n for skip, n in tally.reasons().items()},
        )
    for request in requests:
        for resource, scope, span in iter_spans(request):
            window.note(span)
            source = Source(scope.name, scope.version)
            try:  # every span's pieces, selected or not: later spans may refer to them
                stored = pieces.absorb(span)
            except TraceFormatError as exc:
                handle(exc)
                counts.skipped(source, Problem(f"cannot read: {exc.problem}"))
                continue
            resource_attrs = attributes_to_dict(resource.attributes)
            if not (select.resource_ok(resource_attrs) and _span_ok(select, span)):
                continue
            events = [*_span_events(span), *linked.pop(span.span_id, ())]
            attrs = stored if stored is not None else attributes_to_dict(span.attributes)
            try:
                attrs = pieces.expand(span, attrs)
                found = read_call(span, attrs, events)
            except Exception as exc:  # a reader must never stop the build
                where = f"span {span.span_id.hex() or '?'} ({span.name})"
                problem = exc.problem if isinstance(exc, TraceFormatError) else str(exc)
                handle(TraceFormatError(where, f"cannot read: {problem}"))
                counts.skipped(source, Problem(f"cannot read: {problem}"))
                continue
            if entries is not None:
                entries.add(span, attrs, scope.name, None if found is None else found.exchange)
            why = cannot_judge(span, attrs, None if found is None else found.exchange)
            if found is not None:
                counts.read(source, found.fidelity, found.exchange)
                if agent_spans is not None:
                    agent_spans.call(found.exchange.trace_id)
                yield from window.add(found.exchange, found.fidelity)
            elif model_call(attrs) and not no_call(span, with_details(attrs, events), events):
                counts.skipped(source, diagnose(with_details(attrs, events), events, scope.name))
            else:
                why = None  # no model call: nothing for the check to judge
                counts.other(source)
                if tools is not None:
                    _tool(span, attrs, source, counts, tools, scope.name)
                if agent_spans is not None:
                    agent_spans.add(span, attrs, scope.name)
            if why is not None:
                counts.unjudged(source, why)
    yield from window.flush()


def _tool(
    span: Span,
    attrs: dict[str, Any],
    source: Source,
    counts: Census,
    tools: list[Exchange],
    scope: str,
) -> None:
    read = read_tool(span, attrs)
    if read is None:
        return
    if read.exchange is None or read.exchange.operation == "tools/call":  # not the listings
        # an instrumentation with a content setting of its own records tools with it too
        fix = CONTENT_SETTINGS.get(scope, read.fix)
        counts.tool(source, None if read.exchange is not None else fix)
    if read.exchange is not None:
        tools.append(read.exchange)


def _raise(exc: TraceFormatError) -> None:
    raise exc


def _span_ok(select: Selection, span: Span) -> bool:
    return select.item_ok(span.trace_id, span.start_time_unix_nano)


def _read_logs(
    logs: Iterable[ExportLogsServiceRequest],
    select: Selection,
    linked: dict[bytes, list[Event]],
    claude: ClaudeCodeReader,
) -> Iterator[Exchange]:
    for request in logs:
        for resource_logs in request.resource_logs:
            resource = attributes_to_dict(resource_logs.resource.attributes)
            if not select.resource_ok(resource):
                continue
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    attrs = attributes_to_dict(record.attributes)
                    name = getattr(record, "event_name", "") or str(attrs.get(genai.EVENT_NAME, ""))
                    if name in genai.GENAI_EVENTS and record.span_id:
                        body = any_value_to_python(record.body)
                        linked.setdefault(record.span_id, []).append((name, attrs, body))
                        continue
                    if not event_name(record, attrs).startswith("api_"):
                        continue
                    time = record.time_unix_nano or record.observed_time_unix_nano
                    if select.item_ok(record.trace_id, time) or not record.trace_id:
                        exchange = claude.feed(record, attrs, resource)
                        if exchange is not None:
                            yield exchange
