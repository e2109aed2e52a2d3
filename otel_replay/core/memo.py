"""Results remembered by the identity of what they were computed from.

The gateway hands out the very same parsed object for an item a request repeats (an
earlier message of a conversation, a tool definition; see ``gateway.bodies``), and so does
a cassette for a value its interactions share. A pure function of such a value therefore
need run once per value, not once per request: ``by_identity`` remembers its results by
the argument's ``id``, keeping the argument alive so the id cannot be reused by another
object. Arguments must not be changed in place once passed (nothing here does: every
stage builds new values). The memory is bounded by a count and starts afresh when full.

``forget`` empties every memo at once: ``build_file`` calls it after each interaction it
writes, since the values parsed from one span never come back in another and the memos
would only hold them up to their bounds.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "ListHash", "by_identity", "forget"]

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


_MEMOS: weakref.WeakSet[IdentityMemo[Any, Any] | ListHash] = weakref.WeakSet()


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
    same objects as last turn's costs only its new messages."""

    __slots__ = ("__weakref__", "_after", "_text")

    def __init__(self, text: Callable[[Any], bytes]) -> None:
        self._text = IdentityMemo(text, weigh=len, budget=_TEXT_BUDGET)
        self._after: dict[tuple[int, int], tuple[object, object, Any]] = {}
        _MEMOS.add(self)

    def clear(self) -> None:
        self._after.clear()

    def size(self, items: list[Any]) -> int:
        """The length of the list's text in bytes."""
        text = self._text
        return 1 + sum(len(text(item)) + 1 for item in items) + (not items)

    def hexdigest(self, items: list[Any]) -> str:
        state = _OPEN
        after = self._after
        for item in items:
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
        final = state.copy()
        final.update(b"]")
        return final.hexdigest()


_OPEN = hashlib.sha256(b"[")
