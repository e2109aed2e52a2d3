"""Whether a run's requests name its working or home directory, learnt as they are
recorded (the rules a recording keeps depend on it)."""

from __future__ import annotations

from collections.abc import Sequence

from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.sources import current_places

__all__ = ["PlacesSeen"]

_MAX_CHARS = 64 * 1024 * 1024
"""Text of pieces remembered as naming no place, at most; then the memory starts afresh."""


def _written_as_is(place: str) -> bool:
    """Whether a JSON line holds ``place`` as its very bytes wherever a string holds it
    (no character of it is escaped: a Windows path's backslashes are)."""
    return place.isascii() and place.isprintable() and '"' not in place and "\\" not in place


class PlacesSeen:
    """``places``: this machine's working and home directories; ``mentioned``: whether
    a recorded request names one."""

    __slots__ = ("_as_is", "_bytes", "_chars", "_needles", "_without", "mentioned", "places")

    def __init__(self, places: tuple[str, str] | None = None) -> None:
        self.places = current_places() if places is None else places
        self.mentioned = False
        self._needles = [p for p in self.places if len(p) > 1]  # a root names nothing
        self._as_is = all(_written_as_is(p) for p in self.places)
        self._bytes = [p.encode() for p in self._needles] if self._as_is else []
        self._without: set[str] = set()  # pieces searched and found naming no place
        self._chars = 0

    def learn(self, request: CanonicalRequest, line: bytes | None, reused: Sequence[str]) -> None:
        """``line``: the request's span line, ``reused``: the pieces of it earlier lines
        stored. Together they hold the request, so a directory absent from both (the
        common case) costs a substring search, not a walk of the request. A piece is
        searched once: a conversation resends its earlier messages on every turn, and
        their pieces with them (the same string objects, whose hashes are kept)."""
        if self.mentioned:
            return
        places = self._needles
        if (
            line is None
            or not self._as_is
            or any(p in line for p in self._bytes)
            or self._named_in(reused, places)
        ):
            from otel_replay.matching.profiles import mentions

            self.mentioned = mentions(request, self.places)

    def _named_in(self, pieces: Sequence[str], places: list[str]) -> bool:
        without = self._without
        for text in pieces:
            if text in without:
                continue
            if any(p in text for p in places):
                return True
            if self._chars + len(text) > _MAX_CHARS:
                without.clear()
                self._chars = 0
            without.add(text)
            self._chars += len(text)
        return False
