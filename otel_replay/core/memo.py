"""Results remembered by the identity of what they were computed from.

The gateway hands out the very same parsed object for an item a request repeats (an
earlier message of a conversation, a tool definition; see ``gateway.bodies``), and so does
a cassette for a value its interactions share. A pure function of such a value therefore
need run once per value, not once per request: ``by_identity`` remembers its results by
the argument's ``id``, keeping the argument alive so the id cannot be reused by another
object. Arguments must not be changed in place once passed (nothing here does: every
stage builds new values). The memory is bounded by a count and starts afresh when full.

``ListMap`` maps a function over a list the same way, and answers the head of a list
that is the very objects of the last list's head (a conversation resending its messages)
from the last result after one comparison of the two lists at C speed, with no lookup per
item.

``forget`` empties every memo at once: ``build_file`` calls it after each interaction it
writes, since the values parsed from one span never come back in another and the memos
would only hold them up to their bounds.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Sequence
from operator import is_
from typing import Any, Generic, TypeVar

__all__ = [
    "SHARED",
    "IdentityMemo",
    "ListHash",
    "ListMap",
    "Shared",
    "by_identity",
    "forget",
    "shared_head",
]

A = TypeVar("A")
R = TypeVar("R")

_LIMIT = 1 << 12


class IdentityMemo(Generic[A, R]):
    """``fn(value)`` remembered per ``value`` object (not per equal value)."""

    __slots__ = ("__weakref__", "_found", "_weight", "budget", "fn", "limit", "weigh")

    def __init__(
        self,
        fn: Callable[[A], R],
        limit: int = _LIMIT,
        *,
        weigh: Callable[[R], int] | None = None,
        budget: int = 0,
    ) -> None:
        """At most ``limit`` results, and with ``weigh``, results weighing ``budget`` in all."""
        self.fn = fn
        self.limit = limit
        self.weigh = weigh
        self.budget = budget
        self._found: dict[int, tuple[A, R]] = {}
        self._weight = 0
        _MEMOS.add(self)

    def __call__(self, value: A) -> R:
        found = self._found.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        result = self.fn(value)
        weight = 0 if self.weigh is None else self.weigh(result)
        if len(self._found) >= self.limit or (weight and self._weight + weight > self.budget):
            self.clear()
        self._found[id(value)] = (value, result)
        self._weight += weight
        return result

    def clear(self) -> None:
        self._found.clear()
        self._weight = 0


def shared_head(items: Sequence[object], last: Sequence[object]) -> int:
    """How many items at the head of ``items`` are the very objects at the head of ``last``."""
    same = list(map(is_, items, last))
    return same.index(False) if False in same else len(same)


class ListMap(Generic[A, R]):
    """``[fn(item) for item in items]`` with each result remembered per item object
    (``IdentityMemo``), and the head the list shares with the last one taken whole from
    the last result."""

    __slots__ = ("__weakref__", "_last", "each")

    def __init__(self, fn: Callable[[A], R], limit: int = _LIMIT) -> None:
        self.each = IdentityMemo(fn, limit)
        self._last: tuple[Sequence[A], list[R]] = ((), [])  # one attribute: set at once
        _MEMOS.add(self)

    def __call__(self, items: Sequence[A]) -> list[R]:
        last, done = self._last
        kept = shared_head(items, last)
        out = done[:kept]
        if kept < len(items):
            out += map(self.each, items[kept:])
        self._last = (tuple(items), out)
        return out[:]

    def clear(self) -> None:
        self._last = ((), [])
        self.each.clear()


_MEMOS: weakref.WeakSet[IdentityMemo[Any, Any] | ListHash | ListMap[Any, Any] | Shared] = (
    weakref.WeakSet()
)


class Shared:
    """Long values handed out as the very same object wherever they come back, by
    identity: the body reader's object and array members met before (a coding agent's
    tool list in an item of fresh id, a tool's output sent again under a new call). A walk
    that remembers its work per object (``RuleSet.walk``) remembers it for these alone:
    they are few and long, where remembering every value it meets would cost more than it
    saves. Holds them (their ids stay theirs) up to a budget of their texts' characters,
    then starts afresh."""

    __slots__ = ("__weakref__", "_weight", "budget", "kept")

    def __init__(self, budget: int = 64 * 1024 * 1024) -> None:
        self.budget = budget
        self.kept: dict[int, object] = {}  # by id: ``kept.get(id(v)) is v`` when shared
        self._weight = 0
        _MEMOS.add(self)

    def add(self, value: object, size: int) -> None:
        """Marks ``value``, whose text is ``size`` characters long."""
        if self._weight + size > self.budget:
            self.clear()
        if self.kept.setdefault(id(value), value) is value:
            self._weight += size

    def clear(self) -> None:
        self.kept.clear()
        self._weight = 0


SHARED = Shared()
"""The values this process hands out shared (see ``Shared``)."""


def forget() -> None:
    """Empty every memo (``IdentityMemo`` and ``ListHash``) of this process."""
    for memo in list(_MEMOS):
        memo.clear()


def by_identity(fn: Callable[[A], R]) -> Callable[[A], R]:
    """``fn`` with its results remembered per argument object (see ``IdentityMemo``)."""
    return IdentityMemo(fn)


_TEXT_BUDGET = 64 * 1024 * 1024
_STATES_MAX = 1 << 16


class ListHash:
    """The sha256 of a list's JSON text, ``[``, its items' texts between commas, ``]``,
    given each item's text: each item's text, and the hash state after each run of
    items, are remembered by identity, so a conversation whose earlier messages are the
    same objects as last turn's costs only its new messages; the head a list shares
    with the last one hashed that began with the same item is taken whole."""

    __slots__ = ("__weakref__", "_after", "_last", "_text")

    def __init__(self, text: Callable[[Any], bytes]) -> None:
        self._text = IdentityMemo(text, weigh=len, budget=_TEXT_BUDGET)
        self._after: dict[tuple[int, int], tuple[object, object, Any]] = {}
        # the last list hashed that began with an item, and the states after each of its items
        self._last: dict[int, tuple[tuple[Any, ...], list[Any]]] = {}
        _MEMOS.add(self)

    def clear(self) -> None:
        self._after.clear()
        self._last.clear()

    def size(self, items: list[Any]) -> int:
        """The length of the list's text in bytes."""
        text = self._text
        return 1 + sum(len(text(item)) + 1 for item in items) + (not items)

    def hexdigest(self, items: list[Any]) -> str:
        if not items:
            return _EMPTY
        last, states = self._last.get(id(items[0]), _NONE)
        kept = shared_head(items, last)
        state = states[kept - 1] if kept else _OPEN
        states = states[:kept]
        after = self._after
        for item in items[kept:]:
            step = (id(state), id(item))
            found = after.get(step)
            if found is None or found[0] is not item or found[1] is not state:
                following = state.copy()
                text = self._text(item)
                following.update(text if state is _OPEN else b"," + text)
                if len(after) >= _STATES_MAX:
                    after.clear()
                after[step] = found = (item, state, following)
            state = found[2]
            states.append(state)
        if len(self._last) >= _LISTS_MAX:
            self._last.clear()
        self._last[id(items[0])] = (tuple(items), states)
        final = state.copy()
        final.update(b"]")
        return final.hexdigest()


_OPEN = hashlib.sha256(b"[")
_EMPTY = hashlib.sha256(b"[]").hexdigest()
_NONE: tuple[tuple[Any, ...], list[Any]] = ((), [])
_LISTS_MAX = 64
