"""Jaeger v2 and Grafana Tempo: backends that answer a trace as OTLP, in one of a few
wrappers, with hex or base64 ids.

- Jaeger v2, ``api/v3``: ``GET /api/v3/traces/{id}`` and, by service and time,
  ``GET /api/v3/traces?query.service_name=…&query.start_time_min=…`` answer OTLP JSON
  under ``result`` (one or more such objects, one after another).
- Tempo: ``GET /api/v2/traces/{id}`` answers ``{"trace": {"resourceSpans": …}}`` (or the
  ``TraceByIDResponse`` protobuf when offered); before it, ``GET /api/traces/{id}``
  answered ``{"batches": …}`` (the ``Trace`` protobuf), which is read when v2 is absent.
  Without trace ids, ``GET /api/search`` (TraceQL over service and time) lists them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.core.errors import SourceError, TraceFormatError
from otel_replay.otlp.codec import iter_spans, traces_from_json, traces_from_proto
from otel_replay.readers import Selection
from otel_replay.sources.pull import Pull
from otel_replay.sources.transport import Backend
from otel_replay.sources.where import Where

__all__ = ["JaegerPull", "TempoPull"]

PROTOBUF = "application/protobuf"
_SEARCH_LIMIT = "1000"  # traces one search lists
_LEGACY_KEYS = {"instrumentationLibrarySpans": "scopeSpans", "instrumentationLibrary": "scope"}


class _OtlpPull(Pull):
    """A backend answering traces by id; ``search`` lists the ids for the rest."""

    credentials = "OTEL_REPLAY_FROM_HEADERS (e.g. Authorization=Bearer%20TOKEN)"

    def __init__(self, where: Where, selection: Selection) -> None:
        super().__init__(where, selection)
        self.backend = Backend(where, {}, self.credentials)

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        ids = sorted(self.selection.trace_ids) if self.selection.trace_ids else self.search()
        for trace_id in ids:
            request = self.by_id(trace_id)
            if request is not None:
                yield request

    def trace_ids(self) -> list[str]:
        return sorted(self.selection.trace_ids) if self.selection.trace_ids else self.search()

    def search(self) -> list[str]:
        raise NotImplementedError

    def by_id(self, trace_id: str) -> ExportTraceServiceRequest | None:
        raise NotImplementedError

    def body(self, answer: IO[bytes]) -> bytes:
        data = self.backend.read(answer)
        self.read += len(data)
        return data

    def decode(self, data: bytes, what: str) -> Any:
        try:
            return json.loads(data)
        except ValueError:
            raise SourceError(self.name, f"{what}: not JSON") from None

    def otlp(self, doc: Any, what: str) -> ExportTraceServiceRequest:
        try:
            return traces_from_json(_modern(doc), source=f"{self.name} {what}")
        except TraceFormatError as exc:
            raise SourceError(self.name, f"{what}: {exc.problem}") from None

    def service(self) -> str:
        services = sorted(self.selection.services or ())
        if len(services) != 1:
            raise SourceError(
                self.name, "give --trace-id, or one --service (with --since/--until) to search"
            )
        return services[0]


class JaegerPull(_OtlpPull):
    """Jaeger v2's query service, ``api/v3``."""

    def by_id(self, trace_id: str) -> ExportTraceServiceRequest | None:
        answer = self.backend.open(f"/api/v3/traces/{trace_id}")
        if answer is None:
            return None
        return self._results(self.body(answer), f"trace {trace_id}")

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        if self.selection.trace_ids:
            yield from super().fetch()
            return
        request = self._found()
        if request is not None:
            yield request

    def trace_ids(self) -> list[str]:
        if self.selection.trace_ids:
            return sorted(self.selection.trace_ids)
        found = self._found()
        if found is None:
            return []
        return list(dict.fromkeys(span.trace_id.hex() for _r, _s, span in iter_spans(found)))

    def _found(self) -> ExportTraceServiceRequest | None:
        """FindTraces: every span of the service's traces in the window."""
        since, until = _bounds(self.selection)
        params = {
            "query.service_name": self.service(),
            "query.start_time_min": _rfc3339(since),
            "query.start_time_max": _rfc3339(until),
            "query.num_traces": _SEARCH_LIMIT,
        }
        answer = self.backend.open("/api/v3/traces", params)
        return None if answer is None else self._results(self.body(answer), "search")

    def _results(self, data: bytes, what: str) -> ExportTraceServiceRequest:
        """Every ``{"result": {...}}`` object in the answer (a stream of them), merged."""
        merged = ExportTraceServiceRequest()
        decoder = json.JSONDecoder()
        text = data.decode("utf-8", "replace")
        at = 0
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at >= len(text):
                return merged
            try:
                doc, at = decoder.raw_decode(text, at)
            except ValueError:
                raise SourceError(self.name, f"{what}: not JSON") from None
            if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
                raise SourceError(self.name, f"{what}: {doc['error'].get('message', doc)}")
            result = doc.get("result") if isinstance(doc, dict) else None
            if not isinstance(result, dict):
                raise SourceError(self.name, f"{what}: no 'result' in the answer (not api/v3?)")
            merged.MergeFrom(self.otlp(result, what))


