"""Model calls that bypassed the gateway, seen in the agent's own telemetry.

The gateway receives the agent's spans. A call is said to have bypassed it only on
evidence, since a run that did nothing wrong must never fail on this check:

- **A call was made and answered.** A model-call span (one the reader registry places as
  a model call to a provider otel-replay knows: ``readers.registry.model_call``, so every
  instrumentation ``build`` reads is watched) counts only when it shows an answer
  (``readers.registry.answered``: a response id, output messages, token usage). A
  framework's step that prepares a call, or a stream whose span ended before it was read,
  shows none. An HTTP client span to a provider's own host (the agent's HTTP client
  instrumented) is a call that went there, answered when it has a status.
- **It is counted once.** A span nested (at any depth) under another counted model-call
  span is that call: a framework's span around the SDK's.
- **No call the gateway served accounts for it.** Each counted span takes one gateway
  call of its API inside its time window, of the same trace when both know theirs, and,
  when the span recorded the request's text, one whose request holds that text (matched
  by content, not by count: two spans of one run asking different things are told
  apart). A span without content takes any call of its window.

Where the evidence is missing nothing is said; ``doctor`` tells, per instrumentation,
which spans a run cannot judge and why (``readers.census``).
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from otel_replay.otlp.store import TraceStore

if TYPE_CHECKING:  # protobuf is imported with the first telemetry received
    from google.protobuf.message import Message
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = ["BypassWatch"]

log = logging.getLogger("otel_replay")

SLACK_NS = 1_000_000_000
"""How far outside a span's window a gateway call may be and still be its call (clocks
of the agent and the gateway are one machine's, but spans are stamped a little apart)."""

BODIES_KEPT = 32 * 1024 * 1024
"""The bytes of request bodies kept to match spans by content; past it, the oldest are
let go (their calls then account for any span of their window, as a span without
content is accounted for)."""

_HTTP_URL = ("url.full", "http.url")
_HTTP_STATUS = ("http.response.status_code", "http.status_code")
_CLIENT = 3  # SpanKind.SPAN_KIND_CLIENT


@dataclass(frozen=True, slots=True)
class ModelSpan:
    """An agent's span of one model call, with what it shows of it."""

    span_id: bytes
    parent: bytes
    trace_id: bytes
    api: str
    name: str
    start_ns: int
    end_ns: int
    answered: bool
    """It shows the call was made and answered."""
    texts: tuple[str, ...] | None = None
    """The request's texts as recorded (whitespace folded, heads), None: not recorded."""
    direct: bool = False
    """An HTTP client span to a provider's own host: the call surely went there."""

    def line(self) -> str:
        return f"{self.api} call {self.name!r} (span {self.span_id.hex()})"


@dataclass(slots=True)
class GatewayCall:
    """A call that reached the gateway, and what it sent (while kept)."""

    api: str
    at_ns: int
    trace_id: bytes | None
    sent: Any
    """The request's body: its bytes, its parsed JSON, or None once let go."""
    _bag: str | None = None

    def holds(self, texts: tuple[str, ...]) -> bool | None:
        """Whether the request held every one of ``texts``; None when not known."""
        if self._bag is None:
            if self.sent is None:
                return None
            self._bag = "\0".join(_strings(_parsed(self.sent)))
            self.sent = None  # the strings are what is compared from now on
        return all(text in self._bag for text in texts)


