"""One incoming provider request as the gateway sees it, and the pure helpers that read it:
its body, its redaction, its ``traceparent``."""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from multidict import MultiMapping

from otel_replay.core import lazy
from otel_replay.core.errors import OtelReplayError
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, Response, SSEEvent
from otel_replay.core.ids import new_span_id, new_trace_id
from otel_replay.core.jsontext import strict_loads
from otel_replay.core.limits import MAX_BODY_DEPTH
from otel_replay.providers import Route
from otel_replay.providers.base import Provider
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session
from otel_replay.spans.pieces import holds_no_piece
from otel_replay.streams.codec import StreamCodec

if TYPE_CHECKING:  # the span draft imports protobuf: loaded when a run records
    from otel_replay.spans.draft import RequestDraft

__all__ = [
    "BodyTooDeep",
    "Call",
    "Incoming",
    "nests_deeper",
    "parse_body",
    "parse_traceparent",
    "parses_within",
    "redacted_body",
    "within_depth",
]

log = logging.getLogger("otel_replay.gateway")

_ENCODER = "otel_replay.spans.encode"


class BodyTooDeep(OtelReplayError, ValueError):
    """A JSON body nested beyond the gateway's limit (the agent gets a 400)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"otel-replay: the request body nests deeper than {limit} levels")


def parse_body(raw: bytes, max_depth: int = MAX_BODY_DEPTH) -> JSON:
    """The JSON value of a body; its text when it is not JSON (a ``NaN`` or an infinity
    included, which no cassette could hold as JSON); None when empty.
    :class:`BodyTooDeep` when it nests beyond ``max_depth``."""
    if not raw:
        return None
    try:
        value = strict_loads(raw)
    except RecursionError:
        raise BodyTooDeep(max_depth) from None
    except ValueError:
        return raw.decode("utf-8", "replace")
    if not within_depth(raw, max_depth) and nests_deeper(value, max_depth):
        raise BodyTooDeep(max_depth)
    return value


def nests_deeper(value: JSON, limit: int) -> bool:
    """Whether a parsed JSON value nests more than ``limit`` levels deep (a container is
    one level, what it holds the next), found level by level over its containers alone:
    a tenth of the time reading its text's brackets would take."""
    level: list[Any] = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        inner: list[Any] = []
        for node in level:
            for item in node.values() if type(node) is dict else node:
                if type(item) is dict or type(item) is list:
                    inner.append(item)
        level = inner
    return False


def within_depth(raw: bytes, limit: int) -> bool:
    """Whether ``raw`` surely nests no deeper than ``limit``: it opens no more brackets."""
    return raw.count(b"[") + raw.count(b"{") <= limit


def parses_within(raw: bytes, limit: int) -> bool:
    """Whether ``raw`` is JSON nesting no deeper than ``limit``, told by orjson's parse (in
    about half the time of the standard library's, whose value it shares the shape of);
    False when orjson cannot read it (NaN, a lone surrogate, not JSON at all)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return not nests_deeper(value, limit)


def redacted_body(redactor: Redactor, raw: bytes, body: JSON = None) -> JSON:
    """``redactor.json(parse_body(raw))`` (``body``: that parse, when already done),
    without re-serialising a clean body.

    When the raw text holds no backslash, every string of the parsed value appears in it
    verbatim, so a raw text the redactor's prefilter passes means nothing to redact."""
    if body is None:
        try:
            body = parse_body(raw)
        except BodyTooDeep:  # an upstream's answer nested beyond reason: kept as text
            body = raw.decode("utf-8", "replace")
    if isinstance(body, dict | list) and b"\\" not in raw:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and not redactor.might_hold_secret(text):
            return body
    return redactor.json(body, size=len(raw))


def parse_traceparent(value: str | None) -> tuple[str | None, str | None]:
    """(trace_id, parent_span_id) from a W3C traceparent header, or (None, None)."""
    if not value:
        return None, None
    parts = value.strip().split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None, None
    trace_id, span_id = parts[1].lower(), parts[2].lower()
    if trace_id == "0" * 32 or span_id == "0" * 16:
        return None, None
    return trace_id, span_id


