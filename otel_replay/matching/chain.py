"""A continuation matched to the recording it continues (the Responses API's
``previous_response_id``, over HTTP and over its WebSocket mode alike).

A replay answers with the recorded responses, ids and all, so a continuation names the
id a recording's answer carried: that recording is the response it continues. It then
matches only a recording that continued the same one, whose own recorded
``previous_response_id`` is that id, and not the continuation of another response that
is equal to it up to the id's placeholder (two conversations continued with the same
words: ``<id:1>`` stands for either). An id no recorded answer carries (not one a replay
answered with, nor an answer recorded live in this run) matches only a recording that
named the same id (a conversation begun before the recording); otherwise it is a miss
naming ``previous_response_id``. The normal form keeps the placeholder, so two runs' recordings
still compare equal (``diff``, ``why``): the chain is a condition of replay alone. A
recording rebuilt from a trace that did not keep every parameter, and is silent on what
it continued, is not held to it (the lossy-source rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import CanonicalRequest, Exchange
from otel_replay.providers.openai_chain import CONTINUES, continued, response_id

if TYPE_CHECKING:  # the matcher is loaded with the cassette's index, not at import
    from otel_replay.matching.matcher import Only

__all__ = ["Chain"]


class Recordings(Protocol):
    """A cassette's recordings by index (``cassette.recordings.Recordings``)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Exchange: ...

    def request(self, index: int) -> CanonicalRequest: ...


class Chain:
    """The responses ``recordings`` answered with, by id (recordings appended later, an
    ``auto`` run's live calls, are read as they come)."""

    def __init__(self, recordings: Recordings) -> None:
        self._recordings = recordings
        self._answered: dict[str, int] = {}
        self._read = 0
        self._lossy = False  # a recording rebuilt from a trace that kept not every param

    def only(self, request: CanonicalRequest) -> Only | None:
        """What restricts ``request``'s match to the continuations of what it continues;
        None when it continues nothing. Raises ``ReplayMiss`` when the id it names is no
        recorded answer's."""
        wanted = continued(request)
        if wanted is None:
            return None
        head = self.answered(wanted)
        unknown = ReplayMiss(
            f"{CONTINUES} {wanted} is the id of no recorded response (the replay never"
            " answered with it), so what it continues is unknown",
            component=CONTINUES,
        )
        from otel_replay.matching.matcher import Only

        recordings = self._recordings

        def accept(index: int) -> bool:
            recorded = recordings.request(index)
            found = continued(recorded)
            if found is None and "params" not in recorded.known:
                return True  # a lossy source's, silent on it: not compared (as params)
            # an id no recording answered with is one from before the recording (a
            # conversation begun elsewhere): matched only by a recording that named it too
            return found == wanted

        refused = unknown
        if head is not None:
            refused = ReplayMiss(
                f"{CONTINUES} {wanted} continues recording {head}'s response; the"
                " recordings equal to this request continue other responses",
                component=CONTINUES,
            )
        return Only(accept, refused)

    def alike(self, one: int, other: int) -> bool:
        """Whether recordings ``one`` and ``other`` continue the same response (or none)."""
        request = self._recordings.request
        return continued(request(one)) == continued(request(other))

    def answered(self, response: str) -> int | None:
        """The recording whose answer carried the id ``response``, or None."""
        recordings, answered = self._recordings, self._answered
        while self._read < len(recordings):
            exchange = recordings[self._read]
            found = response_id(exchange)
            if found is not None:
                answered.setdefault(found, self._read)
            self._lossy = self._lossy or "params" not in exchange.request.known
            self._read += 1
        return answered.get(response)
