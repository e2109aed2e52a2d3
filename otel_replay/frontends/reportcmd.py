"""``otel-replay report`` (a run's spans as one HTML page) and ``otel-replay diff`` (two
runs' trajectories aligned)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from otel_replay.core.errors import ConfigError, TraceFormatError
from otel_replay.core.gcpause import paused_gc
from otel_replay.reports.formats import REPORT_FORMATS

__all__ = ["diff_command", "report_command"]

DIFF_FORMATS = ("text", "md", "html")


def _write(path: Path, text: str) -> None:
    """Written redacted: a trace file from elsewhere (a production Collector's) may hold
    secrets the gateway's trace store would have replaced."""
    from otel_replay.redaction.redact import Redactor
    from otel_replay.reports.formats import write_text

    write_text(path, text, Redactor.from_environment().text)


def report_command(traces: Sequence[Path], output: Path) -> int:
    """Write the report of the run the trace files hold; exit 1 when they hold no span."""
    from otel_replay.pipeline.build import expand_paths
    from otel_replay.reports.page import run_markdown, run_page
    from otel_replay.reports.spantree import load_spans

    kind = REPORT_FORMATS.get(output.suffix.lower())
    if kind is None:
        raise ConfigError(f"{output}: a report is .html or .md")
    skipped = 0

    def on_error(exc: TraceFormatError) -> None:
        nonlocal skipped
        skipped += 1
        print(f"otel-replay report: skipped: {exc}", file=sys.stderr)

    # the spans and the page hold no garbage cycles: full collections during the read
    # only walk everything read so far, so a large run's report grew slower per span
    with paused_gc():
        nodes = load_spans(expand_paths(list(traces)), on_error=on_error)
        if not nodes:
            print(f"otel-replay report: no span in {', '.join(map(str, traces))}", file=sys.stderr)
            return 1
        title = ", ".join(p.name for p in traces)
        text = run_page(nodes, title=title) if kind == "html" else run_markdown(nodes, None, None)
    _write(output, text)
    print(f"otel-replay report: {len(nodes)} spans → {output}", file=sys.stderr)
    return 0


def diff_command(base: Path, new: Path, fmt: str | None, output: Path | None) -> int:
    """Print (or write) the diff of two runs; 0 when their trajectories are equal, else 1."""
    from otel_replay.reports.diff import diff_trajectories
    from otel_replay.reports.difftext import render_md, render_text
    from otel_replay.reports.page import diff_page
    from otel_replay.reports.trajectory import load_trajectory

    if fmt is None:
        by_ext = {".md": "md", ".html": "html", ".htm": "html"}
        fmt = by_ext.get(output.suffix.lower(), "text") if output is not None else "text"
    diff = diff_trajectories(load_trajectory(base), load_trajectory(new))
    render = {"text": render_text, "md": render_md, "html": diff_page}[fmt]
    text = render(diff)
    if output is None:
        from otel_replay.redaction.redact import Redactor

        sys.stdout.write(Redactor.from_environment().text(text))
    else:
        _write(output, text)
        print(f"otel-replay diff: {diff.headline()} → {output}", file=sys.stderr)
    return 0 if diff.equal else 1
