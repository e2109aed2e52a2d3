"""Matching live requests against recorded ones, component by component.

One pure function per component (``endpoint``, ``model``, ``system``, ``messages``,
``tools``, ``params``) compares a recorded and a live request, both normalised, and
returns None or the reason they differ, e.g. ``system prompt changed (hash a1b2c3d→e4f5a6b)``.
Equality is equality of canonical JSON (sorted keys, compact), and the hashes in a reason
are the first 7 hex digits of its sha256, so a reason can be checked by hand.

Only what the recording knows is compared (``CanonicalRequest.known``). ``params`` has
one extra rule: a recording that does not know ``params`` in full (one rebuilt from a
trace, which records temperature or max_tokens but not every field) still has the params
its source did record, and those are compared — the live request must carry the same
value for each of them; params the recording lacks are ignored. Both rules live in one
projection per component (``projection``), from which the index keys and every reason
are derived.

``Matcher`` normalises (with the ``Normalizer`` it is given) and indexes the recordings
once. A lookup hashes the live request's
components once per distinct "shape" of recording (which components it knows and, for
partial params, which param names) and finds the first unused recording with equal
hashes in a dict, so a hit costs the same for ten recordings or ten thousand. Identical
requests consume successive recordings in order. A request whose body is identical
to a recorded one is found by its body first (``exact_hit``; a small one by its bytes,
``exact_hit_raw``), with exactly the outcome ``match`` would give.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import COMPONENTS, JSON, CanonicalRequest, Exchange
from otel_replay.core.gcpause import paused_gc
from otel_replay.core.ids import SHORT_HASH_DIGITS
from otel_replay.matching import projection
from otel_replay.matching.exact import ExactIndex
from otel_replay.matching.normalize import DEFAULT, Normalizer
from otel_replay.matching.projection import Shape, canonical_json, compare, digest

if TYPE_CHECKING:  # the differences by path: worked out when a miss is explained
    from otel_replay.matching.diff import Difference

__all__ = [
    "COMPARATORS",
    "Comparator",
    "MatchMiss",
    "Matcher",
    "Only",
    "canonical_json",
    "compared_value",
    "component_hash",
    "differences",
    "endpoint",
    "messages",
    "model",
    "params",
    "system",
    "tools",
]

Comparator = Callable[[CanonicalRequest, CanonicalRequest], str | None]


def compared_value(recorded: CanonicalRequest, request: CanonicalRequest, name: str) -> JSON:
    """What of ``request``'s component ``name`` is compared against ``recorded``: the
    component itself, except for ``params`` when the recording does not know them in
    full (then only the param names the recording has)."""
    value = projection.project(projection.shape(recorded), request, name)
    return request.component(name) if value is projection.SKIPPED else value


def component_hash(request: CanonicalRequest, name: str) -> str:
    """7 hex digits of the sha256 of a component's canonical JSON."""
    return digest(request.component(name))[:SHORT_HASH_DIGITS]


