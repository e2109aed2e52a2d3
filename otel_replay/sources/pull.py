"""What every backend source is: a reader of a backend's answers into OTLP export
requests, with the selection pushed into the backend's own query.

A ``Pull`` yields ``ExportTraceServiceRequest``\\ s the span readers take as they take a
trace file's; it counts the bytes it read (``read``) for progress, remembers the trace ids
it met, and ends with an error naming any asked-for trace the backend did not have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.core.errors import SourceError
from otel_replay.otlp.codec import iter_spans
from otel_replay.readers import Selection
from otel_replay.sources.where import Where

__all__ = ["Piece", "Progress", "Pull"]

Progress = Callable[[int, int], None]


class Pull:
    """Spans from one backend, chosen by ``selection``. Subclasses implement ``fetch``
    and may narrow what the readers still check (``reader_selection``)."""

    def __init__(self, where: Where, selection: Selection) -> None:
        self.where = where
        self.selection = selection
        self.read = 0  # bytes of the backend's answers read so far
        self.found: set[str] = set()  # the asked-for traces met (``selection.trace_ids``)
        self.spans = 0

    @property
    def name(self) -> str:
        return self.where.name

    @property
    def reader_selection(self) -> Selection:
        """What the span readers still select on, after the backend's query did."""
        return self.selection

    def fetch(self) -> Iterator[ExportTraceServiceRequest]:
        raise NotImplementedError

    def requests(self, progress: Progress | None = None) -> Iterator[ExportTraceServiceRequest]:
        """The requests, reporting ``progress(bytes_read, 0)`` (the total is unknown) as
        they come; then a ``SourceError`` when an asked-for trace never came, or nothing
        did."""
        wanted = self.selection.trace_ids
        for request in self.fetch():
            for _resource, _scope, span in iter_spans(request):
                self.spans += 1
                if wanted:
                    self.found.add(span.trace_id.hex())
            if progress is not None:
                progress(self.read, 0)
            yield request
        missing = sorted((self.selection.trace_ids or frozenset()) - self.found)
        if missing:
            raise self.no_trace(missing)
        if not self.spans:
            raise self.no_spans()

    def no_spans(self) -> SourceError:
        """The error for a selection the backend has nothing for."""
        return SourceError(self.name, f"no spans{_window(self.selection)}")

    def no_trace(self, missing: list[str]) -> SourceError:
        within = _window(self.selection)
        plural = "s" if len(missing) > 1 else ""
        return SourceError(self.name, f"no trace{plural} {', '.join(missing)}{within}")

    def trace_ids(self) -> list[str]:
        """The traces the selection picks, in the order met (``-o DIR/``: one cassette
        each). By default the spans are pulled once to list them."""
        if self.selection.trace_ids:
            return sorted(self.selection.trace_ids)
        seen: dict[str, None] = {}
        for request in self.fetch():
            for _resource, _scope, span in iter_spans(request):
                seen.setdefault(span.trace_id.hex())
        return list(seen)

    def groups(self) -> Iterator[tuple[str, Piece]]:
        """Each trace's spans in turn (``-o DIR/``); by default one pull a trace."""
        for trace_id in self.trace_ids():
            narrowed = self.one_trace(trace_id)
            yield trace_id, Piece(self.name, narrowed.requests())
            self.read += narrowed.read

    def one_trace(self, trace_id: str) -> Pull:
        """The same pull narrowed to one trace."""
        return type(self)(self.where, replace(self.selection, trace_ids=frozenset([trace_id])))


class Piece:
    """One trace's requests out of a pull that reads many (what ``build`` takes as
    ``Spans``)."""

    def __init__(self, name: str, requests: Iterator[ExportTraceServiceRequest]) -> None:
        self.name = name
        self._requests = requests

    def requests(self, progress: Progress | None = None) -> Iterator[ExportTraceServiceRequest]:
        del progress  # the pull that reads them all reports
        return self._requests


def _window(selection: Selection) -> str:
    parts = []
    if selection.services:
        parts.append(f"service {', '.join(sorted(selection.services))}")
    if selection.since_ns is not None or selection.until_ns is not None:
        parts.append("the time window given")
    return f" (within {' and '.join(parts)})" if parts else ""
