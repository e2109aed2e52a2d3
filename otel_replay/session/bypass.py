"""Model calls that bypassed the gateway, seen in the agent's own telemetry.

The gateway receives the agent's spans. A model-call span (one the reader registry places
as a model call to a provider otel-replay knows: ``readers.registry.model_call``, so every
instrumentation ``build`` reads is watched) is a call the agent made; each call the
gateway answered (replayed, live or missed) happened inside the span of the call it was.
A model-call span with no gateway call of its provider inside its time window is a call
that went somewhere else: a client built before the gateway's environment was set, a
hard-coded base URL. A framework's span that is the parent of a model-call span of the
same provider (a LangChain span around the OpenAI SDK's) is that call: it counts once.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from otel_replay.otlp.store import TraceStore

if TYPE_CHECKING:  # protobuf is imported with the first telemetry received
    from google.protobuf.message import Message
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

__all__ = ["BypassWatch"]

log = logging.getLogger("otel_replay")

SLACK_NS = 1_000_000_000
"""How far outside a span's window a gateway call may be and still be its call (clocks
of the agent and the gateway are one machine's, but spans are stamped a little apart)."""


@dataclass(frozen=True, slots=True)
class ModelSpan:
    """An agent's span of one model call."""

    span_id: bytes
    parent: bytes
    api: str
    name: str
    start_ns: int
    end_ns: int


class BypassWatch:
    """Collects the agent's model-call spans and the gateway's calls; says which spans
    no gateway call answered. Thread-safe (the OTLP receivers and the gateway call in)."""

    def __init__(self, store: TraceStore | None = None) -> None:
        """Watching the batches ``store`` receives, when given."""
        self._lock = threading.Lock()
        self._spans: list[ModelSpan] = []
        self._calls: list[tuple[str, int]] = []
        if store is not None:
            store.observers.append(self._batch)

    # -- what happens during the run ----------------------------------------------------
    def reached(self, api: str, at_ns: int | None = None) -> None:
        """A call of ``api`` reached the gateway at ``at_ns`` (default: now), a moment
        within its span's window."""
        with self._lock:
            self._calls.append((api, time.time_ns() if at_ns is None else at_ns))

    def _batch(self, signal: str, msg: Message) -> None:
        if signal == "traces":  # an ExportTraceServiceRequest
            self.observe(msg)

    def observe(self, request: ExportTraceServiceRequest) -> None:
        """Take the model-call spans of a received batch (never raises: telemetry)."""
        try:
            found = self._read(request)
        except Exception:
            log.debug("could not read a trace batch for bypass detection", exc_info=True)
            return
        with self._lock:
            self._spans.extend(found)

    def _read(self, request: ExportTraceServiceRequest) -> list[ModelSpan]:
        # the readers package and protobuf are imported with the first batch, not at start
        from otel_replay.otlp.attributes import attributes_to_dict
        from otel_replay.readers.registry import CALL_MARKS, model_call

        found: list[ModelSpan] = []
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                # one pass over the scope's bytes, rather than over every attribute: a
                # scope carrying no instrumentation's mark holds no model-call span
                data = scope.SerializeToString()
                if not any(mark in data for mark in CALL_MARKS):
                    continue
                for span in scope.spans:
                    data = span.SerializeToString()
                    if not any(mark in data for mark in CALL_MARKS):
                        continue  # a tool call, an agent step: no attributes to read
                    api = model_call(span, attributes_to_dict(span.attributes))
                    if api is None:
                        continue
                    ids = bytes(span.span_id), bytes(span.parent_span_id)
                    times = span.start_time_unix_nano, span.end_time_unix_nano
                    found.append(ModelSpan(*ids, api, span.name, *times))
        return found

    # -- at the end ---------------------------------------------------------------------
    def bypassed(self) -> list[str]:
        """One line per model call the agent's spans show and no gateway call answered.

        Each span, by its end, takes the earliest unused call of its provider inside its
        window (the greedy choice that pairs the most spans with calls)."""
        with self._lock:
            spans, calls = list(self._spans), list(self._calls)
        free: dict[str, list[int]] = {}
        for api, at_ns in calls:
            free.setdefault(api, []).append(at_ns)
        for times in free.values():
            times.sort()
        missing: list[str] = []
        for span in sorted(_innermost(spans), key=lambda s: (s.end_ns, s.start_ns)):
            times = free.get(span.api, [])
            at = bisect.bisect_left(times, span.start_ns - SLACK_NS)
            if at < len(times) and times[at] <= span.end_ns + SLACK_NS:
                del times[at]
            else:
                missing.append(f"{span.api} call {span.name!r} (span {span.span_id.hex()})")
        return missing


def _innermost(spans: list[ModelSpan]) -> list[ModelSpan]:
    """The spans that are not the parent of a model-call span of the same provider."""
    wrapping = {(span.parent, span.api) for span in spans if span.parent}
    return [span for span in spans if (span.span_id, span.api) not in wrapping]
