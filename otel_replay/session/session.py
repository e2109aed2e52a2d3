"""One run of the gateway: its mode, cassette, matcher, trace store and counters.

The gateway's handlers call into a :class:`Session`; the session decides nothing about
HTTP. The cassette's matcher is built, and warmed, by its index (``index.py``). At the
end, :meth:`Session.finish` writes what the mode asks for (the cassette derived from this
run's traces and the misses file, ``outputs.py``; the report) and returns the summary.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_replay.cassette.model import Cassette, load
from otel_replay.cassette.recordings import Recordings
from otel_replay.core.errors import CassetteError, ConfigError, ReplayMiss
from otel_replay.core.exchange import CanonicalRequest, Exchange
from otel_replay.matching.chain import Chain
from otel_replay.matching.sources import DEFAULT_SOURCES, RuleSources
from otel_replay.redaction.keyed import FINGERPRINT_FIELD, key_notice
from otel_replay.redaction.redact import Redactor
from otel_replay.reports.formats import SPAN_REPORTS, write_run_report
from otel_replay.reports.misses import Miss as Miss
from otel_replay.reports.run import Summary as Summary
from otel_replay.session.bypass import BypassWatch
from otel_replay.session.index import CassetteIndex
from otel_replay.session.modes import MODES as MODES
from otel_replay.session.modes import RECORDING
from otel_replay.session.modes import default_mode as default_mode
from otel_replay.session.outputs import (
    run_summary,
    transport_fault,
    write_cassette,
    write_miss_span,
    write_run_misses,
)
from otel_replay.session.places import PlacesSeen
from otel_replay.session.suite import SuiteWrites
from otel_replay.session.tools import TOOLS_RECORDED, ToolCalls
from otel_replay.session.trace_file import RunTraceFile
from otel_replay.spans.pieces import Ledger

if TYPE_CHECKING:  # the span draft imports protobuf: loaded when a run records
    from otel_replay.matching.matcher import Matcher
    from otel_replay.matching.normalize import Normalizer
    from otel_replay.session.fork import Fork, ForkPlan
    from otel_replay.spans.draft import RequestDraft

log = logging.getLogger("otel_replay")
_WHY_SPANS = 20  # misses whose span carries their why
# A span's line is at most this many times the bytes of its request and answer, plus this
# much: each is held a few times over (exact body, GenAI attributes), each escaped once.
_LINE_GROWTH, _LINE_SLACK = 16, 64 * 1024


class Session:
    """State of one gateway run."""

    def __init__(
        self,
        *,
        mode: str,
        cassette: Path | None,
        traces: Path | None = None,
        redactor: Redactor | None = None,
        command: list[str] | None = None,
        report: Path | None = None,
        rules: RuleSources = DEFAULT_SOURCES,
        suite: SuiteWrites | None = None,
        fork: ForkPlan | None = None,
        upstreams: Mapping[str, str] | None = None,
        tools: str = "replay",
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if fork is not None and mode != "strict":
            raise ConfigError(f"a fork replays its prefix strictly; it cannot run in mode {mode}")
        if mode == "auto" and cassette is None:
            raise ConfigError("mode auto needs a cassette (--cassette PATH)")
        self.mode = mode
        self.cassette_path = cassette
        self.command = command or []
        # what a refresh needs to run the command again: where it runs, what it reaches
        self.upstreams = dict(upstreams or {})
        self.run_cwd = str(Path.cwd()) if command else None
        self.report_path = report
        self.suite = suite
        self.redactor = redactor or Redactor.from_environment()
        self.user_traces = traces
        self.cassette = self._load_cassette()  # first: a bad cassette leaves nothing behind
        self.key_notice = None  # the cassette's placeholders made with another key: said once
        if self.cassette.interactions and mode != "record":
            recorded = self.cassette.source.get(FINGERPRINT_FIELD)
            self.key_notice = key_notice(recorded, self.redactor.key, cassette)
        if self.key_notice is not None:
            log.warning("%s", self.key_notice)
        self.fork: Fork | None = None  # strict up to the fork point, live from it
        if fork is not None and cassette is not None:
            from otel_replay.session.fork import Fork

            self.fork = Fork(fork, self.cassette, cassette)
        self.recordings = Recordings(self.cassette)
        self.chain = Chain(self.recordings)  # continuations held to what they continue
        # an HTML or Markdown report shows the run's spans: they need a trace file too
        self._spans_for_report = report is not None and report.suffix.lower() in SPAN_REPORTS
        self.trace_file = RunTraceFile(traces, self.records or self._spans_for_report)
        self.store = self.trace_file.store(self.redactor)
        self.pieces = Ledger()  # long strings (system prompt, tools...) once per trace file
        self.bypass = BypassWatch(self.store)  # model calls the agent's spans show
        self.rules = rules
        self.index = CassetteIndex(self.cassette, rules, f"{cassette}")
        if rules.files or self.cassette.source.get("rules"):
            self.index.rules()  # a bad rule stops the run before it serves
        self.replayed = 0
        self.by_turn = 0  # of those, turns matched by what they add (``gateway.turns``)
        self.hits: list[int] = []
        self.live: list[Exchange] = []
        self.misses: list[Miss] = []
        self.unsaved = 0  # live calls answered after the trace store stopped writing
        self.refused = 0  # live calls refused for that reason
        self._lock = threading.Lock()
        self._forwarding = 0  # live calls whose exchange is not recorded yet
        self._settled = threading.Condition(self._lock)
        self.trace_ids: set[str] = set()  # the traces of the live exchanges
        self.places = PlacesSeen()
        self.tools = ToolCalls(
            self.cassette.tools,
            mode=mode,
            redactor=self.redactor,
            store=self.store,
            misses=self.misses,
            write_spans=self.writes_replayed_spans,
            records=self.records,
            live_rules=lambda: self.normalizer.live,
            setting=tools,
            recorded_here=self.cassette.source.get(TOOLS_RECORDED) == "recorded",
        )

    # -- cassette --------------------------------------------------------------------------
    def recording(self, index: int) -> Exchange:
        """Recording ``index`` of the cassette (see ``recordings`` for its parts)."""
        return self.recordings[index]

    def _load_cassette(self) -> Cassette:
        path = self.cassette_path
        if self.mode == "record" or path is None:
            return Cassette(interactions=[], source={})
        if not path.exists():
            if self.mode == "auto":
                return Cassette(interactions=[], source={})
            raise CassetteError(path, "", "no such cassette; record it first (--mode record)")
        return load(path)

    @property
    def normalizer(self) -> Normalizer:
        """The rules live requests match by, built with the index (``matcher``): the
        built-in tables are parsed and compiled then, not before the gateway listens."""
        return self.index.rules()[0]

    @property
    def matcher(self) -> Matcher:
        """The cassette's index, built at first use: a gateway builds it as it starts
        (``prepare``), on its own thread for the CLI, while the agent starts."""
        built = self.index.built  # an attribute: a request asks for the matcher more than once
        return built if built is not None else self.index.build()

    def prepare(self) -> None:
        """Build what the first request would otherwise wait for (the index)."""
        _ = self.matcher

    def warming(self) -> Iterator[None]:
        """The live rules' work on the recorded requests, a step at a time, when the run
        is in other directories than the recording (see ``CassetteIndex.warming``)."""
        return self.index.warming()

    def match(self, request: CanonicalRequest) -> int:
        """Consumes and returns the recording ``request`` replays (``Matcher.match``, a
        continuation held to the recording it continues: ``matching.chain``); raises
        ``ReplayMiss``."""
        return self.matcher.match(request, self.chain.only(request))

    def exact_hit(self, provider: str, path: str, body: Any) -> int | None:
        """The recording a body identical to a recorded one replays (None: ``matcher``)."""
        return self.matcher.exact_hit(provider, path, body)

    def exact_hit_raw(self, provider: str, path: str, raw: bytes) -> int | None:
        """``exact_hit`` for a small body's bytes, before parsing (SDKs send compact JSON)."""
        return self.matcher.exact_hit_raw(provider, path, raw)

    @property
    def has_live_rules(self) -> bool:
        """Whether any ``live`` rule for model calls is in force (auto mode only)."""
        return self.mode == "auto" and any(not rule.for_tools for rule in self.normalizer.live)

    def is_live(self, request: CanonicalRequest) -> bool:
        """In auto mode, whether a ``live`` rule sends ``request`` to the provider."""
        return self.mode == "auto" and self.normalizer.is_live(request)

    @property
    def writes_replayed_spans(self) -> bool:
        return self.user_traces is not None or self._spans_for_report

    @property
    def records(self) -> bool:
        """Whether the run records live calls (see ``RECORDING``; a fork's go live)."""
        return self.mode in RECORDING or self.fork is not None

    @property
    def writes_spans(self) -> bool:
        """Whether the run writes spans of its calls (recorded, or replayed)."""
        return self.records or self.writes_replayed_spans

    # -- events from the gateway -----------------------------------------------------------
    def replayed_hit(
        self, index: int, number: int = 0, *, sent: bytes = b"", trace_id: str | None = None
    ) -> None:
        """Recording ``index`` replayed (``number``: the call's in a fork) for a request of
        body ``sent`` in trace ``trace_id`` (what the bypass watch compares spans with)."""
        self.bypass.reached(self.recording(index).provider, sent=sent or None, trace_id=trace_id)
        with self._lock:
            self.replayed += 1
            self.hits.append(index)
            if self.fork is not None:
                self.fork.prefix_calls.append(number)

    def replayed_span(self, exchange: Exchange) -> None:
        """The span of a replayed call (``writes_replayed_spans``), written once the agent
        has its answer."""
        from otel_replay.spans.encode import exchange_to_trace_json  # protobuf: when used

        kept = False
        try:
            doc = exchange_to_trace_json(exchange, replayed=True, ledger=self.pieces)
            line, intact = self.store.own_line(doc)
            kept = self.store.append_traces(line) and intact
        finally:
            # a run that records refers only to lists of the calls it recorded, whose
            # lines tell it whether its requests name its directories (``places``)
            self.pieces.settle(kept, lists=not self.records)

    def span_drafting(
        self, request: CanonicalRequest, body: Any
    ) -> Generator[None, None, RequestDraft | None]:
        """The request's half of its span, drafted while the provider works (a run that
        records), for ``recorded`` to finish; a step at a time (the draft, then each of
        its texts checked), the draft returned at the end."""
        if not self.records:
            return None
        from otel_replay.spans.draft import RequestDraft

        draft = RequestDraft(request, body, self.pieces)
        yield
        yield from self.store.learning(draft.texts())
        return draft

    def room_to_record(self, received: int) -> bool:
        """Whether the span of a live exchange of ``received`` bytes (its request and
        answer as they came) surely finds room in the trace file, set aside ahead; the
        gateway then gives the agent its answer before the span is written, since the
        write cannot fail for want of space. False: the span is written first, and an
        answer it cannot save reaches the agent as a failure."""
        return self.store.room_for_traces(_LINE_GROWTH * received + _LINE_SLACK)

    def recorded(
        self,
        exchange: Exchange,
        assembled: Any = None,
        *,
        short: bool = False,
        draft: RequestDraft | None = None,
        trace_id: str | None = None,
    ) -> bool:
        """A live exchange (record mode, or an auto-mode miss forwarded live); False when
        it could not be saved (see ``write_failure``). ``assembled``: a streamed response's
        body, when already put together; ``short``: no string of it is long enough to be
        stored once per file (``spans.pieces``); ``draft``: from ``span_drafting``;
        ``trace_id``: the agent's trace, as for ``replayed_hit``. The span's
        line is made (and redacted) first: an exchange that cannot be stored leaves no
        trace in the session either."""
        from otel_replay.spans.encode import exchange_to_trace_json

        kept = False
        try:  # the span (its request half placed against the ledger), its line, the file
            ledger = None if short else self.pieces
            doc = exchange_to_trace_json(exchange, assembled=assembled, ledger=ledger, draft=draft)
            line, intact = self.store.own_line(doc)
            saved = self._record_line(exchange, line)
            # a recording run's bypass lines fail nothing: its calls account for spans by
            # their window and trace, without keeping every body it records
            self.bypass.reached(exchange.provider, exchange.start_ns, trace_id=trace_id)
            kept = saved and intact
            trace_id = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0].get("traceId", "")
            with self._lock:
                self.trace_ids.add(trace_id)
        finally:  # then the ledger: its pieces stored only once on disk as encoded
            self.pieces.settle(kept)
        if not saved:
            with self._lock:
                self.unsaved += 1
        return saved

    def _record_line(self, exchange: Exchange, line: bytes | None) -> bool:
        """Append a live exchange's span line ``line`` (False if it could not be), then
        account for the exchange: the line goes to the file first."""
        saved = self.store.append_traces(line)
        self.places.learn(exchange.request, line, self.pieces.reused)
        with self._lock:
            self.live.append(exchange)
            if self.mode == "auto" and not transport_fault(exchange):
                # consumed by the request that recorded it; a network blip is not kept
                self.cassette.interactions.append(exchange)
                index = self.matcher.append(exchange.request)
                self.matcher.used.add(index)
                self.hits.append(index)
        return saved

    @property
    def write_failure(self) -> str | None:
        """Why recording stopped (a write to the trace store failed), or None."""
        return self.store.failure

    def refuse_live(self) -> str | None:
        """Before a live call: once recording has stopped, the reason (and the call is
        counted as refused), else None: a call that could not be saved is not made."""
        failure = self.store.failure
        if failure is not None:
            with self._lock:
                self.refused += 1
        return failure

    def missed(
        self,
        miss: ReplayMiss,
        provider: str,
        path: str,
        body: Any,
        *,
        request: CanonicalRequest | None = None,
        place: tuple[str | None, str | None, int] = (None, None, 0),
        keyless: bool = False,
    ) -> None:
        """A miss; ``place``: its traceparent's trace and span ids, and its start time;
        ``keyless``: in auto mode, it could not go live for want of the provider's key."""
        self.bypass.reached(provider, sent=body, trace_id=place[0])
        with self._lock:
            used = sorted(self.matcher.used)
            found = Miss(str(miss), miss.component, provider, path, body, used, keyless)
            self.misses.append(found)
        if self.writes_replayed_spans:
            # the first misses explain themselves; an agent looping on misses costs no more
            explained = request if len(self.misses) <= _WHY_SPANS else None
            only = None if explained is None else self.chain.only(explained)
            call = (provider, path, body)
            write_miss_span(self.store, self.matcher, miss, call, explained, place, only)

    # -- end of run ------------------------------------------------------------------------
    @contextlib.contextmanager
    def forwarding(self) -> Iterator[None]:
        """Around one live call: ``finish`` waits until its exchange is recorded."""
        with self._lock:
            self._forwarding += 1
        try:
            yield
        finally:
            with self._lock:
                self._forwarding -= 1
                self._settled.notify_all()

    @property
    def in_flight(self) -> bool:
        """Whether a live call is in flight (``finish`` would wait for it)."""
        return self._forwarding > 0

    def finish(self, settle_seconds: float = 10.0) -> Summary:
        with self._lock:
            if not self._settled.wait_for(lambda: self._forwarding == 0, settle_seconds):
                log.warning(
                    "otel-replay: %d live call(s) still in flight; not in the cassette",
                    self._forwarding,
                )
        self.store.close()
        try:
            write_cassette(self)
            self.tools.save(self.cassette_path)
            write_run_misses(self)
            summary = self.summary()
            if self.report_path is not None:
                traces = self.trace_file.path
                write_run_report(self.report_path, summary, self.misses, traces, self.redactor.text)
        except CassetteError:
            self.trace_file.keep(bool(self.live))
            raise
        finally:
            self.trace_file.remove()
        return summary

    def summary(self) -> Summary:
        """The run's summary so far (``finish`` returns it at the end)."""
        return run_summary(self)

    def discard(self) -> None:
        """Give up a session that never ran (the gateway could not start)."""
        self.store.close()
        self.trace_file.remove()
