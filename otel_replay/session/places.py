"""Whether a run's requests name its working or home directory, learnt as they are
recorded (the rules a recording keeps depend on it)."""

from __future__ import annotations

from collections.abc import Sequence

from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.normalize import current_places
from otel_replay.matching.profiles import mentions

__all__ = ["PlacesSeen"]


class PlacesSeen:
    """``places``: this machine's working and home directories; ``mentioned``: whether
    a recorded request names one."""

    __slots__ = ("mentioned", "places")

    def __init__(self) -> None:
        self.places = current_places()
        self.mentioned = False

    def learn(self, request: CanonicalRequest, line: bytes | None, reused: Sequence[str]) -> None:
        """``line``: the request's span line, ``reused``: the pieces of it earlier lines
        stored. Together they hold the request, so a directory absent from both (the
        common case) costs a substring search, not a walk of the request."""
        if self.mentioned:
            return
        places = [p for p in self.places if len(p) > 1]
        if (
            line is None
            or not all(p.isascii() for p in self.places)
            or any(p.encode() in line for p in places)
            or any(p in text for text in reused for p in places)
        ):
            self.mentioned = mentions(request, self.places)
