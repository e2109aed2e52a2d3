"""A report file's format, chosen by its extension: ``.json`` (the JSON run report, as
always), ``.html`` (the run's span tree and timeline, with its summary) or ``.md`` (the
summary, the misses and the trajectory, for a pull-request comment)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from otel_replay.core.errors import ConfigError
from otel_replay.reports import write_json
from otel_replay.reports.misses import Miss
from otel_replay.reports.run import Block, Summary, run_report, suite_report

__all__ = ["REPORT_FORMATS", "SPAN_REPORTS", "report_format", "write_run_report", "write_suite"]

REPORT_FORMATS = {".json": "json", ".html": "html", ".htm": "html", ".md": "md"}
SPAN_REPORTS = frozenset(ext for ext, kind in REPORT_FORMATS.items() if kind != "json")
"""The extensions whose report shows the run's spans."""


def report_format(path: Path) -> str:
    """``html`` or ``md`` for a report path ending so; ``json`` for any other ending."""
    return REPORT_FORMATS.get(path.suffix.lower(), "json")


def _write_text(path: Path, text: str) -> None:
    from otel_replay.cassette.model import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_run_report(
    path: Path, summary: Summary, misses: Sequence[Miss], traces: Path | None
) -> None:
    """One run's report at ``path``, in the format its extension names; ``traces``: the
    run's trace file (its spans are shown by the HTML and Markdown forms)."""
    kind = report_format(path)
    if kind == "json":
        write_json(path, run_report(summary, misses))
        return
    from otel_replay.reports.page import run_markdown, run_page
    from otel_replay.reports.spantree import load_spans

    nodes = load_spans([traces], on_error=lambda _exc: None) if traces is not None else []
    doc = run_report(summary, misses)
    text = run_page(nodes, doc) if kind == "html" else run_markdown(nodes, doc, traces)
    _write_text(path, text)


def write_suite(
    path: Path, totals: Summary, blocks: Sequence[Block], blocked: Sequence[str]
) -> None:
    """A test session's report at ``path``, in the format its extension names."""
    kind = report_format(path)
    doc: dict[str, Any] = suite_report(totals, blocks, blocked)
    if kind == "json":
        write_json(path, doc)
        return
    from otel_replay.reports.page import suite_markdown, suite_page

    _write_text(path, suite_page(doc) if kind == "html" else suite_markdown(doc))
