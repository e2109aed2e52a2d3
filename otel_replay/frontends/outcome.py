"""How a finished run ends its block: its first miss raised as ``ReplayMiss``, else a
failure to write what it recorded, or a strict run's bypassed model calls. The Python
API's blocks and the in-process transports end so."""

from __future__ import annotations

from otel_replay.core.errors import OtelReplayError, ReplayMiss
from otel_replay.session.session import Summary

__all__ = ["raise_for_misses"]


def raise_for_misses(summary: Summary, *, cause: BaseException | None = None) -> None:
    """Raise the first miss of a finished run as :class:`ReplayMiss` (from ``cause``);
    else a failure to write what the run recorded, or in strict mode a model call that
    bypassed the gateway, as :class:`OtelReplayError`."""
    if not summary.misses:
        if summary.write_errors:
            raise OtelReplayError(f"otel-replay: {summary.write_errors[0]}") from cause
        if summary.failed and summary.bypassed:
            n, first = len(summary.bypassed), summary.bypassed[0]
            raise OtelReplayError(
                f"otel-replay: {n} model call(s) bypassed the gateway, first: {first}"
            ) from cause
        return
    first = summary.misses[0]
    prefix = "replay miss: "
    reason = first[len(prefix) :] if first.startswith(prefix) else first
    raise ReplayMiss(reason) from cause
