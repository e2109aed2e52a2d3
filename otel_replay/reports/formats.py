"""A report file's format, chosen by its extension: ``.json`` (the JSON run report, as
always), ``.html`` (the run's span tree and timeline, with its summary) or ``.md`` (the
summary, the misses and the trajectory, for a pull-request comment)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ConfigError, OtelReplayError
from otel_replay.core.gcpause import paused_gc
from otel_replay.reports import write_json
from otel_replay.reports.misses import Miss
from otel_replay.reports.run import Block, Summary, run_report, suite_report

if TYPE_CHECKING:
    from otel_replay.reports.diff import TrajectoryDiff

__all__ = [
    "REPORT_FORMATS",
    "SPAN_REPORTS",
    "block_diffs",
    "report_format",
    "write_run_report",
    "write_suite",
    "write_text",
]

REPORT_FORMATS = {".json": "json", ".html": "html", ".htm": "html", ".md": "md"}
SPAN_REPORTS = frozenset(ext for ext, kind in REPORT_FORMATS.items() if kind != "json")
"""The extensions whose report shows the run's spans."""


def report_format(path: Path) -> str:
    """``html`` or ``md`` for a report path ending so; ``json`` for any other ending."""
    return REPORT_FORMATS.get(path.suffix.lower(), "json")


def _unchanged(text: str) -> str:
    return text


def write_text(path: Path, text: str, redact: Callable[[str], str] = _unchanged) -> None:
    """``text`` through ``redact``, written crash-safely to ``path``; a ConfigError
    naming the file when it cannot be written."""
    from otel_replay.cassette.model import write_atomic

    try:
        write_atomic(path, redact(text))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_run_report(
    path: Path,
    summary: Summary,
    misses: Sequence[Miss],
    traces: Path | None,
    redact: Callable[[str], str] = _unchanged,
) -> None:
    """One run's report at ``path``, in the format its extension names, its text through
    ``redact``; ``traces``: the run's trace file (the HTML and Markdown forms show its
    spans)."""
    kind = report_format(path)
    if kind == "json":
        write_json(path, run_report(summary, misses), redact)
        return
    from otel_replay.reports.page import run_markdown, run_page
    from otel_replay.reports.spantree import load_spans

    with paused_gc():  # as ``otel-replay report``: the spans hold no garbage cycles
        nodes = load_spans([traces], on_error=lambda _exc: None) if traces is not None else []
        doc = run_report(summary, misses)
        text = run_page(nodes, doc) if kind == "html" else run_markdown(nodes, doc, traces)
    write_text(path, text, redact)


def write_suite(
    path: Path,
    totals: Summary,
    blocks: Sequence[Block],
    blocked: Sequence[str],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """A test session's report at ``path``, in the format its extension names; ``extra``
    adds top-level entries (the cassettes the run wrote, its unused recordings)."""
    kind = report_format(path)
    doc: dict[str, Any] = {**suite_report(totals, blocks, blocked), **(extra or {})}
    if kind == "json":
        write_json(path, doc)
        return
    from otel_replay.reports.page import suite_markdown, suite_page

    diffs = block_diffs(blocks)
    write_text(path, suite_page(doc, diffs) if kind == "html" else suite_markdown(doc, diffs))


def block_diffs(blocks: Sequence[Block]) -> dict[int, TrajectoryDiff]:
    """For each block that missed (by its index), its run against its recording: the
    recordings it replayed in order, then its misses (a strict run stops at its first)."""
    from otel_replay.cassette.model import load
    from otel_replay.reports.diff import diff_trajectories
    from otel_replay.reports.trajectory import Step, trajectory_of

    out: dict[int, TrajectoryDiff] = {}
    for i, block in enumerate(blocks):
        summary = block.summary
        if not summary.misses:
            continue
        try:
            recorded = load(block.cassette).interactions
        except OtelReplayError:  # no recording to compare with: the misses say it all
            continue
        base = trajectory_of([(ex, None) for ex in recorded], source=block.cassette)
        ran = [(recorded[h], None) for h in summary.hits if 0 <= h < len(recorded)]
        new = trajectory_of(ran, source=block.nodeid)
        new.steps += [Step("miss", message, (), state="miss") for message in summary.misses]
        out[i] = diff_trajectories(base, new)
    return out
