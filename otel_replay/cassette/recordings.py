"""A read-only view of a loaded cassette's recordings, by index.

Replay code asks this view for what it needs of recording ``i`` — the request body as
sent, the response to play back, the canonical request — rather than indexing the
cassette's list, so the way a format stores a recording stays the cassette's business.
The view follows the cassette: recordings appended to it later are seen too.
"""

from __future__ import annotations

from collections.abc import Iterator

from otel_replay.cassette.format import Cassette
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, Response

__all__ = ["Recordings"]


class Recordings:
    """The recordings of one cassette, in recording order."""

    __slots__ = ("_cassette",)

    def __init__(self, cassette: Cassette) -> None:
        self._cassette = cassette

    def __len__(self) -> int:
        return len(self._cassette.interactions)

    def __getitem__(self, index: int) -> Exchange:
        """Recording ``index`` as a whole exchange (IndexError past the end)."""
        return self._cassette.interactions[index]

    def __iter__(self) -> Iterator[Exchange]:
        return iter(self._cassette.interactions)

    def request_body(self, index: int) -> JSON:
        """The exact (redacted) JSON body recording ``index`` was sent with, or None when
        the recording does not know it."""
        return self[index].raw_request

    def response(self, index: int) -> Response:
        """What recording ``index`` answered: the response to play back."""
        return self[index].response

    def request(self, index: int) -> CanonicalRequest:
        """Recording ``index``'s canonical request (what matching compares)."""
        return self[index].request

    def requests(self) -> list[CanonicalRequest]:
        """Every recording's canonical request, in order."""
        return [ex.request for ex in self._cassette.interactions]
