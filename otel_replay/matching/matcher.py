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
value for each of them; params the recording lacks are ignored.

``Matcher`` normalises and indexes the recordings once. A lookup hashes the live request's
components once per distinct "shape" of recording (which components it knows and, for
partial params, which param names) and finds the first unused recording with equal
hashes in a dict, so a hit costs the same for ten recordings or ten thousand. Identical
requests consume successive recordings in order.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Sequence

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import COMPONENT_LABELS, COMPONENTS, JSON, CanonicalRequest
from otel_replay.core.gcpause import paused_gc
from otel_replay.core.ids import short_hash
from otel_replay.matching.normalize import normalize

Comparator = Callable[[CanonicalRequest, CanonicalRequest], str | None]


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: JSON) -> str:
    """The one text two values are compared by: sorted keys, compact, UTF-8 (one encoder,
    not one per call as ``json.dumps`` with these settings makes)."""
    return _CANONICAL.encode(value)


def _digest(value: JSON) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def compared_value(recorded: CanonicalRequest, request: CanonicalRequest, name: str) -> JSON:
    """What of ``request``'s component ``name`` is compared against ``recorded``.

    The component itself, except for ``params`` when the recording does not know them in
    full: then only the param names the recording has."""
    value = request.component(name)
    if name == "params" and "params" not in recorded.known:
        params = value if isinstance(value, dict) else {}
        return {k: params.get(k) for k in recorded.params}
    return value


def component_hash(request: CanonicalRequest, name: str) -> str:
    """7 hex digits of the sha256 of a component's canonical JSON."""
    return _digest(request.component(name))[:7]