def _comparator(name: str) -> Comparator:
    def comparator(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
        return compare(recorded, live, name).reason()

    comparator.__name__ = name
    comparator.__doc__ = f"Why the {name} component differs, or None."
    return comparator


COMPARATORS: dict[str, Comparator] = {name: _comparator(name) for name in COMPONENTS}
endpoint = COMPARATORS["endpoint"]
model = COMPARATORS["model"]
system = COMPARATORS["system"]
messages = COMPARATORS["messages"]
tools = COMPARATORS["tools"]
params = COMPARATORS["params"]


def differences(recorded: CanonicalRequest, live: CanonicalRequest) -> dict[str, str]:
    """Every differing component (in ``COMPONENTS`` order) with its reason."""
    found = {name: COMPARATORS[name](recorded, live) for name in COMPONENTS}
    return {name: reason for name, reason in found.items() if reason is not None}


class MatchMiss(ReplayMiss):
    """A miss against the nearest unused recording: ``recording`` is its index, and
    ``differences`` lists where the live request differs from it."""

    def __init__(
        self,
        reason: str,
        component: str,
        recording: int,
        recorded: CanonicalRequest,
        live: CanonicalRequest,
    ) -> None:
        super().__init__(reason, component=component)
        self.recording = recording
        self._pair: tuple[CanonicalRequest, CanonicalRequest] = (recorded, live)

    @property
    def differences(self) -> list[Difference]:
        from otel_replay.matching.diff import differences

        return differences(*self._pair)

    @property
    def compared(self) -> tuple[CanonicalRequest, CanonicalRequest]:
        """The recording and the live request as compared (both normalised)."""
        return self._pair


_BULK = 1000


class _Bucket:
    """Indices of recordings with one key, in order, and how many are consumed."""

    __slots__ = ("indices", "next")

    def __init__(self) -> None:
        self.indices: list[int] = []
        self.next = 0

    def first_unused(self, used: set[int]) -> int | None:
        while self.next < len(self.indices) and self.indices[self.next] in used:
            self.next += 1
        return self.indices[self.next] if self.next < len(self.indices) else None

    def first_taken(self, used: set[int], only: Only) -> tuple[int | None, bool]:
        """The first unused index ``only`` accepts, and whether ``only`` refused one."""
        if self.first_unused(used) is None:
            return None, False
        refused = False
        for index in self.indices[self.next :]:
            if index in used:
                continue
            if only.accept(index):
                return index, refused
            refused = True
        return None, refused


@dataclass(frozen=True, slots=True)
class Only:
    """What restricts a match to some of the equal recordings: ``accept`` takes a
    recording's index; ``refused`` is the miss when equal unused recordings exist and
    ``accept`` refuses each (``matching.chain``: a continuation of another response)."""

    accept: Callable[[int], bool]
    refused: ReplayMiss


class Matcher:
    """Finds, for each live request, the first unused recording equal to it.

    ``recordings`` are canonical requests as recorded (normalised here, once, by
    ``recorded_by`` when given — the rules with the recording machine's directories —
    else by ``normalizer``; the built-in rules by default). ``used`` pre-marks recordings as
    consumed (``why`` uses it to reproduce a run). ``exact`` indexes recorded bodies for
    ``exact_hit``. Safe to call from several threads.
    """

    def __init__(
        self,
        recordings: Sequence[CanonicalRequest],
        used: Iterable[int] = (),
        *,
        normalizer: Normalizer | None = None,
        exact: ExactIndex | None = None,
        recorded_by: Normalizer | None = None,
    ) -> None:
        self.normalizer = normalizer or DEFAULT
        first = self.recorded_by = recorded_by or self.normalizer
        self._exact = exact or ExactIndex()
        self._lock = threading.Lock()
        self._recordings: list[CanonicalRequest] = []
        self._keys: list[tuple[str, ...]] = []
        self._index: dict[Shape, dict[tuple[str, ...], _Bucket]] = {}
        self.used: set[int] = set()
        with paused_gc(len(recordings) > _BULK):
            for request in recordings:
                self._add(request, first)
        self.used.update(i for i in used if 0 <= i < len(self._recordings))

    @classmethod
    def for_exchanges(
        cls,
        exchanges: Sequence[Exchange],
        normalizer: Normalizer | None = None,
        recorded_by: Normalizer | None = None,
    ) -> Matcher:
        """A matcher over recorded exchanges, their bodies indexed for the exact shortcut."""
        return cls(
            [ex.request for ex in exchanges],
            normalizer=normalizer,
            exact=ExactIndex(exchanges),
            recorded_by=recorded_by,
        )

    def __len__(self) -> int:
        return len(self._recordings)

    @property
    def recordings(self) -> Sequence[CanonicalRequest]:
        """The recordings, normalised."""
        return tuple(self._recordings)

    def unused(self) -> list[int]:
        """Indices of recordings not yet consumed, ascending."""
        return [i for i in range(len(self._recordings)) if i not in self.used]

    def append(self, request: CanonicalRequest) -> int:
        """Adds a newly recorded exchange's request (auto mode); returns its index."""
        with self._lock:
            return self._add(request, self.normalizer)

    def _add(self, request: CanonicalRequest, normalizer: Normalizer) -> int:
        normal = normalizer.normalize(request)
        of = projection.shape(normal)
        key = projection.key(of, normal, {})
        index = len(self._recordings)
        self._recordings.append(normal)
        self._keys.append(key)
        self._index.setdefault(of, {}).setdefault(key, _Bucket()).indices.append(index)
        return index

    # -- the exact-bytes shortcut ---------------------------------------------------------
    def exact_hit(self, provider: str, path: str, body: Any) -> int | None:
        """Consumes and returns the recording ``match`` would return for a parsed body
        identical to a recorded one, without building or normalising its canonical
        request; None leaves the request to ``match``."""
        return self._take(self._exact.for_body(provider, path, body))

    def exact_hit_raw(self, provider: str, path: str, raw: bytes) -> int | None:
        """``exact_hit`` for a small body's bytes, before parsing."""
        return self._take(self._exact.for_raw(provider, path, raw))

    def _take(self, candidates: list[int]) -> int | None:
        """The first unused candidate, consumed, when it is exactly what ``match`` would
        return for a request equal to it: the first unused of its key, and every
        recording compared on the same components (one shape)."""
        if not candidates:
            return None
        with self._lock:
            used = self.used
            for index in candidates:
                if index not in used:
                    break
            else:
                return None
            if len(self._index) != 1:
                return None
            (buckets,) = self._index.values()
            bucket = buckets.get(self._keys[index])
            if bucket is None or bucket.first_unused(used) != index:
                return None
            used.add(index)
            return index

    def normal(self, index: int) -> CanonicalRequest:
        """Recording ``index``, normalised."""
        return self._recordings[index]

    def take_equal(self, index: int, accept: Callable[[int], bool]) -> int | None:
        """Consumes and returns what ``match`` returns for a request whose normal form
        is recording ``index``'s, when ``accept`` takes it; None when no such recording
        is left unused (``match`` then says why) or ``accept`` refuses it."""
        with self._lock:
            if len(self._index) == 1:  # one shape: its key, as indexed
                (buckets,) = self._index.values()
                bucket = buckets.get(self._keys[index])
                found = None if bucket is None else bucket.first_unused(self.used)
            else:
                found, _ = self._lookup(self._recordings[index])
            if found is None or not accept(found):
                return None
            self.used.add(found)
            return found

    # -- the component matcher ------------------------------------------------------------
    def probe(self, live: CanonicalRequest, only: Only | None = None) -> int | ReplayMiss:
        """The index ``match`` would return, or the miss it would raise; consumes nothing."""
        with self._lock:
            return self._outcome(self.normalizer.normalize(live), only)

    def match(self, live: CanonicalRequest, only: Only | None = None) -> int:
        """Consumes and returns the first unused recording equal to ``live`` (of those
        ``only`` accepts, when given).

        Raises ``ReplayMiss`` naming the first differing component of the nearest unused
        recording, ``more model calls than the N recorded``, or ``only``'s miss when it
        refused every equal unused recording."""
        normal = self.normalizer.normalize(live)
        with self._lock:
            found = self._outcome(normal, only)
            if isinstance(found, ReplayMiss):
                raise found
            self.used.add(found)
            return found

    def _outcome(self, normal: CanonicalRequest, only: Only | None) -> int | ReplayMiss:
        """The first unused recording equal to ``normal`` (of those ``only`` accepts), or
        the miss: ``only``'s when it refused every equal unused one."""
        if only is None:
            found, exhausted = self._lookup(normal)
        else:
            found, exhausted, refused = self._lookup_only(normal, only)
            if found is None and refused:
                return only.refused
        return self._miss(normal, exhausted) if found is None else found

    def _lookup(self, normal: CanonicalRequest) -> tuple[int | None, bool]:
        """First unused equal recording, and whether equal recordings exist but are used."""
        cache: dict[str, str] = {}
        best: int | None = None
        exhausted = False
        for of, buckets in self._index.items():
            bucket = buckets.get(projection.key(of, normal, cache))
            if bucket is None:
                continue
            index = bucket.first_unused(self.used)
            if index is None:
                exhausted = True
            elif best is None or index < best:
                best = index
        return best, exhausted

    def _lookup_only(self, normal: CanonicalRequest, only: Only) -> tuple[int | None, bool, bool]:
        """``_lookup`` among the recordings ``only`` accepts, and whether it refused one."""
        cache: dict[str, str] = {}
        best: int | None = None
        exhausted = refused = False
        for of, buckets in self._index.items():
            bucket = buckets.get(projection.key(of, normal, cache))
            if bucket is None:
                continue
            index, refused_here = bucket.first_taken(self.used, only)
            refused = refused or refused_here
            if index is None:
                exhausted = exhausted or not refused_here
            elif best is None or index < best:
                best = index
        return best, exhausted, refused

    def _miss(self, normal: CanonicalRequest, exhausted: bool) -> ReplayMiss:
        total = len(self._recordings)
        if exhausted or len(self.used) >= total:
            return ReplayMiss(f"more model calls than the {total} recorded")
        # an unused recording with every key equal would have been found by _lookup
        index, live_key, differing = self._rank(normal, self.unused())[0]
        name = COMPONENTS[differing[0]]
        reason = projection.reason(name, self._keys[index][differing[0]], live_key[differing[0]])
        return MatchMiss(reason, name, index, self._recordings[index], normal)

    def _rank(
        self, normal: CanonicalRequest, candidates: Iterable[int]
    ) -> list[tuple[int, tuple[str, ...], list[int]]]:
        """Candidates with the live key for their shape and the positions (in
        ``COMPONENTS``) where the keys differ, fewest differences first."""
        cache: dict[str, str] = {}
        live_keys: dict[Shape, tuple[str, ...]] = {}
        ranked: list[tuple[int, tuple[str, ...], list[int]]] = []
        for i in candidates:
            of = projection.shape(self._recordings[i])
            live_key = live_keys.get(of)
            if live_key is None:
                live_key = live_keys[of] = projection.key(of, normal, cache)
            recorded = self._keys[i]
            ranked.append((i, live_key, [n for n, a in enumerate(recorded) if a != live_key[n]]))
        ranked.sort(key=lambda item: (len(item[2]), item[0]))
        return ranked

    def nearest(self, live: CanonicalRequest, k: int = 3) -> list[tuple[int, list[str]]]:
        """The ``k`` recordings (used or not) closest to ``live``, with the components
        that differ; fewest differences first, then lowest index."""
        normal = self.normalizer.normalize(live)
        with self._lock:
            ranked = self._rank(normal, range(len(self._recordings)))[:k]
        return [(i, [COMPONENTS[n] for n in differing]) for i, _, differing in ranked]
