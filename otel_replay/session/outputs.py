"""What a run leaves behind as it ends: the cassette its mode asks for (derived from the
run's traces: written afresh, appended to, or a fork's), with the provenance it records,
the misses file, and the summary of the run."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from otel_replay.cassette.model import Cassette, dump, locked
from otel_replay.cassette.provenance import run_directory, run_source
from otel_replay.core.exchange import Exchange
from otel_replay.reports.misses import Miss, write_misses
from otel_replay.reports.prices import priced_total
from otel_replay.reports.run import Summary
from otel_replay.session.suite import SuiteWrites, append_or_start
from otel_replay.session.tools import TOOLS_RECORDED, ToolCalls

if TYPE_CHECKING:
    from otel_replay.core.errors import ReplayMiss
    from otel_replay.core.exchange import CanonicalRequest
    from otel_replay.matching.matcher import Matcher, Only
    from otel_replay.matching.sources import RuleSources
    from otel_replay.otlp.store import TraceStore
    from otel_replay.redaction.redact import Redactor
    from otel_replay.session.bypass import BypassWatch
    from otel_replay.session.fork import Fork
    from otel_replay.session.index import CassetteIndex
    from otel_replay.session.places import PlacesSeen
    from otel_replay.session.trace_file import RunTraceFile

__all__ = [
    "Run",
    "provenance",
    "run_summary",
    "transport_fault",
    "write_cassette",
    "write_miss_span",
    "write_run_misses",
]

log = logging.getLogger("otel_replay")


class Run(Protocol):
    """What a run's outputs are made from: the state ``session.Session`` keeps (named
    here, so that this module needs nothing of the session's)."""

    mode: str
    cassette: Cassette
    cassette_path: Path | None
    command: list[str]
    run_cwd: str | None
    upstreams: dict[str, str]
    user_traces: Path | None
    suite: SuiteWrites | None
    redactor: Redactor
    rules: RuleSources
    index: CassetteIndex
    fork: Fork | None
    store: TraceStore
    bypass: BypassWatch
    trace_file: RunTraceFile
    places: PlacesSeen
    tools: ToolCalls
    live: list[Exchange]
    misses: list[Miss]
    hits: list[int]
    trace_ids: set[str]
    replayed: int
    by_turn: int
    unsaved: int
    refused: int

    @property
    def records(self) -> bool: ...

    def recording(self, index: int) -> Exchange: ...


def transport_fault(exchange: Exchange) -> bool:
    """The upstream could not be reached or dropped the connection before answering: an
    exchange no cassette keeps."""
    return exchange.response.status == 0 and exchange.response.fault is not None


def write_cassette(session: Run) -> None:
    """The run's cassette: a fork's; in record mode the run's exchanges (an empty
    cassette when nothing was recorded and none was there); in auto mode those recorded
    appended; nothing when none of the run's exchanges could be saved."""
    if session.fork is not None:
        _write_fork(session, session.fork)
        return
    path = session.cassette_path
    live = session.live
    if path is not None and live and len(live) == session.unsaved:
        log.error("otel-replay: no exchange of this run was saved; kept %s as it was", path)
        return
    source = partial(provenance, session)
    if path is None or not live:
        if session.mode == "record" and path is not None:
            with locked(path) as target:
                if target.exists():
                    log.warning("otel-replay: nothing was recorded; kept the existing %s", path)
                else:
                    dump(Cassette(interactions=[], source=source()), target)
        return
    if session.mode == "record":
        start = partial(_derive_into, session)
        append_or_start(path, session.suite, start, partial(_derive, session), source)
        return
    derived = [ex for ex in _derive(session) if not transport_fault(ex)]
    if derived:
        append_or_start(path, session.suite, None, lambda: derived, source)


def _write_fork(session: Run, fork: Fork) -> None:
    """The fork's cassette: the recordings replayed, then the live exchanges."""
    if fork.writable(len(session.misses)):
        replayed = [session.recording(i) for i in session.hits]
        target = fork.plan.target
        fork.write(replayed, session.live, _derive(session), provenance(session, target))


