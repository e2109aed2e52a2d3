"""The gateway's limits on untrusted input, in one place: how long a request body may take
to arrive, how large an upstream answer may inflate to, how large one streamed event may be,
and how deeply a request body may nest. Over a limit is a clear one-line error."""

from __future__ import annotations

from dataclasses import dataclass

from otel_replay.core.limits import MAX_BODY_DEPTH

__all__ = ["Limits"]

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    body_timeout: float = 30.0
    """Seconds a request body may take to arrive in full; then 408 and the connection closes."""

    max_response_bytes: int = 256 * MIB
    """An upstream answer's size after decompression; beyond it the agent gets a 502."""

    max_event_bytes: int = 16 * MIB
    """One streamed event's size; beyond it the stream ends with an error."""

    max_depth: int = MAX_BODY_DEPTH
    """How deeply a request body's JSON may nest; deeper is a 400."""
