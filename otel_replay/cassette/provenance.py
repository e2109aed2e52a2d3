"""A cassette's ``source``: where its recordings came from.

Free-form but written in one place: :func:`default_source` (the writing version and
time), :func:`run_source` for a cassette a recording run writes, :func:`build_source` for
one ``otel-replay build`` derives from trace files, and :func:`extended_source` when a run
appends to a cassette it loaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from otel_replay._version import __version__
from otel_replay.core.exchange import JSON
from otel_replay.redaction.names import redact_argv

__all__ = ["build_source", "default_source", "extended_source", "run_source"]


def _iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def default_source(**extra: JSON) -> dict[str, JSON]:
    """Provenance for a new cassette: the writing version and time, plus ``extra``."""
    source: dict[str, JSON] = {"otel_replay": __version__, "recorded_at": _iso_now()}
    source.update(extra)
    return source


def run_source(
    command: Sequence[str], traces: Path | None, redact: Callable[[str], str]
) -> dict[str, JSON]:
    """Provenance of a cassette a run records: the time, the version, the agent's command
    (each argument through ``redact``, and the value of an option named like a secret
    hidden) and the trace file the run kept, if any."""
    source: dict[str, JSON] = {"recorded_at": _utc_now(), "otel_replay": __version__}
    if command:
        source["command"] = list(redact_argv(command, redact))
    if traces:
        source["traces"] = [str(traces)]
    return source


def build_source(
    traces: Sequence[Path], skipped: int, selection: Mapping[str, JSON]
) -> dict[str, JSON]:
    """Provenance of a cassette built from trace files: the files, the build time, the
    records skipped as unreadable and the selection's non-empty criteria."""
    source = default_source(
        command="build",
        traces=[str(f) for f in traces],
        built_at=_iso_now(),
        skipped=skipped,
    )
    if any(selection.values()):
        source["selection"] = {k: v for k, v in selection.items() if v}
    return source


def extended_source(
    loaded: Mapping[str, JSON], fresh: Callable[[], dict[str, JSON]]
) -> dict[str, JSON]:
    """Provenance of a loaded cassette a run appended to: its own (or, when it had none,
    ``fresh()``), with ``updated_at``."""
    source = dict(loaded) or fresh()
    source["updated_at"] = _utc_now()
    return source
