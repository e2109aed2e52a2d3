"""Request bodies read piece by piece: each item of a top-level array parsed and redacted
once, however many requests repeat it.

A coding agent resends its whole conversation every turn: the same system prompt, tools
and earlier messages, byte for byte, then what is new. ``Bodies`` reads the top level of a
JSON object body itself and, for each object or array item of a top-level array, reuses
what it found for the same text before: the parsed value (the very same object, so later
stages remember their own work by identity), its redacted form and that it nests within
the limit. Only new items are parsed, redacted and measured; the item the previous body
had at the same place is tried first, by comparing text, so a resent history is not even
hashed. The result equals what ``parse_body`` and ``redacted_body`` give; a body this
reading does not cover (not a JSON object, not UTF-8, malformed) goes to them.

Values handed out are shared between requests: no stage may change them in place (none
does; the redactor, normaliser and providers build new values).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.jsontext import STRICT
from otel_replay.core.limits import MAX_BODY_DEPTH
from otel_replay.gateway.call import BodyTooDeep, nests_deeper, parse_body, redacted_body
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session

__all__ = ["Bodies", "Body"]

log = logging.getLogger("otel_replay.gateway")

_WS = re.compile(r"[ \t\n\r]*")
_BLANK = frozenset(" \t\n\r")
_AFTER_ITEM = frozenset(" \t\n\r,]")  # what may follow an array's item
_SCAN: Any = STRICT.scan_once  # type: ignore[attr-defined]  # the C scanner; no NaN
_MAX_CHARS = 32 * 1024 * 1024
"""Text remembered at most (items' text, about as much again in parsed values); past it
the memory starts afresh."""
_COLLECT_AFTER = 1 << 18
"""Recorded text (characters) past which the collector runs once primed: its first full
collection walks everything loaded (tens of milliseconds for a long coding session)."""
_LONG_VALUE = 256
"""A top-level value whose text is this long or longer is remembered like an array item."""
_ASIDE = 16 * 1024
"""Characters of new items a body holds from which they are redacted on a worker thread."""
_PRIME_CHARS = 16 * 1024 * 1024
"""Recorded text written out at most to prime: the whole of a cassette whose interactions
share their items (format 2), the first recordings of one that repeats them."""


class _Unread(Exception):
    """The body is not read piecewise (the whole-body path decides what it is)."""


@dataclass(slots=True)
class _Item:
    text: str
    value: JSON
    room: int  # the levels it was checked to fit in
    _clean: JSON = None
    _cleaned: bool = False

    def clean(self, redactor: Redactor) -> JSON:
        if not self._cleaned:
            self._clean = redactor.json(self.value, size=len(self.text))
            self._cleaned = True
        return self._clean


def _clean_all(items: list[_Item], redactor: Redactor) -> None:
    for item in items:
        item.clean(redactor)


def _cleaned_aside(items: list[_Item], redactor: Redactor) -> asyncio.Future[None] | None:
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


_Piece = tuple[str, _Item | JSON | list[_Item | JSON]]
"""A top-level field: its name, and its value (remembered, when long) or, for an array,
its items."""


@dataclass(slots=True)
class Body:
    """A request body: its parsed ``value`` and, on demand, its redacted form."""

    raw: bytes
    value: JSON
    redactor: Redactor
    _pieces: list[_Piece] | None = None
    new: bool = False  # it holds an item or long value whose text was not met before
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
            if isinstance(item, _Item) and not item._cleaned
        ]
        if sum(len(item.text) for item in new) >= _ASIDE:
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
        clean = self.redactor.json
        out: dict[str, JSON] = {}
        for key, piece in self._pieces:
            value: JSON
            if isinstance(piece, _Item):
                value = piece.clean(self.redactor)
            elif isinstance(piece, list):
                value = [
                    item.clean(self.redactor) if isinstance(item, _Item) else clean(item)
                    for item in piece
                ]
            else:
                value = clean(piece)
            name = clean(key)
            out[name if isinstance(name, str) else key] = value
        return out


class Bodies:
    """Reads request bodies for one redactor, remembering array items by their text."""

    def __init__(self, redactor: Redactor, max_depth: int = MAX_BODY_DEPTH) -> None:
        self.redactor = redactor
        self.max_depth = max_depth
        self._items: dict[str, _Item] = {}
        self._chars = 0
        self._last: dict[str, list[_Item | JSON]] = {}
        # per key: the last array's body (ASCII), its start, its end and its last item's
        # start, and its items' count
        self._runs: dict[str, tuple[bytes, int, int, int, int]] = {}
        self._raw: bytes | None = None
        self._met_new = False
        self._reused = 0  # characters of the body being read found remembered
        self.reusing = False
        """Whether the last body read was mostly remembered text (a conversation resent
        turn after turn): the next is then read fastest this way, in time proportional
        to what it adds."""

    @classmethod
    def primed(
        cls, redactor: Redactor, recorded: Iterable[Exchange], max_depth: int = MAX_BODY_DEPTH
    ) -> Bodies:
        """A reader primed with the recordings' bodies; after a large cassette, the
        cyclic garbage collector runs once now rather than during the first requests."""
        bodies = cls(redactor, max_depth)
        first: list[JSON] = []

        def requests() -> Iterator[JSON]:
            for exchange in recorded:
                if not first:
                    first.append(exchange.raw_request)
                yield exchange.raw_request

        if bodies.prime(requests()) >= _COLLECT_AFTER:
            gc.collect()
        if first and isinstance(first[0], dict):
            bodies.prime_last(first[0])
        return bodies

    def prime_last(self, body: dict[str, JSON]) -> None:
        """Takes a recorded body's arrays for the last ones read: a replay's first request,
        most often the first recorded one with fresh values, then finds its repeated items
        in place, as every later request does."""
        for key, value in body.items():
            if type(value) is list:
                last: list[_Item | JSON] = []
                for item in value:
                    texts = _texts(item)
                    primed = self._items.get(texts[0]) if texts else None
                    last.append(item if primed is None else primed)
                self._last[key] = last
                self._runs.pop(key, None)

    def prime(self, bodies: Iterable[JSON]) -> int:
        """Remembers the array items and long top-level values of recorded bodies under
        the texts an SDK writes them in (compact JSON, non-ASCII as is or escaped),
        handing out the recorded objects themselves: the first request after start then
        costs what a later one does, as the work done on recordings when the cassette was
        indexed is found by identity. A value that would not pass the depth check is
        left out. Returns the characters of recorded text it went through."""
        done: set[tuple[int, int]] = set()  # (item, at an array's place or on its own)
        written = 0
        for body in bodies:
            if not isinstance(body, dict):
                continue
            for value in body.values():
                # an array's object and array items; a long object or string on its own
                kinds: tuple[type, ...] = (dict, str)
                room, places, least = self.max_depth - 1, [value], _LONG_VALUE
                if type(value) is list:
                    room, places, kinds, least = room - 1, value, (dict, list), 0
                for item in places:
                    if type(item) not in kinds or (id(item), least) in done:
                        continue
                    done.add((id(item), least))
                    for text in _texts(item):
                        written += len(text)
                        if written > _PRIME_CHARS:
                            return written
                        if text in self._items or len(text) < least:
                            continue
                        try:
                            _check(item, room, self.max_depth)
                        except BodyTooDeep:
                            break
                        primed = self._items[text] = _Item(text, item, room)
                        primed.clean(self.redactor)
                        self._chars += len(text)
        return written

    def for_call(
        self,
        session: Session,
        provider: str,
        path: str,
        raw: bytes,
        exact_first: bool,
        matching: bool,
        tried: bool = False,
    ) -> tuple[JSON, int | None, Body | None]:
        """A provider call's body (redacted when ``matching``), the recording it replays
        at once when identical to a recorded (hence redacted) one, and its reading (None
        for a small body found as sent, which is not even read). ``tried``: its bytes
        were already looked up, and found nothing."""
        exact = session.exact_hit_raw(provider, path, raw) if exact_first and not tried else None
        if exact is not None:
            return session.recordings.request_body(exact), exact, None
        read = self.read(raw)
        # new content is not recorded content in the layout recorded: the matcher, which
        # gives the same answer, decides without the body being hashed twice
        if exact_first and not read.new:
            exact = session.exact_hit(provider, path, read.value)
        body = read.redacted() if exact is None and matching else read.value
        return body, exact, read

    def later(self, raw: bytes) -> Callable[[], tuple[JSON, Body]]:
        """Reads ``raw`` when called (a body ``within_depth``): its value, and how to
        redact it."""

        def read() -> tuple[JSON, Body]:
            body = self.read(raw)
            return body.value, body

        return read

    def read(self, raw: bytes) -> Body:
        """The body of ``raw``; :class:`BodyTooDeep` when it nests beyond the limit."""
        self._met_new = False
        self._reused = 0
        try:
            text = raw.decode("utf-8")
            self._raw = raw if len(text) == len(raw) else None  # ASCII: offsets agree
            value, pieces = self._read(text)
        except (_Unread, UnicodeDecodeError, ValueError, StopIteration, RecursionError):
            self.reusing = False
            return Body(raw, parse_body(raw, self.max_depth), self.redactor)
        self.reusing = 2 * self._reused >= len(text)
        return Body(raw, value, self.redactor, pieces, self._met_new)

    def _read(self, text: str) -> tuple[dict[str, JSON], list[_Piece]]:
        i = _WS.match(text, 0).end()  # type: ignore[union-attr]
        if not text.startswith("{", i):
            raise _Unread
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        value: dict[str, JSON] = {}
        pieces: list[_Piece] = []
        room = self.max_depth - 1  # the levels left inside the body's own braces
        while True:
            if not text.startswith('"', i):
                raise _Unread
            key, i = _SCAN(text, i)
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
            if not text.startswith(":", i):
                raise _Unread
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            piece: _Item | JSON | list[_Item | JSON]
            if text.startswith("[", i):
                items, i = self._array(key, text, i, room)
                item: JSON = [p.value if isinstance(p, _Item) else p for p in items]
                piece = items
            else:
                start = i
                item, i = _SCAN(text, i)
                if i - start >= _LONG_VALUE:  # instructions, a system prompt: the same object
                    piece = self._item(text[start:i], item, room)
                    item = piece.value
                else:
                    _check(item, room, self.max_depth)
                    piece = item
            value[key] = item
            pieces.append((key, piece))
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
            if text.startswith(",", i):
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                continue
            if text.startswith("}", i):
                break
            raise _Unread
        if _WS.match(text, i + 1).end() != len(text):  # type: ignore[union-attr]
            raise _Unread
        if len(value) != len(pieces):  # a repeated key: the whole-body path decides
            raise _Unread
        return value, pieces

    def _array(self, key: str, text: str, i: int, room: int) -> tuple[list[_Item | JSON], int]:
        """The items of the array at ``text[i]``, and the index after it. When the array
        begins with the last one read under ``key``, whole or but for its last item (a
        conversation resent, its last turn's own message replaced), those items are
        taken with one comparison of the bodies' bytes (ASCII bodies: no copy)."""
        last = self._last.get(key, ())
        items: list[_Item | JSON] = []
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        if text.startswith("]", i):
            self._last[key] = items
            self._runs.pop(key, None)
            return items, i + 1
        match = _WS.match
        start, ends = i, [0, 0]  # where the last two items read end
        taken = self._resent(key, text, i)
        if taken is not None:
            count, size, inner = taken
            items.extend(last[:count])
            self._reused += size
            ends = [i + inner if inner >= 0 else -1, i + size]
            i += size
        else:
            i = self._next_item(text, i, room, items, last)
            ends[1] = i
        while True:
            after = text[i : i + 1]
            if after in _BLANK:
                i = match(text, i).end()  # type: ignore[union-attr]
                after = text[i : i + 1]
            if after == ",":
                i += 1
                if text[i : i + 1] in _BLANK:
                    i = match(text, i).end()  # type: ignore[union-attr]
                i = self._next_item(text, i, room, items, last)
                ends = [ends[1], i]
                continue
            if after == "]":
                self._last[key] = items
                if self._raw is not None and ends[0] >= 0:
                    self._runs[key] = (self._raw, start, ends[1], ends[0], len(items))
                else:
                    self._runs.pop(key, None)
                return items, i + 1
            raise _Unread

    def _next_item(
        self, text: str, i: int, room: int, items: list[_Item | JSON], last: Sequence[_Item | JSON]
    ) -> int:
        """Reads the item at ``text[i]`` into ``items`` (the one the last array had at that
        place, when its text is there); the index after it."""
        n = len(items)
        before = last[n] if n < len(last) else None
        if isinstance(before, _Item) and text.startswith(before.text, i):
            items.append(before)
            self._reused += len(before.text)
            return i + len(before.text)
        begin = i
        parsed, i = _SCAN(text, i)
        if text.startswith(("{", "["), begin):
            items.append(self._item(text[begin:i], parsed, room - 1))
        else:
            _check(parsed, room - 1, self.max_depth)
            items.append(parsed)
        return i

    def _resent(self, key: str, text: str, i: int) -> tuple[int, int, int] | None:
        """(items, characters, where the last item but one of them ends: -1 when not
        known) of the last array under ``key`` that the array at ``i`` begins with,
        whole or but for its last item; None when neither (or not ASCII)."""
        run = self._runs.get(key)
        if run is None or self._raw is None:
            return None
        raw, start, end, but_last, count = run
        view = memoryview(raw)
        for stop, items, inner in ((end, count, but_last - start), (but_last, count - 1, -1)):
            size = stop - start
            if items > 0 and self._raw.startswith(view[start:stop], i):
                if text[i + size : i + size + 1] in _AFTER_ITEM:  # the item ends there
                    return items, size, inner
        return None

    def _item(self, text: str, parsed: JSON, room: int) -> _Item:
        found = self._items.get(text)
        if found is not None:
            self._reused += len(text)
            if found.room > room:  # met before at a shallower place
                _check(found.value, room, self.max_depth)
                found.room = room
            return found
        _check(parsed, room, self.max_depth)
        item = _Item(text, parsed, room)
        self._met_new = True
        if self._chars + len(text) > _MAX_CHARS:
            self._items.clear()
            self._last.clear()
            self._runs.clear()
            self._chars = 0
        self._items[text] = item
        self._chars += len(text)
        return item


def _texts(item: JSON) -> list[str]:
    """The compact JSON texts SDKs write ``item`` in; none when it has no JSON form."""
    try:
        plain = json.dumps(item, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        escaped = json.dumps(item, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return []
    return [plain] if plain == escaped else [plain, escaped]


def _check(value: JSON, room: int, limit: int) -> None:
    """BodyTooDeep when ``value``, ``limit - room`` levels in, takes the body past ``limit``."""
    if room < 0 or nests_deeper(value, room):
        raise BodyTooDeep(limit)
