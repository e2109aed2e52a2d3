"""One run's tool calls (MCP exchanges): the recorded ones and which were used, the live
ones, the counts the summary states, and at the end their place in the cassette.

``Session.tools`` holds one; the gateway's MCP mount (``gateway.mcp``) and the stdio
bridge call into it. Like the session, it decides nothing about HTTP.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay.cassette.model import Cassette, dump, load, locked
from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, SSEEvent
from otel_replay.matching.mcp import ToolMatcher
from otel_replay.providers.mcp import ANY_SERVER, MCP, server_of, server_path
from otel_replay.reports.misses import Miss

if TYPE_CHECKING:
    from otel_replay.matching.rules import LiveRule
    from otel_replay.otlp.store import TraceStore
    from otel_replay.redaction.redact import Redactor

__all__ = [
    "LIVE",
    "OWN_TOOLS",
    "RECORD",
    "SETTINGS",
    "TOOLS_RECORDED",
    "Decision",
    "SpanPlace",
    "ToolCalls",
    "ToolCounts",
]

log = logging.getLogger("otel_replay")

TOOL_CALL = "tools/call"
OWN_TOOLS = server_path(ANY_SERVER)
"""The endpoint of a call of the agent's own tools (a function in its process), as of a
tool call read from a trace that names no MCP server: each answers the other."""
TOOLS_RECORDED = "tools"
"""The cassette's ``source`` key saying it recorded the agent's own tools (``recorded``)."""
RECORD = "record"
LIVE = "live"
SETTINGS = ("replay", "live")
"""What a run does with the agent's own tools (``--tools``)."""
Decision = int | ReplayMiss | str
"""``ToolCalls.decide``: a recording's index, a miss, ``RECORD`` or ``LIVE``."""


@dataclasses.dataclass(slots=True)
class SpanPlace:
    """Where a tool call's span goes and what it says of the transport: the JSON-RPC id
    the client used, the MCP revision it spoke, ``tcp`` (Streamable HTTP) or ``pipe``
    (stdio), its start, and the trace context it carried."""

    request_id: JSON = None
    protocol: str | None = None
    transport: str = "tcp"
    start_ns: int = 0
    trace_id: str | None = None
    parent: str | None = None

    def placed(self, exchange: Exchange, end_ns: int) -> Exchange:
        """``exchange`` as it happened here (its times and trace)."""
        return dataclasses.replace(
            exchange,
            start_ns=self.start_ns,
            end_ns=end_ns,
            trace_id=self.trace_id,
            span_id=None,
            parent_span_id=self.parent,
        )


@dataclasses.dataclass(slots=True)
class ToolCounts:
    """Tool calls (``tools/call``) replayed, made live; MCP requests that missed."""

    replayed: int = 0
    live: int = 0
    misses: int = 0


