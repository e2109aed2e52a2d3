"""One projection per component: what of a request is compared against a recording.

A recording's *shape* says which components it is compared on (those it knows) and, when
it does not know ``params`` in full (one rebuilt from a trace, which records temperature
or max_tokens but not every field), the param names it does have. ``project`` gives, for
a recording's shape, the value of one component of any request that is compared: the
component itself, or only the recording's param names for a partial recording, or
``SKIPPED`` for a component the recording does not know. Both the matcher's index keys
(digests of projections) and every comparison (miss reasons, ``why``, ``differences``)
come from this one function, so they cannot disagree.

Equality is equality of canonical JSON (sorted keys, compact), and a reason's hashes are
the first 7 hex digits of its sha256, so a reason can be checked by hand.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import orjson
import re2

from otel_replay.core.exchange import COMPONENT_LABELS, COMPONENTS, JSON, VIEWS, CanonicalRequest
from otel_replay.core.ids import SHORT_HASH_DIGITS
from otel_replay.core.jsontext import nulled_nan
from otel_replay.core.memo import IdentityMemo, ListHash
from otel_replay.matching import views as forms

__all__ = [
    "SKIPPED",
    "Compared",
    "Shape",
    "canonical_bytes",
    "canonical_json",
    "compare",
    "digest",
    "item_bytes",
    "key",
    "project",
    "reason",
    "shape",
]

_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False
)


def canonical_json(value: JSON) -> str:
    """The one text two values are compared by: sorted keys, compact, UTF-8 (one encoder,
    not one per call as ``json.dumps`` with these settings makes)."""
    return _CANONICAL.encode(value)


def canonical_bytes(value: JSON) -> bytes:
    """``canonical_json(value)`` in UTF-8, written by orjson where that writes the same
    bytes (several times faster on a conversation's messages). orjson writes a float as
    the standard library does except where that takes an exponent (below 1e-4, from
    1e16), which orjson writes as ``0.0000…`` or with an exponent of its own; a text
    holding either (or a string that merely looks so) is written again by the standard
    library, as is one holding a NaN or an infinity (orjson writes ``null``) or anything
    orjson refuses (a key that is not a string, an integer beyond 64 bits, a lone
    surrogate). Keys sort alike: by code point, which is UTF-8's byte order. orjson's
    text has no spaces, so a number follows ``:``, ``,`` or ``[`` or is the whole text:
    an id's hex digits (``…c46e``) inside a string are not taken for one."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return canonical_json(value).encode("utf-8")
    if _MAY_DIFFER.search(text) is not None or nulled_nan(text, value):
        return canonical_json(value).encode("utf-8")
    return text


_MAY_DIFFER = re2.compile(rb"(?:^|[:,\[])-?(?:[0-9]+(?:\.[0-9]+)?[eE]|0\.0000)")  # linear


def digest(value: JSON) -> str:
    """The sha256 (hex) of a value's canonical JSON; its first 7 digits are its short hash.

    A list is hashed item by item, in the same bytes: ``[``, the items' texts between
    commas, ``]``. Each item's text, and the hash state after each run of items, are
    remembered by identity, so a conversation whose earlier messages are the same objects
    as last turn's (``core.memo``) costs only its new messages."""
    kind = type(value)
    if kind is list:
        return _LISTS.hexdigest(value)
    small = value is None or (kind is str and len(value) <= _SMALL_MAX_LENGTH)
    if small and value in _SMALL:  # a model, an endpoint: the same every request
        return _SMALL[value]
    found = hashlib.sha256(canonical_bytes(value)).hexdigest()
    if small and len(_SMALL) < _SMALL_MAX:
        _SMALL[value] = found
    return found


def item_bytes(item: JSON) -> bytes:
    """``canonical_bytes(item)`` for an item of a list (a message, a tool), written from
    its members down three levels, the values found there (a tool list, an agent's
    instructions: the same objects each session, under messages of fresh ids) and long
    strings remembered by identity: a new message around them costs its own few bytes,
    not its members' texts written and checked again."""
    try:
        return _composed(item, 3)
    except (orjson.JSONEncodeError, TypeError):  # a key orjson refuses: written whole
        return canonical_bytes(item)


def _composed(value: JSON, depth: int) -> bytes:
    kind = type(value)
    if kind is dict and depth and value and all(type(k) is str for k in value):
        members = [orjson.dumps(k) + b":" + _composed(value[k], depth - 1) for k in sorted(value)]
        return b"{" + b",".join(members) + b"}"
    if kind is list and depth and value:
        return b"[" + b",".join([_composed(v, depth - 1) for v in value]) + b"]"
    if kind is dict or kind is list or (kind is str and len(value) >= _LONG_TEXT):
        return _LEAVES(value)
    return canonical_bytes(value)


_LONG_TEXT = 1024
_LEAVES: IdentityMemo[JSON, bytes] = IdentityMemo(
    canonical_bytes, weigh=len, budget=16 * 1024 * 1024
)
_LISTS = ListHash(item_bytes)
_SMALL: dict[str | None, str] = {}
_SMALL_MAX = 4096
_SMALL_MAX_LENGTH = 256


class _Skipped:
    __slots__ = ()

    def __repr__(self) -> str:
        return "SKIPPED"


SKIPPED = _Skipped()
"""The projection of a component the recording does not know: not compared."""


@dataclass(frozen=True, slots=True)
class Shape:
    """Which components a recording is compared on, its param names when partial, and
    the lossy forms (``matching.views``) its components are compared in."""

    known: frozenset[str]
    partial: tuple[str, ...] | None
    views: frozenset[str] = frozenset()


def shape(recorded: CanonicalRequest) -> Shape:
    partial = None if "params" in recorded.known else tuple(sorted(recorded.params))
    return Shape(recorded.known - {"params"}, partial, recorded.views)


def project(of: Shape, request: CanonicalRequest, name: str) -> JSON:
    """What of ``request``'s component ``name`` is compared for recordings of shape ``of``."""
    if name == "params":
        if of.partial is None:
            return request.params
        params = request.params if isinstance(request.params, dict) else {}
        return {k: params.get(k) for k in of.partial}
    if name in of.known:
        return forms.apply(of.views, name, request)
    return SKIPPED


def key(of: Shape, request: CanonicalRequest, cache: dict[str, str]) -> tuple[str, ...]:
    """The digests of ``request``'s projections for shape ``of`` ("" where skipped); whole
    components' digests are kept in ``cache`` across shapes."""
    out: list[str] = []
    for name in COMPONENTS:
        if name == "params" and of.partial is not None:
            out.append(digest(project(of, request, name)))
        elif name == "params" or name in of.known:
            viewed = [v for v in sorted(of.views) if name in VIEWS.get(v, ())]
            slot = "|".join([name, *viewed])
            found = cache.get(slot)
            if found is None:
                found = cache[slot] = digest(forms.apply(viewed, name, request))
            out.append(found)
        else:
            out.append("")
    return tuple(out)


def reason(name: str, was: str, now: str) -> str:
    """The miss reason for component ``name`` from the two projections' digests."""
    n = SHORT_HASH_DIGITS
    return f"{COMPONENT_LABELS[name]} changed (hash {was[:n]}→{now[:n]})"


@dataclass(frozen=True, slots=True)
class Compared:
    """One component of a live request against a recording: both projections (SKIPPED
    when not recorded) and their digests."""

    name: str
    was: JSON
    now: JSON
    was_digest: str = ""
    now_digest: str = ""

    @property
    def recorded(self) -> bool:
        return self.was is not SKIPPED

    @property
    def equal(self) -> bool:
        return self.was_digest == self.now_digest

    def reason(self) -> str | None:
        """None when equal (or not recorded), else the miss reason."""
        return None if self.equal else reason(self.name, self.was_digest, self.now_digest)


def compare(recorded: CanonicalRequest, live: CanonicalRequest, name: str) -> Compared:
    """Component ``name`` of ``live`` against ``recorded`` (both normalised)."""
    of = shape(recorded)
    was = project(of, recorded, name)
    if was is SKIPPED:
        return Compared(name, SKIPPED, SKIPPED)
    now = project(of, live, name)
    return Compared(name, was, now, digest(was), digest(now))
