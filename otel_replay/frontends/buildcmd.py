"""``otel-replay build`` and ``otel-replay doctor``: trace files in; a cassette out, or
the census of what a build would replay.

Both print the same summary: per source (instrumentation and version), the model calls
seen and how many replay exactly, semantically or not at all, with the reason and the
setting that fixes it. ``build`` exits 1 when it found nothing to replay: model calls it
can replay none of, or no model call at all (an agent's own telemetry), and then writes
no cassette; ``doctor`` exits 1 when some call cannot be replayed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_replay.readers.census import Census

__all__ = ["add_selection", "build_command", "doctor_command"]


def add_selection(parser: argparse.ArgumentParser) -> None:
    """The options that choose spans, shared by ``build`` and ``doctor``."""
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


def _say(command: str) -> Callable[[Exception], None]:
    def on_error(exc: Exception) -> None:
        print(f"otel-replay {command}: skipped: {exc}", file=sys.stderr)

    return on_error


def _summary(command: str, census: Census) -> None:
    for line in census.lines():
        print(f"otel-replay {command}: {line}", file=sys.stderr)


def build_command(args: argparse.Namespace) -> int:
    from otel_replay.pipeline.build import build_file

    progress = None if args.quiet or not sys.stderr.isatty() else _progress_bar()
    report = build_file(
        args.traces,
        args.output,
        progress=progress,
        on_error=_say("build"),
        keep_empty=False,
        **_selection(args),
    )
    if progress is not None:
        print(file=sys.stderr)
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
    n = report.interactions
    print(
        f"otel-replay build: {n} interaction{'s' if n != 1 else ''} → {args.output}"
        + (f" ({bad_records} skipped)" if bad else ""),
        file=sys.stderr,
    )
    return 0


def doctor_command(args: argparse.Namespace) -> int:
    from otel_replay.pipeline.build import survey

    census = survey(args.traces, on_error=_say("doctor"), **_selection(args))
    if args.json:
        print(json.dumps(census.to_json(), indent=2, ensure_ascii=False))
    else:
        for line in census.lines():
            print(line)
    return 1 if census.replayable < census.calls else 0


def _progress_bar() -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 100.0
        print(
            f"\rotel-replay build: {done / 1e6:.1f}/{total / 1e6:.1f} MB ({pct:.0f}%)",
            end="",
            file=sys.stderr,
            flush=True,
        )

    return show
