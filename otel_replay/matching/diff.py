"""Where a live request differs from a recording: paths into the compared projections.

``differences(recorded, live)`` walks each compared component's two projections (see
``projection``) and lists every place they differ as a ``Difference(component, path,
before, after)``, with paths such as ``messages[3].parts[0].content`` or
``params.temperature``, in component order and then in document order. A value present on
one side only has ``MISSING`` on the other. Leaves are equal when their canonical JSON is
(so ``1`` and ``true`` differ, as they do for matching).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from otel_replay.core.exchange import COMPONENTS, JSON, CanonicalRequest
from otel_replay.matching.projection import canonical_json, compare

__all__ = ["MISSING", "Difference", "differences"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()
"""The side of a difference where the value is absent."""

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where the live request's projection differs from the recording's."""

    component: str
    path: str
    before: JSON
    after: JSON


def differences(recorded: CanonicalRequest, live: CanonicalRequest) -> list[Difference]:
    """Every difference of ``live`` from ``recorded`` (both normalised), by component in
    ``COMPONENTS`` order, then in document order; empty when they match."""
    found: list[Difference] = []
    for name in COMPONENTS:
        compared = compare(recorded, live, name)
        if not compared.recorded or compared.equal:
            continue
        before = len(found)
        walked = _walk(name, compared.was, compared.now)
        found.extend(Difference(name, path, a, b) for path, a, b in walked)
        if len(found) == before:  # equal structure, unequal text: name the whole component
            found.append(Difference(name, name, compared.was, compared.now))
    return found


def _walk(path: str, a: JSON, b: JSON) -> Iterator[tuple[str, JSON, JSON]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            sub = _child(path, k)
            if k not in a:
                yield sub, MISSING, b[k]
            elif k not in b:
                yield sub, a[k], MISSING
            else:
                yield from _walk(sub, a[k], b[k])
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            sub = f"{path}[{i}]"
            if i >= len(a):
                yield sub, MISSING, b[i]
            elif i >= len(b):
                yield sub, a[i], MISSING
            else:
                yield from _walk(sub, a[i], b[i])
        return
    if canonical_json(a) != canonical_json(b):
        yield path, a, b


def _child(path: str, key: object) -> str:
    text = str(key)
    return f"{path}.{text}" if _PLAIN_KEY.fullmatch(text) else f"{path}[{canonical_json(text)}]"
