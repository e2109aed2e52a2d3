"""The index of a run's cassette: the rules it matches by and its matcher, each built once
at first use (a gateway builds them as it starts, on its own thread for the CLI, while the
agent starts: the built-in tables are parsed and compiled then, not before the gateway
listens), and the live rules' work on the recorded requests, done ahead of the calls when
the run is in other directories than the recording was."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from otel_replay.cassette.model import Cassette
from otel_replay.matching.sources import RuleSources, current_places

if TYPE_CHECKING:  # the matching engine is imported when the index is built
    from otel_replay.matching.matcher import Matcher
    from otel_replay.matching.normalize import Normalizer

__all__ = ["CassetteIndex"]

_AHEAD_ITEMS = 2048  # recorded items a replay elsewhere normalises ahead, at most (see warming)


class CassetteIndex:
    """The cassette ``name``'s matcher under ``sources`` (over the rules recorded in it)."""

    def __init__(self, cassette: Cassette, sources: RuleSources, name: str) -> None:
        self.cassette = cassette
        self.sources = sources
        self.name = name
        self.built: Matcher | None = None
        """The matcher once built (None: no request came yet, nothing was used)."""
        self._rules: tuple[Normalizer, Normalizer | None] | None = None
        self._building = threading.RLock()

    def rules(self) -> tuple[Normalizer, Normalizer | None]:
        """The rules live requests match by, and, when the cassette says where it was
        recorded, the rules naming those directories (``cassette_rules``)."""
        if self._rules is None:
            with self._building:
                if self._rules is None:
                    from otel_replay.matching.session_rules import cassette_rules

                    self._rules = cassette_rules(self.sources, self.cassette.source, self.name)
        return self._rules

    def build(self) -> Matcher:
        """The matcher over the cassette's recordings, built once: a gateway builds it as
        it starts, and a first request that comes meanwhile waits for it."""
        with self._building:
            if self.built is None:
                from otel_replay.matching.matcher import Matcher

                normalizer, recorded_by = self.rules()
                recorded = self.cassette.interactions
                self.built = Matcher.for_exchanges(recorded, normalizer, recorded_by)
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
        normalizer, recorded_by = self.rules()  # None in record mode: its cassette starts empty
        if recorded_by is None or recorded_by.places == current_places():
            return
        normalize = normalizer.normalize
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
