"""A request body as the gateway reads it, and its redaction: each item of a top-level
array remembered with its redacted form, so that a resent item is redacted once.

``Bodies`` (``bodies.py``) hands out these; the result of ``Body.redacted`` equals
``redacted_body`` of the whole body.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import SHARED, ListMap
from otel_replay.gateway.call import redacted_body
from otel_replay.redaction.redact import Redactor

__all__ = ["Body", "Item", "Piece", "cleaned_lists"]

log = logging.getLogger("otel_replay.gateway")

_ASIDE = 16 * 1024
"""Bytes of new items a body holds from which they are redacted on a worker thread."""


@dataclass(slots=True)
class Item:
    """An array item (or a long top-level value, or an item's long member) met in a body:
    its text as the reader sees it (a character per byte; a member's is not kept), its
    parsed value and, once asked, its redacted form."""

    text: str
    value: JSON
    room: int  # the levels it was checked to fit in
    recorded: bool = False  # a recording's (primed), not only a live request's
    members: dict[str, Item] | None = None  # an object's long members remembered, by name
    shared: int = 0  # characters of those met before it was
    size: int = 0  # a member's: the length of its text (it keeps none)
    _clean: JSON = None
    _cleaned: bool = False

    def clean(self, redactor: Redactor) -> JSON:
        if not self._cleaned:
            value, met = self.value, self.members
            if met and isinstance(value, dict) and _clean_but(redactor, value, met):
                self._clean = value  # nothing to redact, those met before found so once
            elif met and isinstance(value, dict):  # member by member, those met before once
                out: dict[str, JSON] = {}
                for key, member in value.items():
                    out[clean_name(redactor, key)] = clean_member(
                        redactor, key, member, met.get(key)
                    )
                unchanged = all(a is b for a, b in zip(out.values(), value.values(), strict=True))
                self._clean = value if unchanged and list(out) == list(value) else out
            else:
                self._clean = redactor.json(value, size=len(self.text))
            self._cleaned = True
        return self._clean

    @property
    def unmet(self) -> int:
        """Characters of its text not yet redacted: a new item's members met before
        (``shared``) are not counted."""
        return 0 if self._cleaned else max(len(self.text) - self.shared, 0)


def _clean_but(redactor: Redactor, value: dict[str, JSON], met: dict[str, Item]) -> bool:
    """Whether ``value`` holds nothing to redact: its members met before (``met``) each
    redacted once (as ``clean_member`` does), the rest, names included, at once."""
    rest = {key: None if key in met else member for key, member in value.items()}
    if redactor.json(rest) is not rest:
        return False
    return all(
        clean_member(redactor, key, value[key], item) is value[key] for key, item in met.items()
    )


def clean_member(redactor: Redactor, key: str, value: JSON, item: Item | None) -> JSON:
    """What ``redactor.json`` makes of ``value`` as the member ``key`` of an object
    (``item``: ``value`` remembered, its redaction with it)."""
    clean = redactor.member(key, value)  # a secret by its field's name
    if clean is None:
        if item is None:
            return redactor.json(value)
        clean = item.clean(redactor)
        if item.size:  # a long member: its redacted form shared too
            SHARED.add(clean, item.size)
    return clean


def clean_name(redactor: Redactor, key: str) -> str:
    """A member's name redacted."""
    name = redactor.json(key)
    return name if isinstance(name, str) else key


def _clean_all(items: list[Item], redactor: Redactor) -> None:
    for item in items:
        item.clean(redactor)


def _cleaned_aside(items: list[Item], redactor: Redactor) -> asyncio.Future[None] | None:
    """``items`` redacted on the running loop's default executor; None without a loop.
    An item is redacted by one thread at a time: the worker, until its future is done
    (were both to, each writes the same redacted value)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    aside = loop.run_in_executor(None, _clean_all, items, redactor)
    aside.add_done_callback(_retrieved)
    return aside


def _retrieved(done: asyncio.Future[None]) -> None:
    """A worker's fault is only logged: the items it left are redacted on the loop."""
    if not done.cancelled() and done.exception() is not None:
        log.debug("redacting aside failed; done again on the loop", exc_info=done.exception())


def cleaned_lists(redactor: Redactor) -> Callable[[str], ListMap[Item | JSON, JSON]]:
    """Per top-level field, its array's items redacted (``ListMap``): a conversation
    resent as last turn's very items takes their redacted head whole."""
    lists: dict[str, ListMap[Item | JSON, JSON]] = {}

    def clean(item: Item | JSON) -> JSON:
        return item.clean(redactor) if isinstance(item, Item) else redactor.json(item)

    def of(key: str) -> ListMap[Item | JSON, JSON]:
        found = lists.get(key)
        if found is None:
            if len(lists) >= _LISTS:
                lists.clear()
            found = lists[key] = ListMap(clean)
        return found

    return of


_LISTS = 64
"""Top-level array fields whose redacted items are remembered at most."""


Piece = tuple[str, Item | JSON | list[Item | JSON]]
"""A top-level field: its name, and its value (remembered, when long) or, for an array,
its items."""


@dataclass(slots=True)
class Body:
    """A request body: its parsed ``value`` and, on demand, its redacted form."""

    raw: bytes
    value: JSON
    redactor: Redactor
    _pieces: list[Piece] | None = None
    new: bool = False  # it holds an item or long value that no recording holds
    lists: Callable[[str], ListMap[Item | JSON, JSON]] | None = None  # ``cleaned_lists``
    _clean: JSON = field(default=None)
    _cleaned: bool = False

    def redacted(self) -> JSON:
        """``redacted_body(redactor, raw)``, redacting only items not met before."""
        if not self._cleaned:
            self._clean = self._redact()
            self._cleaned = True
        return self._clean

    def redacting(self) -> Iterator[object]:
        """What ``redacted`` does, a step at a time: each remembered item redacted (a
        step each), then the rest. Items new to the reader of ``_ASIDE`` characters or
        more in all (a new conversation) are redacted on a worker thread, the step
        yielding its future until done: the regular expressions release the interpreter
        lock while they search, and on a run's first request, while their automata are
        built, one item can take milliseconds, which an answer coming in would wait for
        on the loop."""
        if self._cleaned:
            return
        new = [
            item
            for _, piece in self._pieces or ()
            for item in (piece if isinstance(piece, list) else (piece,))
            if isinstance(item, Item) and not item._cleaned
        ]
        if sum(item.unmet for item in new) >= _ASIDE:
            aside = _cleaned_aside(new, self.redactor)
            while aside is not None and not aside.done():
                yield aside
        for item in new:
            if not item._cleaned:  # what the worker left (it failed, or there is no loop)
                item.clean(self.redactor)
                yield None
        self.redacted()

    def _redact(self) -> JSON:
        if self._pieces is None:
            return redacted_body(self.redactor, self.raw, self.value)
        redactor = self.redactor
        lists = self.lists or cleaned_lists(redactor)
        out: dict[str, JSON] = {}
        for key, piece in self._pieces:
            value: JSON
            if isinstance(piece, list):
                value = lists(key)(piece)
            elif isinstance(piece, Item):
                value = clean_member(redactor, key, piece.value, piece)
            else:
                value = clean_member(redactor, key, piece, None)
            out[clean_name(redactor, key)] = value
        return out
