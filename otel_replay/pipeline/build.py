"""``otel-replay build``: trace files → cassette.

Reads OTLP trace files (JSON lines as the Collector's file exporter writes them, one OTLP
JSON document, or OTLP protobuf; plain or gzip; a directory, or a file with its rotated
siblings), streams their spans through the span readers and makes a cassette holding one
interaction per model call, in start-time order, with every secret redacted: ``build``
returns it, ``build_file`` writes it with memory flat in the number of calls.

Files holding log records (``resourceLogs``) are read first so that GenAI events exported
as logs join their spans. In place of files, every function here also takes ``Spans``:
the export requests of a tracing backend (``otel_replay.sources``, ``build --from``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from otel_replay.cassette.format import LongArray
from otel_replay.cassette.model import Cassette, dump, load
from otel_replay.cassette.provenance import build_source
from otel_replay.cassette.writer import CassetteWriter
from otel_replay.core import memo
from otel_replay.core.errors import CassetteError, ConfigError, TraceFormatError
from otel_replay.core.exchange import JSON, Exchange, SSEEvent
from otel_replay.core.jsontext import encodes
from otel_replay.core.spill import SpillError
from otel_replay.pipeline.reading import ErrorHandler, Progress, Reader, Spans
from otel_replay.readers import AgentSpans, Census, EntrySpans, Selection, read_exchanges
from otel_replay.readers.claude_code import ClaudeCodeReader
from otel_replay.redaction.redact import Redactor
from otel_replay.session.tools import TOOLS_RECORDED
from otel_replay.spans.attributes import OWN_SOURCE

__all__ = ["BuildReport", "Spans", "build", "build_file", "expand_paths", "parse_time", "survey"]

log = logging.getLogger(__name__)

Origin = Sequence[Path] | Spans


def parse_time(text: str) -> int:
    """Nanoseconds since the epoch for an ISO 8601 date or time (``2024-05-01``,
    ``2024-05-01T12:00:00Z``, with an offset; naive times are UTC) or an integer count of
    seconds, milliseconds or nanoseconds since the epoch."""
    value = text.strip()
    if re.fullmatch(r"\d+", value):
        number = int(value)
        if number < 10**11:
            return number * 10**9
        if number < 10**14:
            return number * 10**6
        return number
    try:
        moment = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"cannot read time {text!r}: use ISO 8601 (2024-05-01T12:00:00Z) or epoch seconds"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1_000


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """The files to read: a directory's files in name order; a file preceded by its
    rotated siblings (``traces-<time>.jsonl`` and ``.gz``, oldest first)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and not _hidden(p)))
            continue
        if not path.exists():
            raise ConfigError(f"{path}: no such trace file")
        files.extend(_rotated(path))
        files.append(path)
    seen: set[Path] = set()
    unique = []
    for file in files:
        key = file.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(file)
    return unique


def _default_on_error(exc: TraceFormatError) -> None:
    log.warning("skipped: %s", exc)


def _hidden(path: Path) -> bool:
    return path.name.startswith(".")