class BypassWatch:
    """Collects the agent's model-call spans and the gateway's calls; says which spans
    no gateway call answered. Thread-safe (the OTLP receivers and the gateway call in)."""

    def __init__(self, store: TraceStore | None = None) -> None:
        """Watching the batches ``store`` receives, when given."""
        self._lock = threading.Lock()
        self._spans: list[ModelSpan] = []
        self._parents: dict[bytes, bytes] = {}
        self._calls: list[GatewayCall] = []
        self._kept = 0
        if store is not None:
            store.observers.append(self._batch)

    # -- what happens during the run ----------------------------------------------------
    def reached(
        self,
        api: str,
        at_ns: int | None = None,
        *,
        sent: Any = None,
        trace_id: str | None = None,
    ) -> None:
        """A call of ``api`` reached the gateway at ``at_ns`` (default: now), a moment
        within its span's window; ``sent``: its request body (bytes or parsed JSON, kept
        by reference until the end), ``trace_id``: its ``traceparent``'s, in hex."""
        when = time.time_ns() if at_ns is None else at_ns
        trace = bytes.fromhex(trace_id) if trace_id else None
        with self._lock:
            if isinstance(sent, bytes | bytearray):
                self._kept += len(sent)
                if self._kept > BODIES_KEPT:
                    self._let_go()
            self._calls.append(GatewayCall(api, when, trace, sent))

    def _let_go(self) -> None:
        """Forget the oldest bodies kept until the rest fit (under ``_lock``)."""
        for call in self._calls:
            if self._kept <= BODIES_KEPT // 2:
                return
            if isinstance(call.sent, bytes | bytearray):
                self._kept -= len(call.sent)
                call.sent = None

    def _batch(self, signal: str, msg: Message) -> None:
        if signal == "traces":  # an ExportTraceServiceRequest
            self.observe(msg)

    def observe(self, request: ExportTraceServiceRequest) -> None:
        """Take the model-call spans of a received batch (never raises: telemetry)."""
        try:
            found, parents = self._read(request)
        except Exception:
            log.debug("could not read a trace batch for bypass detection", exc_info=True)
            return
        with self._lock:
            self._spans.extend(found)
            self._parents.update(parents)

    def _read(
        self, request: ExportTraceServiceRequest
    ) -> tuple[list[ModelSpan], dict[bytes, bytes]]:
        # the readers package and protobuf are imported with the first batch, not at start;
        # the package as a whole first, as every other import of it does: a thread warming
        # the build pipeline may be importing it meanwhile, and its modules import each
        # other in the package's order only (a module of it taken alone could meet one
        # that thread holds half made)
        import otel_replay.readers  # noqa: F401
        from otel_replay.otlp.attributes import attributes_to_dict
        from otel_replay.readers.registry import CALL_MARKS

        marks = CALL_MARKS + _host_marks()
        found: list[ModelSpan] = []
        parents: dict[bytes, bytes] = {}
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                # one pass over the scope's bytes, rather than over every attribute: a
                # scope carrying no instrumentation's mark holds no model call
                if not any(mark in scope.SerializeToString() for mark in marks):
                    continue
                for span in scope.spans:
                    if span.parent_span_id:
                        parents[bytes(span.span_id)] = bytes(span.parent_span_id)
                    data = span.SerializeToString()
                    if not any(mark in data for mark in marks):
                        continue  # a tool call, an agent step: no attributes to read
                    seen = _model_span(span, attributes_to_dict(span.attributes))
                    if seen is not None:
                        found.append(seen)
        return found, parents

    # -- at the end ---------------------------------------------------------------------
    def bypassed(self) -> list[str]:
        """One line per model call the agent's spans show and no gateway call answered.

        Spans whose request text is known go first, each by its end taking the earliest
        unused call of its API in its window that holds its text (one whose text was let
        go if none does); then the spans without text take the earliest unused call of
        their window: the greedy choice that pairs the most spans with calls."""
        with self._lock:
            spans, parents = list(self._spans), dict(self._parents)
            calls = sorted(self._calls, key=lambda c: c.at_ns)
        counted = _outermost([s for s in spans if s.answered], parents)
        by_end = sorted(counted, key=lambda s: (s.texts is None, s.end_ns, s.start_ns))
        used: set[int] = set()
        missing: list[str] = []
        for span in by_end:
            if span.direct:
                missing.append(span.line())
                continue
            found = _account(span, calls, used)
            if found is None:
                missing.append(span.line())
            else:
                used.add(found)
        return missing


def _account(span: ModelSpan, calls: list[GatewayCall], used: set[int]) -> int | None:
    """The index of the call that accounts for ``span``, or None."""
    unknown = None
    for index, call in enumerate(calls):
        if call.at_ns < span.start_ns - SLACK_NS:
            continue
        if call.at_ns > span.end_ns + SLACK_NS:
            break
        if index in used or call.api != span.api:
            continue
        if call.trace_id is not None and span.trace_id and call.trace_id != span.trace_id:
            continue
        if span.texts is None:
            return index
        holds = call.holds(span.texts)
        if holds:
            return index
        if holds is None and unknown is None:
            unknown = index
    return unknown


