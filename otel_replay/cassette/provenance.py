"""A cassette's ``source``: where its recordings came from.

Free-form but written in one place: :func:`default_source` (the writing version and
time), :func:`run_source` for a cassette a recording run writes, :func:`build_source` for
one ``otel-replay build`` derives from trace files, and :func:`extended_source` when a run
appends to a cassette it loaded. :func:`recorded_run` reads back what ``otel-replay
refresh`` needs to record a run again: the command, the directory it ran in and the
upstreams it was pointed at.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from otel_replay._version import __version__
from otel_replay.core.exchange import JSON
from otel_replay.redaction.keyed import FINGERPRINT_FIELD, PlaceholderKey
from otel_replay.redaction.names import redact_argv

__all__ = [
    "RecordedRun",
    "build_source",
    "default_source",
    "extended_source",
    "recorded_run",
    "run_directory",
    "run_source",
]


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
    command: Sequence[str],
    traces: Path | None,
    redact: Callable[[str], str],
    *,
    cwd: str | None = None,
    upstreams: Mapping[str, str] | None = None,
    key: PlaceholderKey | None = None,
) -> dict[str, JSON]:
    """Provenance of a cassette a run records: the time, the version, the agent's command
    (each argument through ``redact``, and the value of an option named like a secret
    hidden) and the trace file the run kept, if any. With a command, also where it ran
    (``cwd``, as :func:`run_directory` gives it) and the upstreams the run was pointed at
    by name (``upstreams``, the ``--upstream-NAME`` / ``--upstream NAME=URL`` options).
    ``key``: the placeholders' key, whose fingerprint (never the key) is kept."""
    source: dict[str, JSON] = {"recorded_at": _utc_now(), "otel_replay": __version__}
    if key is not None:
        source[FINGERPRINT_FIELD] = key.fingerprint
    if command:
        source["command"] = list(redact_argv(command, redact, key))
        if cwd is not None:
            source["cwd"] = cwd
        if upstreams:
            source["upstreams"] = {name: redact(url) for name, url in sorted(upstreams.items())}
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


def run_directory(cassette: Path, cwd: str | None = None) -> str:
    """The directory a recording ran in, as a cassette keeps it: relative to the
    cassette's folder (``..`` for a cassette in ``cassettes/`` recorded from the project's
    root), so a checkout elsewhere finds it again; absolute where no relative path leads
    there (another drive)."""
    here = os.path.abspath(cwd if cwd is not None else os.getcwd())
    try:
        return Path(os.path.relpath(here, os.path.abspath(cassette.parent))).as_posix()
    except ValueError:
        return here


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """What a recording run left in its cassette's ``source`` to be run again: the
    agent's command, the directory it ran in (None for a cassette from before it was
    kept) and the upstreams named on the recording's command line."""

    command: list[str]
    cwd: Path | None = None
    upstreams: dict[str, str] = field(default_factory=dict)


def recorded_run(source: Mapping[str, JSON], cassette: Path) -> RecordedRun | None:
    """The run a cassette's ``source`` records, or None when it holds no command (a
    cassette ``build`` derived from traces says ``"command": "build"``). ``cwd`` is
    resolved against the folder of ``cassette``."""
    command = source.get("command")
    if not isinstance(command, list) or not command:
        return None
    if not all(isinstance(arg, str) for arg in command):
        return None
    where = source.get("cwd")
    cwd = (cassette.parent / where).resolve() if isinstance(where, str) and where else None
    named = source.get("upstreams")
    upstreams = (
        {str(k): v for k, v in named.items() if isinstance(v, str)}
        if isinstance(named, dict)
        else {}
    )
    return RecordedRun([str(arg) for arg in command], cwd, upstreams)
