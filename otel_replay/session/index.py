"""The index of a run's cassette: its matcher, built once at first use (a gateway builds
it as it starts, on its own thread for the CLI, while the agent starts), and the live
rules' work on the recorded requests, done ahead of the calls when the run is in other
directories than the recording was."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from otel_replay.cassette.model import Cassette
from otel_replay.matching.matcher import Matcher
from otel_replay.matching.normalize import Normalizer, current_places

__all__ = ["CassetteIndex"]

_AHEAD_ITEMS = 2048  # recorded items a replay elsewhere normalises ahead, at most (see warming)


class CassetteIndex:
    """``normalizer``: the rules live requests match by; ``recorded_by``: the rules naming
    the recording's directories, when the cassette says where it was recorded."""

    def __init__(
        self, cassette: Cassette, normalizer: Normalizer, recorded_by: Normalizer | None
    ) -> None:
        self.cassette = cassette
        self.normalizer = normalizer
        self.recorded_by = recorded_by
        self.built: Matcher | None = None
        """The matcher once built (None: no request came yet, nothing was used)."""
        self._building = threading.Lock()

    def build(self) -> Matcher:
        """The matcher over the cassette's recordings, built once: a gateway builds it as
        it starts, and a first request that comes meanwhile waits for it."""
        with self._building:
            if self.built is None:
                recorded = self.cassette.interactions
                self.built = Matcher.for_exchanges(recorded, self.normalizer, self.recorded_by)
            return self.built

    def warming(self) -> Iterator[None]:
        """The live rules' work on the recorded requests, done ahead of the calls a
        recording at a time (a step each). A cassette recorded in other directories (on
        another machine, in another checkout) is indexed by rules naming those; the live
        requests are matched by rules naming this run's, whose memo of each item's
        normalised form starts empty, so a run's first call would walk every recorded item
        again. Here the run's calls find it done: they carry the recorded item objects
        (``gateway.bodies``), which the memo knows by identity. Nothing when the
        directories are the same (the memo is shared) or nothing is replayed; the first
        recordings only, of a cassette holding more items than ``_AHEAD_ITEMS``, so that
        the memo, which starts afresh when full, keeps them for the calls."""
        recorded_by = self.recorded_by  # None in record mode: its cassette starts empty
        if recorded_by is None or recorded_by.places == current_places():
            return
        normalize = self.normalizer.normalize
        items: set[int] = set()  # the recorded objects, alive with the cassette
        for exchange in self.cassette.interactions:
            request = exchange.request
            for part in (request.system, request.messages, request.tools):
                if isinstance(part, list):
                    items.update(map(id, part))
            if len(items) > _AHEAD_ITEMS:
                return
            normalize(request)
            yield
