"""A component's list items normalised once per item object, and runs of them once per run.

A conversation resends its earlier messages as the very same objects every turn (see
``core.memo``). Each item is walked once, numbered as it goes: one without placeholders
is kept as it came out, and the ``ValueTemplate`` of one with some (its placeholders left
open, for a request's numbering to fill) is made when it is first asked for, by a run
that meets the item after other values or by the pairing of a conversation's turns
(``continuation``). A run of items is remembered too: starting from the same
numbering, the same items in the same order come out the same and leave the numbering
the same, so a request whose history is last turn's history plus new messages fills only
the new ones, and the head of a list that is the very items the last list walked from the
same numbering began with is taken whole after one comparison. An item without
placeholders is the same whatever the numbering and leaves it alone, so runs skip it,
and a list of such items only (a tool list) met again as the very same items is answered
whatever numbering the components before it left.
Each step of a run keeps the placeholders its item added, so
the numbering at any step is rebuilt when a new item follows remembered ones; numbering
stays by first occurrence across the request, exactly as walking every item afresh gives.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import islice

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import shared_head
from otel_replay.matching.numbering import Numbering, ValueTemplate

__all__ = ["ItemRuns"]

_MAX_ITEMS = 16384
_MAX_STEPS = 65536
_MAX_LISTS = 64
_NONE: tuple[tuple[JSON, ...], list[JSON], list[_Step | _Start]] = ((), [], [])


class _Start:
    """Where runs begin: the numbering as it stood."""

    __slots__ = ("counts", "lists", "seen")

    def __init__(self, seen: tuple[tuple[str, str], ...], counts: tuple[tuple[str, int], ...]):
        self.seen = seen
        self.counts = counts
        # the last list walked from here that began with an item: its items, results and
        # where each left the run
        self.lists: dict[int, tuple[tuple[JSON, ...], list[JSON], list[_Step | _Start]]] = {}


class _Step:
    """One item of a run: its result and what it added to the numbering."""

    __slots__ = ("added", "counts", "item", "out", "prev", "seen")

    def __init__(
        self,
        item: JSON,
        prev: _Step | _Start,
        out: JSON,
        added: tuple[tuple[str, str], ...],
        counts: tuple[tuple[str, int], ...],
    ) -> None:
        self.item = item
        self.prev = prev
        self.out = out
        self.added = added
        self.counts = counts
        self.seen: dict[str, str] | None = None  # the whole numbering, once rebuilt here


class ItemRuns:
    """Normalises lists of items with ``walk``, remembering items and runs by identity."""

    __slots__ = ("_after", "_free", "_starts", "_templates", "_walk")

    def __init__(self, walk: Callable[[JSON, Numbering], JSON]) -> None:
        self._walk = walk
        # by item: its template, or None when it was walked once, numbered as it went
        self._templates: dict[int, tuple[JSON, ValueTemplate | None]] = {}
        self._starts: dict[tuple[object, ...], _Start] = {}
        self._after: dict[tuple[int, int], _Step] = {}
        # the last list none of whose items holds a placeholder, and its result: the
        # same whatever the numbering (a tool list after a conversation's fresh ids)
        self._free: tuple[tuple[JSON, ...], list[JSON]] = ((), [])

    def walk(self, items: list[JSON], numbering: Numbering) -> list[JSON]:
        """``[walk(item) for item in items]`` with ``numbering`` advanced alike."""
        free, done_free = self._free
        if items and len(items) == len(free) and shared_head(items, free) == len(items):
            return done_free[:]
        seen, counts = tuple(numbering.seen.items()), tuple(numbering.counts.items())
        start = self._starts.get((seen, counts))
        if start is None:
            if len(self._starts) >= _MAX_ITEMS:
                self._starts.clear()
            start = self._starts[(seen, counts)] = _Start(seen, counts)
        at: _Step | _Start = start
        if not items:
            return []
        last, done, ats = start.lists.get(id(items[0]), _NONE)
        kept = shared_head(items, last)  # the head last turn's list had: taken whole
        out, ats = done[:kept], ats[:kept]
        if kept:
            at = ats[-1]
        behind = at is not start  # numbering not yet advanced past the remembered steps
        after = self._after
        for item in items[kept:]:
            step = after.get((id(at), id(item)))
            if step is not None and step.item is item and step.prev is at:
                out.append(step.out)
                ats.append(step)
                at = step
                behind = True
                continue
            template = self._known(item, make=False)
            if template is not None and not template.calls:  # the same whatever the numbering
                out.append(template.value)
                ats.append(at)
                continue
            if behind:
                _rebuild(at, numbering)
                behind = False
            known = len(numbering.seen)
            if template is not None:
                result = template.fill(numbering)
            else:  # walked once, numbered as it goes (its template is made if ever asked)
                counted = _Counting(numbering)
                result = self._walk(item, counted)
                self._keep(item, ValueTemplate.known(result) if not counted.calls else None)
                if not counted.calls:
                    out.append(result)
                    ats.append(at)
                    continue
            added = tuple(islice(numbering.seen.items(), known, None))
            step = _Step(item, at, result, added, tuple(numbering.counts.items()))
            if len(after) >= _MAX_STEPS:
                after.clear()
            after[(id(at), id(item))] = step
            out.append(result)
            ats.append(step)
            at = step
        if behind:
            _rebuild(at, numbering)
        if len(start.lists) >= _MAX_LISTS:
            start.lists.clear()
        start.lists[id(items[0])] = (tuple(items), out[:], ats)
        if at is start:  # no item holds a placeholder: the numbering did not move
            self._free = (tuple(items), out[:])
        return out

    def template(self, item: JSON) -> ValueTemplate:
        """``item`` walked with its placeholders left open, once per item object."""
        found = self._known(item, make=True)
        assert found is not None
        return found

    def _known(self, item: JSON, make: bool) -> ValueTemplate | None:
        """``item``'s template: made now when it was walked once before (numbered as it
        went) or, with ``make``, when it never was; None when it never was."""
        found = self._templates.get(id(item))
        if found is None or found[0] is not item:
            if not make:
                return None
        elif found[1] is not None:
            return found[1]
        template = ValueTemplate(partial(self._walk, item))
        self._keep(item, template)
        return template

    def _keep(self, item: JSON, template: ValueTemplate | None) -> None:
        if len(self._templates) >= _MAX_ITEMS:
            self._templates.clear()
        self._templates[id(item)] = (item, template)


class _Counting(Numbering):
    """A request's numbering, counting the placeholders asked of it."""

    __slots__ = ("calls", "inner")

    def __init__(self, inner: Numbering) -> None:
        super().__init__()
        self.inner = inner
        self.calls = 0

    def placeholder(self, kind: str, value: str) -> str:
        self.calls += 1
        return self.inner.placeholder(kind, value)


def _rebuild(at: _Step | _Start, numbering: Numbering) -> None:
    """Sets ``numbering`` to what it is after step ``at`` (a run's end, met again next
    turn, keeps what it rebuilt)."""
    if isinstance(at, _Start):
        numbering.seen, numbering.counts = dict(at.seen), dict(at.counts)
        return
    if at.seen is None:
        steps: list[_Step] = []
        back: _Step | _Start = at
        while isinstance(back, _Step) and back.seen is None:
            steps.append(back)
            back = back.prev
        seen = dict(back.seen or ())
        for step in reversed(steps):
            seen.update(step.added)
        at.seen = seen
    numbering.seen, numbering.counts = dict(at.seen), dict(at.counts)
