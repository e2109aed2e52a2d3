"""The trace file a run writes its spans to: the one the user named (``--traces``), or,
when the run needs one and none was named, a temporary file removed at its end (kept and
named instead when the cassette it was to become could not be written); and the
exchanges derived from it at the end, through the same code as ``otel-replay build``."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from otel_replay.core.exchange import Exchange
from otel_replay.core.gcpause import paused_gc
from otel_replay.otlp.store import TraceStore, sibling
from otel_replay.redaction.redact import Redactor
from otel_replay.redaction.trace_line import JOINT_CHARS

__all__ = ["RunTraceFile"]

log = logging.getLogger("otel_replay")
_GC_PAUSE_EXCHANGES = 1_000
"""The cyclic GC is paused while a run this long is built: building allocates no cycles,
and full collections over the run's exchanges made each one slower."""


class RunTraceFile:
    """``user``: the file named by the user; ``needed``: whether the run writes spans
    even when none was named (it records, or its report shows spans)."""

    def __init__(self, user: Path | None, needed: bool) -> None:
        self.user = user
        self._temp: Path | None = None
        if user is None and needed:
            fd, name = tempfile.mkstemp(prefix="otel-replay-", suffix=".jsonl")
            os.close(fd)
            self._temp = Path(name)

    def store(self, redactor: Redactor) -> TraceStore:
        """The store the run's spans go through, each line redacted by ``redactor``."""
        key = redactor.key
        if self.path is None:
            return TraceStore(
                None, redact=redactor.json, redact_text=redactor.text, placeholder_key=key
            )
        return TraceStore.beside(
            self.path,
            redactor.json,
            redactor.text,
            by_parts=redactor.values_avoid(JOINT_CHARS),
            might_hold=redactor.might_hold_secret,
            placeholder_key=key,
        )

    @property
    def path(self) -> Path | None:
        """The file spans are written to (None: the run keeps no spans)."""
        return self.user or self._temp

    def remove(self, keep: bool = False) -> None:
        """Remove the temporary file and its logs and metrics siblings (``keep``: the
        trace file itself stays); the user's file is never touched."""
        temp, self._temp = self._temp, None
        if temp is not None:
            for path in (sibling(temp, "logs"), sibling(temp, "metrics")):
                path.unlink(missing_ok=True)
            if not keep:
                temp.unlink(missing_ok=True)

    def keep(self, recorded: bool) -> None:
        """The cassette could not be written: the temporary file, which holds the run's
        ``recorded`` exchanges, is kept and named rather than removed."""
        temp = self._temp
        if temp is None or not recorded:
            return
        self.remove(keep=True)
        log.error(
            "otel-replay: this run's recordings are kept in %s; "
            "`otel-replay build %s -o CASSETTE` makes a cassette of them",
            temp,
            temp,
        )

    def derive(self, trace_ids: set[str], exchanges: int) -> list[Exchange]:
        """The exchanges of the traces ``trace_ids`` (a run of ``exchanges``)."""
        from otel_replay.pipeline.build import build

        with paused_gc(exchanges > _GC_PAUSE_EXCHANGES):
            built = build([self._built()], trace_ids=set(trace_ids))
        return list(built.interactions)

    def derive_into(
        self, path: Path, trace_ids: set[str], exchanges: int, source: dict[str, Any]
    ) -> None:
        """Record mode: the cassette at ``path`` written straight from the traces
        ``trace_ids``, as ``otel-replay build`` writes one, holding a few integers per
        exchange."""
        from otel_replay.pipeline.build import build_file

        trace_file = self._built()
        with paused_gc(exchanges > _GC_PAUSE_EXCHANGES):
            report = build_file([trace_file], path, trace_ids=set(trace_ids), source=source)
        if not report.written:
            log.warning(
                "otel-replay: %d unreadable records and no exchange in %s; kept %s",
                report.skipped,
                trace_file,
                path,
            )

    def _built(self) -> Path:
        path = self.path
        assert path is not None, "a run that derives exchanges writes a trace file"
        return path