def _outermost(spans: list[ModelSpan], parents: Mapping[bytes, bytes]) -> list[ModelSpan]:
    """The spans no other of ``spans`` holds, at any depth; an HTTP span to a provider
    under a model-call span makes that span the call that went there."""
    ids = {span.span_id: span for span in spans}
    kept: dict[bytes, ModelSpan] = {}
    for span in spans:
        outer = span
        for ancestor in _ancestors(span.span_id, parents):
            if ancestor in ids:
                outer = ids[ancestor]
        if outer is not span:
            if span.direct and not outer.direct:  # the HTTP call under it went around
                kept[outer.span_id] = _direct(outer)
            continue
        kept.setdefault(span.span_id, span)
    return list(kept.values())


def _direct(span: ModelSpan) -> ModelSpan:
    return ModelSpan(
        span.span_id,
        span.parent,
        span.trace_id,
        span.api,
        span.name,
        span.start_ns,
        span.end_ns,
        True,
        span.texts,
        direct=True,
    )


def _ancestors(span_id: bytes, parents: Mapping[bytes, bytes]) -> Iterator[bytes]:
    seen = {span_id}
    at = parents.get(span_id)
    while at and at not in seen:  # a malformed trace may loop
        seen.add(at)
        yield at
        at = parents.get(at)


def _model_span(span: Span, attrs: Mapping[str, Any]) -> ModelSpan | None:
    """What a span shows of a model call, or None when it stands for none."""
    from otel_replay.readers.evidence import request_texts
    from otel_replay.readers.registry import answered, model_call, read_call

    ids = bytes(span.span_id), bytes(span.parent_span_id), bytes(span.trace_id)
    times = span.start_time_unix_nano, span.end_time_unix_nano
    api = model_call(span, attrs)
    if api is not None:
        texts = None
        shown = answered(span, attrs)
        if shown:
            reading = read_call(span, attrs)
            texts = None if reading is None else request_texts(reading.exchange.request)
        return ModelSpan(*ids, api, span.name, *times, shown, texts)
    api = _provider_api(span, attrs)
    if api is None:
        return None
    shown = any(name in attrs for name in _HTTP_STATUS)
    return ModelSpan(*ids, api, span.name, *times, shown, direct=True)


def _provider_api(span: Span, attrs: Mapping[str, Any]) -> str | None:
    """The API of the provider whose own host an HTTP client span called, or None."""
    if span.kind != _CLIENT:
        return None
    url = next((attrs[name] for name in _HTTP_URL if isinstance(attrs.get(name), str)), None)
    if url is None:
        return None
    host = (urlsplit(url).hostname or "").lower()
    for api, patterns in _provider_hosts():
        if any(fnmatch.fnmatchcase(host, pattern) for pattern in patterns):
            return api
    return None


_HOSTS: list[tuple[str, tuple[str, ...]]] = []
_HOST_MARKS: list[bytes] = []


def _host_marks() -> tuple[bytes, ...]:
    """The longest fixed piece of each provider host pattern: a scope's bytes holding none
    holds no HTTP span to a provider's own host (most HTTP spans call other hosts)."""
    if not _HOST_MARKS:
        pieces = {
            max(pattern.split("*"), key=len).encode()
            for _api, patterns in _provider_hosts()
            for pattern in patterns
        }
        _HOST_MARKS.extend(sorted(pieces))
    return tuple(_HOST_MARKS)


def _provider_hosts() -> list[tuple[str, tuple[str, ...]]]:
    """Each provider row's API and its public hosts."""
    if not _HOSTS:
        from otel_replay.providers import PROVIDERS

        _HOSTS.extend((row.api, row.egress_hosts) for row in PROVIDERS if row.egress_hosts)
    return _HOSTS


def _parsed(sent: Any) -> Any:
    if not isinstance(sent, bytes | bytearray):
        return sent
    try:
        return orjson.loads(sent)
    except orjson.JSONDecodeError:
        return sent.decode("utf-8", "replace")


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON value (whitespace folded), depth first, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield " ".join(item.split())
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