class Incoming(Protocol):
    """One provider request as a door hands it in: aiohttp's request (the gateway), or the
    in-process transports' (``frontends/transport.py``)."""

    @property
    def method(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def raw_path(self) -> str: ...

    @property
    def query(self) -> MultiMapping[str]: ...

    @property
    def query_string(self) -> str: ...

    @property
    def headers(self) -> MultiMapping[str]: ...


class Reading(Protocol):
    """A body's reading (``gateway.bodies``), which knows the cheaper way to redact it."""

    def redacted(self) -> JSON: ...

    def redacting(self) -> Iterator[object]:
        """What ``redacted`` does, a step at a time (a step may yield a future it waits on)."""
        ...


@dataclass(slots=True)
class Call:
    """What the gateway knows about one incoming provider request."""

    request: Incoming
    route: Route
    provider: Provider
    path: str  # the path the provider reads: as received, with Azure's api-version
    operation: str
    raw: bytes
    parsed: JSON  # the body as read: see ``body``
    asks_stream: bool  # see ``stream``
    start_ns: int
    trace_id: str | None
    parent_span_id: str | None
    session: Session
    redacted: bool = True
    reading: Reading | None = None  # the body's reading, which redacts it cheaper than a walk
    short: bool = False  # no string of the request is long enough to be a piece
    reader: Callable[[], tuple[JSON, Reading | None]] | None = None
    """Reads the body, when that is left until first needed (record mode reads it while
    the provider works)."""
    draft: RequestDraft | None = None  # its span's request half (``preparing``)
    sent: bytes | None = None  # the body sent upstream, when not the agent's (a fork's model)
    number: int = 0  # its place among a fork's calls (1-based; 0: no fork)
    provenance: dict[str, JSON] | None = None  # a fork's live call: see ``Exchange``
    _canonical: CanonicalRequest | None = None
    _steps: Iterator[object] | None = None  # ``preparing``, once begun

    @property
    def body(self) -> JSON:
        """The body: redacted, unless ``redacted`` is False (record mode, until recording)."""
        if self.reader is not None:
            self._read()
        return self.parsed

    @property
    def stream(self) -> bool:
        """Whether the call asks for a streamed answer."""
        if self.reader is not None:
            self._read()
        return self.asks_stream

    def _read(self) -> None:
        assert self.reader is not None
        self.parsed, self.reading = self.reader()
        self.reader = None
        self.asks_stream = self.provider.wants_stream(self.parsed, self.path, self.request.query)

    @property
    def upstream(self) -> str:
        """The upstream it is forwarded to: the provider's, or e.g. ``"azure"``."""
        return self.route.upstream

    @property
    def codec(self) -> StreamCodec:
        """The wire format its streams are in."""
        return self.route.spec.codec

    @property
    def canonical(self) -> CanonicalRequest:
        """The canonical request, computed once (matching and recording both need it)."""
        if self._canonical is None:
            self._redact()
            self._canonical = self.provider.canonical(self.path, self.body)
        return self._canonical

    def preparing(self) -> Iterator[object]:
        """What recording needs of the request alone (redacted, its canonical form, its
        span's request half drafted, the span encoder imported on a run's first call),
        a step at a time: taken while the upstream works, the gateway's loop running
        between steps, and what is left of it once it is needed (whoever iterates this
        next). A step may yield a future it waits on (``take_steps``)."""
        if self._steps is None:
            self._steps = self._prepare()
        return self._steps

    def _prepare(self) -> Iterator[object]:
        # the span encoder (protobuf), loaded as a recording gateway starts: waited for
        # while it loads, the loop serving, then imported (a run's first call)
        while (loading := lazy.pending(_ENCODER)) is not None:
            yield loading
        importlib.import_module(_ENCODER)
        if self.reader is not None:
            self._read()
            yield None
        if not self.redacted and self.reading is not None:
            yield from self.reading.redacting()  # a new conversation's items, one by one
        self.canonical  # noqa: B018  # the body redacted and canonical, which it caches
        yield None
        self.short = holds_no_piece(self.raw)
        self.draft = yield from self.session.span_drafting(self.canonical, self.body)

    def _redact(self) -> None:
        if not self.redacted:
            body = self.body  # read first: the reading knows the cheaper way to redact it
            if self.reading is not None:
                self.parsed = self.reading.redacted()
            else:
                self.parsed = redacted_body(self.session.redactor, self.raw, body)
            self.redacted = True

    def exchange(self, response: Response) -> Exchange:
        self._redact()
        return Exchange(
            provider=self.provider.name,
            operation=self.operation,
            request=self.canonical,
            response=response,
            raw_request=self.body,
            method=self.request.method,
            stream=self.stream,
            start_ns=self.start_ns,
            end_ns=time.time_ns(),
            trace_id=self.trace_id or new_trace_id(),
            span_id=new_span_id(),
            parent_span_id=self.parent_span_id,
            provenance=self.provenance,
        )

    def redacted_stream(self, events: list[SSEEvent]) -> tuple[list[SSEEvent], JSON]:
        """Redact each event, and the message the events assemble into as they came: a
        secret split across two deltas is caught there (redacting the events first would
        leave its tail, once its head became a placeholder), and the stream is then rebuilt
        from the redacted message (same content and order of events, coarser chunks).
        Returns the events and the message, which the span needs too."""
        redactor = self.session.redactor
        try:
            whole = self.provider.body_from_stream(self.operation, events)
        except Exception:  # an odd stream: assembled (if at all) from its redacted events
            whole = None
        for event, data in zip(events, redactor.texts([e.data for e in events]), strict=True):
            event.data = data
        try:
            body = self.provider.body_from_stream(self.operation, events)
            clean = redactor.json(body if whole is None else whole)
            if clean == body:
                return events, body
            rebuilt = self.provider.stream_from_body(self.operation, clean)
        except Exception:  # an odd stream: the per-event redaction stands
            log.debug("could not reassemble a recorded stream", exc_info=True)
            return events, None
        last = events[-1].t if events else 0.0
        for i, event in enumerate(rebuilt):
            event.t = events[i].t if i < len(events) else last
        return rebuilt, clean