def _rotated(path: Path) -> list[Path]:
    name = path.name.removesuffix(".gz")
    stem, dot, suffix = name.partition(".")
    pattern = re.compile(re.escape(stem) + r"-.+" + (re.escape(dot + suffix)) + r"(\.gz)?")
    siblings = [p for p in path.parent.iterdir() if p != path and pattern.fullmatch(p.name)]
    return sorted(siblings)


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What ``build_file`` did: interactions written, bad records skipped, whether the
    cassette was written (not when every record was bad, nor when model calls were seen
    and none can be replayed (``unreplayable``): an existing file is kept), ``notes``: per
    Claude Code source that skipped calls, what it showed and why, the census of every
    source (what ``build`` and ``doctor`` print), and ``origin``: what the build read, in
    a few words (the trace files as given; a backend's address)."""

    interactions: int
    skipped: int
    written: bool
    notes: tuple[str, ...] = ()
    census: Census = field(default_factory=Census)
    origin: str = ""

    @property
    def unreplayable(self) -> bool:
        """Model calls were seen and none of them can be replayed."""
        return self.census.calls > 0 and self.interactions == 0


class _Job:
    """One build: the files, the selection, and the redacted exchanges they hold."""

    def __init__(
        self,
        paths: Origin,
        trace_ids: Iterable[str] | None,
        services: Iterable[str] | None,
        since_ns: int | None,
        until_ns: int | None,
        progress: Progress | None,
        on_error: ErrorHandler | None,
        redactor: Redactor | None,
        folder: Path | None = None,
        entries: EntrySpans | None = None,
    ) -> None:
        spans = None if isinstance(paths, Sequence) else paths
        self.files = expand_paths(paths) if isinstance(paths, Sequence) else []
        # what the build read, as an emitted test names it (a backend without credentials)
        self.origin = (
            ", ".join(str(p) for p in paths) if isinstance(paths, Sequence) else paths.name
        )
        self.selection = Selection(
            trace_ids=frozenset(t.strip().lower() for t in trace_ids) if trace_ids else None,
            services=frozenset(services) if services else None,
            since_ns=since_ns,
            until_ns=until_ns,
        )
        self.reader = Reader(self.files, progress, on_error or _default_on_error, spans)
        self.redactor = redactor or Redactor.from_environment()
        self.body_events = ClaudeCodeReader(body_dirs=[f.parent for f in self.files])
        self.census = Census()
        self.agent_spans = AgentSpans(folder=folder)
        self.entries = entries
        self.trace_ids: set[str] = set()
        self.tool_calls: list[Exchange] = []  # the tool executions whose content was kept

    def exchanges(self) -> Iterator[Exchange]:
        """Redacted exchanges, nearly in start-time order (the readers release them
        through a window)."""
        for exchange in self.reader_exchanges():
            if exchange.trace_id:
                self.trace_ids.add(exchange.trace_id)
            yield redact_exchange(exchange, self.redactor)

    def reader_exchanges(self) -> Iterator[Exchange]:
        """The exchanges as the readers give them (not yet redacted)."""
        reader = self.reader
        found = read_exchanges(
            reader.traces(),
            reader.logs(),
            selection=self.selection,
            on_error=reader.on_error,
            body_events=self.body_events,
            census=self.census,
            agent_spans=self.agent_spans,
            entries=self.entries,
            tools=self.tool_calls,
        )
        yield from found

    def tools(self) -> list[Exchange]:
        """The tool calls read, redacted, in start-time order (once ``exchanges`` ran)."""
        calls = once(sorted(self.tool_calls, key=lambda e: e.start_ns))
        return [redact_exchange(exchange, self.redactor) for exchange in calls]

    def source(self, *, long: bool = False) -> dict[str, JSON]:
        """Provenance: the files, the build time, skipped records and the selection; and
        the agent's other spans in the traces of the interactions (``source.spans``; with
        ``long``, a ``LongArray`` reading them as the cassette is written)."""
        selection = self.selection
        chosen: dict[str, JSON] = {
            "trace_ids": sorted(selection.trace_ids or ()),
            "services": sorted(selection.services or ()),
            "since_ns": selection.since_ns,
            "until_ns": selection.until_ns,
        }
        source = build_source(self.files, self.reader.errors, chosen)
        if self.reader.spans is not None:
            del source["traces"]
            source["from"] = self.reader.spans.name
        order = self.agent_spans.order(self.trace_ids)
        if order:
            source["spans"] = self._long_spans(order) if long else [*map(self._span, order)]
        if self.agent_spans.omitted:
            source["spans_omitted"] = self.agent_spans.omitted
        if self.tool_calls:  # with their arguments and results: they answer the agent's tools
            source[TOOLS_RECORDED] = "recorded"
        return source

    def _span(self, number: int) -> JSON:
        return self.redactor.json(self.agent_spans.record(number))

    def _long_spans(self, order: list[int]) -> LongArray:
        odd = self.agent_spans.surrogates(order)
        surrogates = any(not encodes(json.dumps(self._span(i), ensure_ascii=False)) for i in odd)
        return LongArray(lambda: map(self._span, order), surrogates)


def build(
    paths: Origin,
    *,
    trace_ids: Iterable[str] | None = None,
    services: Iterable[str] | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    progress: Progress | None = None,
    on_error: ErrorHandler | None = None,
    redactor: Redactor | None = None,
) -> Cassette:
    """A cassette of the model calls in trace files, in memory (for a file of any size,
    :func:`build_file` writes it with memory flat in the number of calls).

    ``trace_ids`` (hex), ``services`` (``service.name``) and the start-time window
    ``[since_ns, until_ns)`` select spans. ``progress(bytes_read, total_bytes)`` is called
    as the files are read. A bad line or unreadable span goes to ``on_error`` (default: a
    logged warning) and is skipped. Secrets are redacted with ``redactor`` (default: from
    this environment and ``.env``)."""
    job = _Job(paths, trace_ids, services, since_ns, until_ns, progress, on_error, redactor)
    interactions = sorted(job.exchanges(), key=lambda e: e.start_ns)
    return Cassette(interactions=interactions, source=job.source(), tools=job.tools())


def build_file(
    paths: Origin,
    output: str | os.PathLike[str],
    *,
    trace_ids: Iterable[str] | None = None,
    services: Iterable[str] | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    progress: Progress | None = None,
    on_error: ErrorHandler | None = None,
    redactor: Redactor | None = None,
    source: dict[str, JSON] | None = None,
    entries: EntrySpans | None = None,
    keep_empty: bool = True,
) -> BuildReport:
    """Write the cassette :func:`build` returns to ``output`` (the same text ``dump``
    writes), holding only a few integers per interaction in memory: each interaction
    spills to a temporary file beside ``output`` as it is read. ``output`` is replaced
    atomically at the end; when every record was bad it is left as it was, and so it is
    when nothing was found to replay unless ``keep_empty`` (a recording run whose agent
    made no model call writes its empty cassette). ``source`` replaces the build's own
    provenance (``record`` states its command). ``entries`` collects the run's entry as
    the spans are read (``--emit-test``). Raises ``CassetteError`` when the cassette
    cannot be written."""
    folder = Path(output).parent
    job = _Job(
        paths,
        trace_ids,
        services,
        since_ns,
        until_ns,
        progress,
        on_error,
        redactor,
        folder,
        entries,
    )
    with CassetteWriter(output) as writer, closing(job.agent_spans):
        try:
            for exchange in job.exchanges():
                writer.add(exchange)
                memo.forget()  # what was computed from one call's values never serves another
        except SpillError as exc:  # keeping the agent's spans beside the output
            raise CassetteError(output, "", f"cannot write: {exc.strerror}") from None
        count, skipped = len(writer), job.reader.errors
        tallies = job.body_events.tallies
        seen = sum(t.seen for t in tallies.values())
        # calls the other spans (the gateway's own) did not make up for
        notes = tuple(
            t.describe(name) for name, t in tallies.items() if t.reasons() and count < seen
        )
        written = bool(count or (keep_empty and not (skipped or job.census.calls)))
        if written:
            if source is None:
                source = _with_places(job.source(long=True), job)
            writer.commit(source)
    if written and job.tool_calls:  # after the model calls, as the file keeps them
        with_tools = load(output)
        with_tools.tools = job.tools()
        dump(with_tools, output)
    return BuildReport(count, skipped, written, notes, job.census, job.origin)


def _with_places(source: dict[str, JSON], job: _Job) -> dict[str, JSON]:
    """The provenance with the directories Claude Code's requests were made in, so the
    cassette replays in others (as ``source.rules.places`` of a recording)."""
    places = job.body_events.places
    if places is None:
        return source
    where: dict[str, JSON] = {"cwd": places[0], "home": places[1]}
    return {**source, "rules": {"profiles": ["claude-code"], "places": where}}


def survey(
    paths: Origin,
    *,
    trace_ids: Iterable[str] | None = None,
    services: Iterable[str] | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    on_error: ErrorHandler | None = None,
) -> Census:
    """What ``build`` would make of trace files, per source, without writing anything
    (``otel-replay doctor``)."""
    job = _Job(paths, trace_ids, services, since_ns, until_ns, None, on_error, None)
    for _exchange in job.reader_exchanges():
        pass
    return job.census


def redact_exchange(exchange: Exchange, redactor: Redactor) -> Exchange:
    """A copy of an exchange with every secret in its bodies replaced by a placeholder."""
    request = exchange.request
    clean_request = replace(
        request,
        system=redactor.json(request.system),
        messages=redactor.json(request.messages),
        tools=redactor.json(request.tools),
        params=redactor.json(request.params),
    )
    response = exchange.response
    events = response.events
    if events is not None:
        events = [SSEEvent(redactor.text(e.data), e.event, e.t) for e in events]
    clean_response = replace(response, body=redactor.json(response.body), events=events)
    return replace(
        exchange,
        request=clean_request,
        response=clean_response,
        raw_request=redactor.json(exchange.raw_request),
        context=redactor.json(exchange.context),
    )


def once(calls: list[Exchange]) -> list[Exchange]:
    """Tool calls in start order, each call once: a call of the agent's own tool that the
    gateway recorded (its span, exact) and the framework's span of the same call (same
    tool and arguments, overlapping in time) are one call, the gateway's kept."""
    kept: list[Exchange] = []
    for call in calls:
        same = next((k for k in kept if _same_call(k, call)), None)
        if same is None:
            kept.append(call)
        elif call.source == OWN_SOURCE and same.source != OWN_SOURCE:
            kept[kept.index(same)] = call
    return kept


def _same_call(a: Exchange, b: Exchange) -> bool:
    if a.source == b.source or OWN_SOURCE not in (a.source, b.source):
        return False  # two spans of one instrumentation are two calls
    if a.request.model != b.request.model or a.request.endpoint != b.request.endpoint:
        return False
    if a.request.params.get("arguments") != b.request.params.get("arguments"):
        return False
    return a.start_ns <= (b.end_ns or b.start_ns) and b.start_ns <= (a.end_ns or a.start_ns)