class TempoPull(_OtlpPull):
    """Grafana Tempo's query API: v2 trace by id, else v1."""

    def by_id(self, trace_id: str) -> ExportTraceServiceRequest | None:
        answer = self.backend.open(f"/api/v2/traces/{trace_id}", accept=PROTOBUF)
        if answer is not None:
            return self._trace(answer, f"trace {trace_id}", "trace")
        answer = self.backend.open(f"/api/traces/{trace_id}", accept=PROTOBUF)
        if answer is not None:
            return self._trace(answer, f"trace {trace_id}", "batches")
        return None

    def _trace(self, answer: IO[bytes], what: str, key: str) -> ExportTraceServiceRequest:
        kind = answer.headers.get("Content-Type", "")  # type: ignore[attr-defined]
        data = self.body(answer)
        if kind.split(";")[0].strip() == PROTOBUF:
            inner = _field_one(data) if key == "trace" else data
            try:
                return traces_from_proto(inner, source=f"{self.name} {what}")
            except TraceFormatError as exc:
                raise SourceError(self.name, f"{what}: {exc.problem}") from None
        doc = self.decode(data, what)
        if key == "trace":  # TraceByIDResponse: {"trace": {"resourceSpans": […]}, "status": …}
            doc = doc.get("trace") if isinstance(doc, dict) else None
            doc = doc if isinstance(doc, dict) else {}
        elif isinstance(doc, dict):  # Trace: {"batches": […]}
            doc = {"resourceSpans": doc.get("batches") or doc.get("resourceSpans") or []}
        return self.otlp(doc, what)

    def search(self) -> list[str]:
        since, until = _bounds(self.selection)
        service = json.dumps(self.service())
        params = {
            "q": "{ resource.service.name = " + service + " }",
            "start": str(since // 10**9),
            "end": str(-(-until // 10**9)),
            "limit": _SEARCH_LIMIT,
        }
        answer = self.backend.open("/api/search", params, missing="no search API (/api/search)")
        assert answer is not None
        doc = self.decode(self.body(answer), "search")
        traces = doc.get("traces") if isinstance(doc, dict) else None
        ids = [t.get("traceID") for t in traces or [] if isinstance(t, dict)]
        return [_hex_id(i) for i in ids if isinstance(i, str) and i]


def _field_one(data: bytes) -> bytes:
    """Field 1 (``trace``) of a ``TraceByIDResponse`` protobuf: the ``Trace``, whose field
    1 holds the ``ResourceSpans`` as an ``ExportTraceServiceRequest``'s does."""
    at, chunks = 0, []
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            if number == 1:
                chunks.append(data[at : at + size])
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise SourceError("tempo", f"TraceByIDResponse: unreadable field {number}")
    return b"".join(chunks)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while at < len(data):
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
    raise SourceError("tempo", "TraceByIDResponse: truncated protobuf")


def _modern(doc: Any) -> Any:
    """OTLP JSON with the keys of before 1.0 (``instrumentationLibrarySpans``) renamed."""
    if isinstance(doc, dict):
        return {_LEGACY_KEYS.get(k, k): _modern(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_modern(v) for v in doc]
    return doc


def _hex_id(value: str) -> str:
    """A search's trace id as 32 hex digits (Tempo leaves out leading zeros)."""
    return value.lower().rjust(32, "0")


def _bounds(selection: Selection) -> tuple[int, int]:
    """The search window: the one given, else the last seven days."""
    now = int(datetime.now(UTC).timestamp()) * 10**9
    until = selection.until_ns if selection.until_ns is not None else now
    since = selection.since_ns if selection.since_ns is not None else until - 7 * 86_400 * 10**9
    return since, until


def _rfc3339(ns: int) -> str:
    moment = datetime.fromtimestamp(ns // 10**9, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 10**9:09d}Z"
