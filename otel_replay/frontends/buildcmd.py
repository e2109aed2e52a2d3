"""``otel-replay build`` and ``otel-replay doctor``: trace files (or a tracing backend,
``--from``) in; a cassette out, or the census of what a build would replay.

Both print the same summary: per source (instrumentation and version), the model calls
seen and how many replay exactly, semantically or not at all, with the reason and the
setting that fixes it. ``build`` exits 1 when it found nothing to replay: model calls it
can replay none of, or no model call at all (an agent's own telemetry), and then writes
no cassette; ``doctor`` exits 1 when some call cannot be replayed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ConfigError

if TYPE_CHECKING:
    from otel_replay.frontends.emittest import Emission
    from otel_replay.pipeline.build import BuildReport, Origin
    from otel_replay.readers.census import Census
    from otel_replay.sources import Pull

__all__ = ["add_selection", "build_command", "doctor_command", "output_path"]


def output_path(text: str) -> Path:
    """``-o``: a cassette, or with a trailing ``/`` a directory (made when missing) that
    gets one cassette per trace."""
    path = Path(text)
    if text.endswith(("/", os.sep)):
        path.mkdir(parents=True, exist_ok=True)
    return path


def add_selection(parser: argparse.ArgumentParser) -> None:
    """The options that choose spans, shared by ``build`` and ``doctor``."""
    parser.add_argument(
        "--from",
        dest="source",
        metavar="SOURCE",
        help="read from a tracing backend instead of files: phoenix+http://HOST:PORT[/PROJECT], "
        "jaeger+http://HOST:PORT, tempo+http://HOST:PORT, "
        "clickhouse+http://HOST:PORT[/DATABASE][?table=otel_traces]",
    )
    parser.add_argument("--trace-id", action="append", default=[], help="keep only this trace")
    parser.add_argument("--service", action="append", default=[], help="keep only service.name")
    parser.add_argument("--since", help="keep spans starting at or after (ISO-8601)")
    parser.add_argument("--until", help="keep spans starting before (ISO-8601)")


def _selection(args: argparse.Namespace) -> dict[str, Any]:
    from otel_replay.pipeline.build import parse_time

    return {
        "trace_ids": set(args.trace_id) or None,
        "services": set(args.service) or None,
        "since_ns": parse_time(args.since) if args.since else None,
        "until_ns": parse_time(args.until) if args.until else None,
    }


def _origin(args: argparse.Namespace) -> Origin:
    """The trace files, or the backend pull ``--from`` names."""
    if bool(args.traces) == bool(args.source):
        raise ConfigError("give trace files or --from SOURCE (one of the two)")
    if not args.source:
        paths: list[Path] = args.traces
        return paths
    return _pull(args)


def _pull(args: argparse.Namespace) -> Pull:
    from otel_replay.readers import Selection
    from otel_replay.sources import open_source

    chosen = _selection(args)
    ids = chosen["trace_ids"]
    selection = Selection(
        trace_ids=frozenset(t.strip().lower() for t in ids) if ids else None,
        services=frozenset(chosen["services"]) if chosen["services"] else None,
        since_ns=chosen["since_ns"],
        until_ns=chosen["until_ns"],
    )
    return open_source(args.source, selection)


def _say(command: str) -> Callable[[Exception], None]:
    def on_error(exc: Exception) -> None:
        print(f"otel-replay {command}: skipped: {exc}", file=sys.stderr)

    return on_error


def _summary(command: str, census: Census) -> None:
    for line in census.lines():
        print(f"otel-replay {command}: {line}", file=sys.stderr)


def build_command(args: argparse.Namespace) -> int:
    from otel_replay.frontends.emittest import emission
    from otel_replay.pipeline.build import build_file

    emit = emission(args)  # with --emit-test: the cassette is put in place with the test
    origin = _origin(args)
    if args.output.is_dir():
        if not args.source:
            raise ConfigError(
                f"-o {args.output}: a directory; a build from files writes one cassette"
            )
        if emit is not None:
            raise ConfigError(
                f"-o {args.output}: a directory holds a cassette per trace; --emit-test writes"
                " the test of one cassette: name a file"
            )
        return _per_trace(args, _pull(args))
    output = args.output if emit is None else emit.staged
    options = {} if emit is None else emit.build_options()
    progress = None if args.quiet or not sys.stderr.isatty() else _progress_bar()
    report = build_file(
        origin,
        output,
        progress=progress,
        on_error=_say("build"),
        keep_empty=False,
        **_selection(args),
        **options,
    )
    if progress is not None:
        print(file=sys.stderr)
    return _built(args.output, report, emit)


def _per_trace(args: argparse.Namespace, pull: Pull) -> int:
    """``-o DIR/``: one cassette a trace, ``DIR/<trace id>.json``."""
    from otel_replay.pipeline.build import build_file

    chosen = _selection(args)
    worst, count = 0, 0
    for trace_id, spans in pull.groups():
        output = args.output / f"{trace_id}.json"
        selection = {**chosen, "trace_ids": {trace_id}}
        report = build_file(spans, output, on_error=_say("build"), keep_empty=False, **selection)
        worst = max(worst, _built(output, report))
        count += 1
    if not count:
        raise pull.no_spans()
    return worst


def _built(output: Path, report: BuildReport, emit: Emission | None = None) -> int:
    _summary("build", report.census)
    for note in report.notes:  # Claude Code's own account of the calls it skipped
        print(f"otel-replay build: {note}", file=sys.stderr)
    bad = report.skipped
    bad_records = f"{bad} bad record{'s' if bad != 1 else ''}"
    if report.unreplayable:
        calls = report.census.calls
        print(
            f"otel-replay build: saw {calls} model call{'s' if calls != 1 else ''} and can"
            " replay none of them (reasons above); no cassette written",
            file=sys.stderr,
        )
        return 1
    if not report.written and not bad:
        print("otel-replay build: nothing to replay; no cassette written", file=sys.stderr)
        return 1
    if not report.written:
        print(
            f"otel-replay build: nothing usable in {bad_records}; no cassette written",
            file=sys.stderr,
        )
        return 1
    if emit is not None:
        emit.finish(report.origin)
    n = report.interactions
    print(
        f"otel-replay build: {n} interaction{'s' if n != 1 else ''} → {output}"
        + (f" ({bad_records} skipped)" if bad else ""),
        file=sys.stderr,
    )
    return 0


def doctor_command(args: argparse.Namespace) -> int:
    from otel_replay.pipeline.build import survey

    census = survey(_origin(args), on_error=_say("doctor"), **_selection(args))
    if args.json:
        print(json.dumps(census.to_json(), indent=2, ensure_ascii=False))
    else:
        for line in census.lines():
            print(line)
    return 1 if census.replayable < census.calls else 0


def _progress_bar() -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        if not total:  # a backend's answer: its size is not known ahead
            print(
                f"\rotel-replay build: {done / 1e6:.1f} MB read",
                end="",
                file=sys.stderr,
                flush=True,
            )
            return
        pct = 100.0 * done / total if total else 100.0
        print(
            f"\rotel-replay build: {done / 1e6:.1f}/{total / 1e6:.1f} MB ({pct:.0f}%)",
            end="",
            file=sys.stderr,
            flush=True,
        )

    return show