class ToolCalls:
    """The tool calls of one run. ``misses`` is the session's list: a tool call's miss is
    a miss of the run (strict fails)."""

    def __init__(
        self,
        recorded: list[Exchange],
        *,
        mode: str,
        redactor: Redactor,
        store: TraceStore,
        misses: list[Miss],
        write_spans: bool,
        records: bool,
        live_rules: Callable[[], Sequence[LiveRule]] = tuple,
        setting: str = "replay",
        recorded_here: bool = False,
    ) -> None:
        self.recorded = list(recorded)
        self.mode = mode
        self.setting = setting  # the agent's own tools: ``replay`` or ``live``
        # whether the cassette recorded the agent's own tools (``TOOLS_RECORDED``)
        self.recorded_here = recorded_here
        self.ran_unrecorded = False  # an own tool ran live: the cassette never recorded them
        self.redactor = redactor
        self.store = store
        self.write_spans = write_spans  # of replayed calls too
        self.records = records
        self._live_rules = live_rules  # asked for at the first tool call
        self.matcher = ToolMatcher([ex.request for ex in recorded])
        self.counts = ToolCounts()
        self.live: list[Exchange] = []
        self._misses = misses
        self._lock = threading.Lock()

    @property
    def servers(self) -> list[str]:
        """The MCP servers the recordings went to."""
        return list(dict.fromkeys(server_of(ex.request.endpoint) for ex in self.recorded))

    @property
    def matches(self) -> bool:
        """Whether requests are answered from the recordings (strict, auto)."""
        return self.mode in ("strict", "auto")

    def match(self, request: CanonicalRequest) -> int | ReplayMiss:
        """The recording answering ``request`` (then used), or why none does."""
        try:
            return self.matcher.match(request)
        except ReplayMiss as miss:
            return miss

    def decide(self, request: CanonicalRequest, *, can_run: bool = True) -> Decision:
        """What happens to a tool call: replayed from a recording (its index), run and
        recorded (``RECORD``), run and not recorded (``LIVE``), or a miss. ``can_run``:
        whether the call could reach the real tool (an MCP server named for the run; the
        agent's own tools always can). The one decision of every door tools come by: the
        MCP mount, the stdio bridge and the hooks of the agent's own tools."""
        own = request.endpoint == OWN_TOOLS
        if own and (self.setting == "live" or (self.matches and not self.recorded_here)):
            if self.matches and self.setting != "live":
                self._say_unrecorded()
            return LIVE
        if can_run and (self.mode == "record" or self.is_live(request)):
            return RECORD
        if not self.matches:
            return LIVE if own else RECORD
        found = self.match(request)
        if isinstance(found, int) or self.mode != "auto" or not can_run:
            return found
        return RECORD

    def _say_unrecorded(self) -> None:
        with self._lock:
            said, self.ran_unrecorded = self.ran_unrecorded, True
        if not said:
            log.warning(
                "otel-replay: this cassette did not record the agent's own tools: they run "
                "live; record it again to replay them (`otel-replay record`)"
            )

    def is_live(self, request: CanonicalRequest) -> bool:
        """Whether a ``live`` rule (naming its tool or its server) sends ``request`` to the
        real server, in every mode."""
        live_rules = [rule for rule in self._live_rules() if rule.for_tools]
        if not live_rules:
            return False
        from otel_replay.matching.rules import Subject

        subject = Subject(provider=MCP, model=request.model, endpoint=request.endpoint)
        return any(rule.scope.applies(subject) for rule in live_rules)

    def replayed(self, index: int, place: SpanPlace) -> None:
        """Recording ``index`` answered a request (``place``: where, for its span)."""
        recorded = self.recorded[index]
        with self._lock:
            if recorded.operation == TOOL_CALL:
                self.counts.replayed += 1
        if self.write_spans:
            self._write_span(place.placed(recorded, time.time_ns()), place, replayed=True)

    def missed(self, miss: ReplayMiss, path: str, body: JSON) -> None:
        """A request no recording answers (its body redacted here)."""
        with self._lock:
            self.counts.misses += 1
            used = sorted(self.matcher.used)
            clean = self.redactor.json(body)
            self._misses.append(Miss(str(miss), miss.component, "mcp", path, clean, used))

    def made_live(self, exchange: Exchange, place: SpanPlace) -> Exchange:
        """A request forwarded to the server: its exchange redacted, its span written,
        kept for the cassette (unless a ``live`` rule sent it: it is never replayed);
        returns the redacted exchange."""
        clean = self._redacted(place.placed(exchange, time.time_ns()))
        kept = self.mode == "record" or not self.is_live(clean.request)
        with self._lock:
            if kept:
                self.live.append(clean)
            if clean.operation == TOOL_CALL:
                self.counts.live += 1
            if self.mode == "auto" and kept:
                self.matcher.append(clean.request)
                self.recorded.append(clean)
        self._write_span(clean, place, replayed=False)
        return clean

    def _redacted(self, exchange: Exchange) -> Exchange:
        redact = self.redactor
        request = exchange.request
        params = redact.json(request.params)
        model = redact.text(request.model) if request.model else request.model
        response = exchange.response
        events = response.events
        if events is not None:
            events = [SSEEvent(redact.text(e.data), e.event, e.t) for e in events]
        clean = dataclasses.replace(response, body=redact.json(response.body), events=events)
        return dataclasses.replace(
            exchange,
            request=dataclasses.replace(request, params=params, model=model),
            response=clean,
        )

    def _write_span(self, exchange: Exchange, place: SpanPlace, *, replayed: bool) -> None:
        from otel_replay.spans.mcp import tool_span_json  # protobuf: when a span is written

        try:
            doc = tool_span_json(
                exchange,
                request_id=place.request_id,
                protocol=place.protocol,
                transport=place.transport,
                replayed=replayed,
            )
            self.store.append_traces(self.store.traces_line(doc))
        except Exception:  # a span must never break the agent's call
            log.exception("otel-replay could not write a tool call's span")

    def save(self, path: Path | None) -> None:
        """Put this run's live tool calls in the cassette at ``path``: in record mode in
        place of the ones it held, otherwise after them."""
        kept = [ex for ex in self.live if not (ex.response.status == 0 and ex.response.fault)]
        if path is None or not kept:
            return
        with locked(path) as target:
            now = load(target) if target.exists() else Cassette(interactions=[], source={})
            tools = kept if self.mode == "record" else [*now.tools, *kept]
            dump(Cassette(interactions=now.interactions, source=now.source, tools=tools), target)