def _compare(name: str, recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    if name != "params" and name not in recorded.known:
        return None
    was = canonical_json(compared_value(recorded, recorded, name))
    now = canonical_json(compared_value(recorded, live, name))
    if was == now:
        return None
    return _reason(name, _short(was), _short(now))


def _short(canonical: str) -> str:
    return short_hash(canonical)


def _reason(name: str, was7: str, now7: str) -> str:
    return f"{COMPONENT_LABELS[name]} changed (hash {was7}→{now7})"


def endpoint(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    """Why the API path differs, or None."""
    return _compare("endpoint", recorded, live)


def model(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    """Why the requested model differs, or None."""
    return _compare("model", recorded, live)


def system(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    """Why the system prompt differs, or None."""
    return _compare("system", recorded, live)


def messages(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    """Why the conversation differs (text, order, tool calls and results), or None."""
    return _compare("messages", recorded, live)


def tools(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    """Why the tool definitions differ, or None."""
    return _compare("tools", recorded, live)


def params(recorded: CanonicalRequest, live: CanonicalRequest) -> str | None:
    """Why the answer-changing params differ, or None (see the module's params rule)."""
    return _compare("params", recorded, live)


COMPARATORS: dict[str, Comparator] = {
    "endpoint": endpoint,
    "model": model,
    "system": system,
    "messages": messages,
    "tools": tools,
    "params": params,
}


def differences(recorded: CanonicalRequest, live: CanonicalRequest) -> dict[str, str]:
    """Every differing component (in ``COMPONENTS`` order) with its reason."""
    found = {name: COMPARATORS[name](recorded, live) for name in COMPONENTS}
    return {name: reason for name, reason in found.items() if reason is not None}


_Shape = tuple[frozenset[str], tuple[str, ...] | None]
"""Which components a recording is compared on, and its param names when partial."""


def _shape(request: CanonicalRequest) -> _Shape:
    partial = None if "params" in request.known else tuple(sorted(request.params))
    return request.known - {"params"}, partial


def _key(shape: _Shape, request: CanonicalRequest, cache: dict[str, str]) -> tuple[str, ...]:
    """Digests of the compared components of ``request`` for recordings of ``shape``."""
    known, partial = shape
    key: list[str] = []
    for name in COMPONENTS:
        if name == "params":
            if partial is None:
                key.append(_cached_digest(request, name, cache))
            else:
                p = request.params if isinstance(request.params, dict) else {}
                key.append(_digest({k: p.get(k) for k in partial}))
        elif name in known:
            key.append(_cached_digest(request, name, cache))
        else:
            key.append("")
    return tuple(key)


def _cached_digest(request: CanonicalRequest, name: str, cache: dict[str, str]) -> str:
    digest = cache.get(name)
    if digest is None:
        digest = cache[name] = _digest(request.component(name))
    return digest


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


class Matcher:
    """Finds, for each live request, the first unused recording equal to it.

    ``recordings`` are canonical requests as recorded (normalised here, once).
    ``used`` pre-marks recordings as consumed (``why`` uses it to reproduce a run).
    Safe to call from several threads.
    """

    def __init__(self, recordings: Sequence[CanonicalRequest], used: Iterable[int] = ()) -> None:
        self._lock = threading.Lock()
        self._recordings: list[CanonicalRequest] = []
        self._keys: list[tuple[str, ...]] = []
        self._index: dict[_Shape, dict[tuple[str, ...], _Bucket]] = {}
        self.used: set[int] = set()
        with paused_gc(len(recordings) > _BULK):
            for request in recordings:
                self._add(request)
        self.used.update(i for i in used if 0 <= i < len(self._recordings))

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
            return self._add(request)

    def _add(self, request: CanonicalRequest) -> int:
        normal = normalize(request)
        shape = _shape(normal)
        key = _key(shape, normal, {})
        index = len(self._recordings)
        self._recordings.append(normal)
        self._keys.append(key)
        self._index.setdefault(shape, {}).setdefault(key, _Bucket()).indices.append(index)
        return index

    def consume_if_next(self, index: int) -> bool:
        """Consumes recording ``index`` when it is exactly what ``match`` would return for a
        request equal to it: unused, the first unused of its kind, and every recording
        compared on the same components. The caller vouches that the live request equals
        the recording (e.g. byte-identical bodies); anything else is for ``match``."""
        with self._lock:
            if len(self._index) != 1 or index in self.used or index >= len(self._keys):
                return False
            (buckets,) = self._index.values()
            bucket = buckets.get(self._keys[index])
            if bucket is None or bucket.first_unused(self.used) != index:
                return False
            self.used.add(index)
            return True

    def probe(self, live: CanonicalRequest) -> int | ReplayMiss:
        """The index ``match`` would return, or the miss it would raise; consumes nothing."""
        normal = normalize(live)
        with self._lock:
            found, exhausted = self._lookup(normal)
            if found is not None:
                return found
            return self._miss(normal, exhausted)

    def match(self, live: CanonicalRequest) -> int:
        """Consumes and returns the first unused recording equal to ``live``.

        Raises ``ReplayMiss`` naming the first differing component of the nearest unused
        recording, or ``more model calls than the N recorded``."""
        normal = normalize(live)
        with self._lock:
            found, exhausted = self._lookup(normal)
            if found is None:
                raise self._miss(normal, exhausted)
            self.used.add(found)
            return found

    def _lookup(self, normal: CanonicalRequest) -> tuple[int | None, bool]:
        """First unused equal recording, and whether equal recordings exist but are used."""
        cache: dict[str, str] = {}
        best: int | None = None
        exhausted = False
        for shape, buckets in self._index.items():
            bucket = buckets.get(_key(shape, normal, cache))
            if bucket is None:
                continue
            index = bucket.first_unused(self.used)
            if index is None:
                exhausted = True
            elif best is None or index < best:
                best = index
        return best, exhausted

    def _miss(self, normal: CanonicalRequest, exhausted: bool) -> ReplayMiss:
        total = len(self._recordings)
        if exhausted or len(self.used) >= total:
            return ReplayMiss(f"more model calls than the {total} recorded")
        ranked = self._rank(normal, [i for i in range(total) if i not in self.used])
        index, differing = ranked[0]
        if not differing:  # unreachable while keys and comparators agree
            return ReplayMiss(f"more model calls than the {total} recorded")
        name = differing[0]
        reason = COMPARATORS[name](self._recordings[index], normal)
        return ReplayMiss(reason or f"{COMPONENT_LABELS[name]} changed", component=name)

    def _rank(
        self, normal: CanonicalRequest, candidates: Iterable[int]
    ) -> list[tuple[int, list[str]]]:
        """Candidates with their differing components, fewest differences first."""
        cache: dict[str, str] = {}
        live_keys: dict[_Shape, tuple[str, ...]] = {}
        ranked: list[tuple[int, list[str]]] = []
        for i in candidates:
            shape = _shape(self._recordings[i])
            live_key = live_keys.get(shape)
            if live_key is None:
                live_key = live_keys[shape] = _key(shape, normal, cache)
            recorded = self._keys[i]
            ranked.append(
                (i, [n for n, a, b in zip(COMPONENTS, recorded, live_key, strict=True) if a != b])
            )
        ranked.sort(key=lambda item: (len(item[1]), item[0]))
        return ranked

    def nearest(self, live: CanonicalRequest, k: int = 3) -> list[tuple[int, list[str]]]:
        """The ``k`` recordings (used or not) closest to ``live``, with the components
        that differ; fewest differences first, then lowest index."""
        normal = normalize(live)
        with self._lock:
            return self._rank(normal, range(len(self._recordings)))[:k]
