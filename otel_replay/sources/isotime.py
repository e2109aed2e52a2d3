"""ISO 8601 times as the backends' JSON APIs write them, and back: what the sources that
answer times as text (Phoenix, Langfuse) share."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["iso", "ns_of"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ns_of(text: Any) -> int:
    """Nanoseconds since the epoch of an ISO 8601 time (UTC when naive); 0 for what is
    not one."""
    if not isinstance(text, str) or not text:
        return 0
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1_000


def iso(ns: int) -> str:
    """An ISO 8601 time in UTC, to the microsecond, of nanoseconds since the epoch."""
    return datetime.fromtimestamp(ns // 10**9, UTC).strftime("%Y-%m-%dT%H:%M:%S") + (
        f".{(ns % 10**9) // 1000:06d}+00:00"
    )
