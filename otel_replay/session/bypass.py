"""Model calls that bypassed the gateway, seen in the agent's own telemetry.

The gateway receives the agent's spans. A model-call span (one that declares a model
operation, for a provider otel-replay knows) is a call the agent made; each call the
gateway answered (replayed, live or missed) happened inside the span of the call it was.
A model-call span with no gateway call of its provider inside its time window is a call
that went somewhere else: a client built before the gateway's environment was set, a
hard-coded base URL. Spans of a framework that wrap a model-call span of the same call
(a LangChain span around the OpenAI SDK's) count once: only the innermost counts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.readers.operation import operation_of
from otel_replay.spans.attributes import P as OWN_PREFIX

__all__ = ["BypassWatch"]

log = logging.getLogger("otel_replay")

SLACK_NS = 1_000_000_000
"""How far outside a span's window a gateway call may be and still be its call (clocks
of the agent and the gateway are one machine's, but spans are stamped a little apart)."""
MAX_LINKS = 1_000_000  # parent links kept to find nested model spans; beyond, none nest

_KEYS = frozenset({genai.PROVIDER_NAME, genai.SYSTEM})


@dataclass(frozen=True, slots=True)
class ModelSpan:
    """An agent's span of one model call."""

    span_id: bytes
    api: str
    name: str
    start_ns: int
    end_ns: int


class BypassWatch:
    """Collects the agent's model-call spans and the gateway's calls; says which spans
    no gateway call answered. Thread-safe (the OTLP receivers and the gateway call in)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ModelSpan] = []
        self._parents: dict[bytes, bytes] = {}
        self._calls: list[tuple[str, int]] = []
        self._apis = providers.semconv_names()

    # -- what happens during the run ----------------------------------------------------
    def reached(self, api: str, at_ns: int) -> None:
        """A call of ``api`` reached the gateway at ``at_ns`` (within its span's window)."""
        with self._lock:
            self._calls.append((api, at_ns))

    def observe(self, request: ExportTraceServiceRequest) -> None:
        """Take the model-call spans of a received batch (never raises: telemetry)."""
        try:
            found, links = self._read(request)
        except Exception:
            log.debug("could not read a trace batch for bypass detection", exc_info=True)
            return
        with self._lock:
            self._spans.extend(found)
            room = MAX_LINKS - len(self._parents)
            self._parents.update(links[: max(0, room)])

    def _read(
        self, request: ExportTraceServiceRequest
    ) -> tuple[list[ModelSpan], list[tuple[bytes, bytes]]]:
        found: list[ModelSpan] = []
        links: list[tuple[bytes, bytes]] = []
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    if span.parent_span_id:
                        links.append((bytes(span.span_id), bytes(span.parent_span_id)))
                    if not any(kv.key in _KEYS for kv in span.attributes):
                        continue  # no provider named: not a model call we could place
                    attrs = attributes_to_dict(span.attributes)
                    api = self._api(attrs)
                    if api is None or any(key.startswith(OWN_PREFIX) for key in attrs):
                        continue
                    if operation_of(api, attrs, span.name) is None:
                        continue
                    start, end = span.start_time_unix_nano, span.end_time_unix_nano
                    found.append(ModelSpan(bytes(span.span_id), api, span.name, start, end))
        return found, links

    def _api(self, attrs: Mapping[str, Any]) -> str | None:
        for key in (genai.PROVIDER_NAME, genai.SYSTEM):
            value = attrs.get(key)
            if isinstance(value, str) and value.lower() in self._apis:
                return self._apis[value.lower()]
        return None

    # -- at the end ---------------------------------------------------------------------
    def bypassed(self) -> list[str]:
        """One line per model call the agent's spans show and no gateway call answered."""
        with self._lock:
            spans, parents, calls = list(self._spans), dict(self._parents), list(self._calls)
        innermost = _innermost(spans, parents)
        free = sorted(calls, key=lambda call: call[1])
        missing: list[str] = []
        for span in sorted(innermost, key=lambda s: (s.end_ns, s.start_ns)):
            low, high = span.start_ns - SLACK_NS, span.end_ns + SLACK_NS
            hit = next(
                (i for i, (api, t) in enumerate(free) if api == span.api and low <= t <= high),
                None,
            )
            if hit is None:
                missing.append(f"{span.api} call {span.name!r} (span {span.span_id.hex()})")
            else:
                del free[hit]
        return missing


def _innermost(spans: list[ModelSpan], parents: Mapping[bytes, bytes]) -> list[ModelSpan]:
    """The spans that have no model-call span of the same provider beneath them."""
    ids = {span.span_id: span for span in spans}
    wrapping: set[bytes] = set()
    for span in spans:
        seen: set[bytes] = set()
        parent = parents.get(span.span_id)
        while parent is not None and parent not in seen:
            seen.add(parent)
            outer = ids.get(parent)
            if outer is not None and outer.api == span.api:
                wrapping.add(parent)
            parent = parents.get(parent)
    return [span for span in spans if span.span_id not in wrapping]