def _derive(session: Run) -> list[Exchange]:
    """The exchanges recorded in the run (the live exchanges select its traces)."""
    return session.trace_file.derive(session.trace_ids, len(session.live))


def _derive_into(session: Run, path: Path) -> None:
    trace_ids, recorded = session.trace_ids, len(session.live)
    session.trace_file.derive_into(path, trace_ids, recorded, provenance(session))


def provenance(session: Run, target: Path | None = None) -> dict[str, Any]:
    """The provenance of the cassette written to ``target`` (default: the session's)."""
    written = target or session.cassette_path
    cwd = session.run_cwd
    where = run_directory(written, cwd) if written and cwd else None
    source = run_source(
        session.command,
        session.user_traces,
        session.redactor.text,
        cwd=where,
        upstreams=session.upstreams,
        key=session.redactor.key,
    )
    requests = [ex.request for ex in session.live]
    places = session.places
    rules = session.rules.recorded_form(requests, places.places, places.mentioned)
    if rules is not None:
        source["rules"] = rules
    if session.tools.setting == "replay" and session.records:
        source[TOOLS_RECORDED] = "recorded"  # the agent's own tools: recorded, replayed
    return source


def write_run_misses(session: Run) -> None:
    """The misses file beside the cassette (added to, when an earlier part of the suite
    wrote it)."""
    if session.cassette_path is not None:
        earlier = session.suite.misses if session.suite is not None else None
        write_misses(session.cassette_path, session.misses, session.redactor.text, earlier)


def run_summary(session: Run) -> Summary:
    """The summary of the run so far."""
    cost, unpriced = priced_total(session.live)
    index = session.index.built  # never built: no request came, nothing was used
    recordings = len(session.cassette.interactions)
    unused = list(range(recordings)) if index is None else index.unused()
    fork = session.fork
    counts = session.tools.counts
    return Summary(
        mode=session.mode,
        replayed=session.replayed,
        by_turn=session.by_turn,
        live=len(session.live),
        misses=[m.message for m in session.misses],
        keyless=sum(m.keyless for m in session.misses),
        spans_received=session.store.spans_received,
        unused=unused,
        hits=list(session.hits),
        cassette=str(session.cassette_path) if session.cassette_path else None,
        traces=str(session.user_traces) if session.user_traces else None,
        not_saved=session.unsaved + session.refused,
        write_errors=_write_errors(session),
        live_cost=cost if len(session.live) > unpriced else None,
        live_unpriced=unpriced,
        bypassed=session.bypass.bypassed(),
        forked_at=fork.at if fork is not None and fork.reached else None,
        tools_replayed=counts.replayed,
        tools_live=counts.live,
        tools_misses=counts.misses,
    )


def _write_errors(session: Run) -> list[str]:
    failure = session.store.failure
    if failure is None:
        fork = session.fork
        return [fork.problem] if fork is not None and fork.problem else []
    unsaved, saved = session.unsaved, len(session.live) - session.unsaved
    return [
        f"{failure}; recording stopped there: {unsaved} live call(s) answered but "
        f"not saved, {session.refused} refused; the {saved} saved before are kept"
    ]


def write_miss_span(
    store: TraceStore,
    matcher: Matcher,
    miss: ReplayMiss,
    call: tuple[str, str, Any],
    explained: CanonicalRequest | None,
    place: tuple[str | None, str | None, int],
    only: Only | None = None,
) -> None:
    """The span of a miss (a run that writes replayed spans): ``call`` is its provider,
    path and body; ``explained``, its request when the span is to carry its why (the
    differences to the nearest recording, among those ``only`` accepts)."""
    why = None
    if explained is not None:
        from otel_replay.matching.why import explain_against  # difflib: on a miss

        why = explain_against(matcher, explained, 1, only)
    from otel_replay.spans.miss import miss_to_trace_json

    doc = miss_to_trace_json(str(miss), miss.component, *call, why, place)
    store.append_traces(store.traces_line(doc))
