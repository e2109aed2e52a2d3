"""Request bodies read piece by piece: each item of a top-level array parsed and redacted
once, however many requests repeat it.

A coding agent resends its whole conversation every turn: the same system prompt, tools
and earlier messages, byte for byte, then what is new. ``Bodies`` reads the top level of a
JSON object body itself and, for each object or array item of a top-level array, reuses
what it found for the same text before: the parsed value (the very same object, so later
stages remember their own work by identity), its redacted form and that it nests within
the limit. Only new items are parsed, redacted and measured; the item the previous body
had at the same place is tried first, by comparing bytes, so a resent history is not even
hashed. The result equals what ``parse_body`` and ``redacted_body`` give; a body this
reading does not cover (not a JSON object, not UTF-8, malformed) goes to them.

The body is read as bytes: its text here is ``raw.decode("latin-1")``, a character per
byte, made at the speed of a copy (decoding UTF-8 reads every character, and one
character past U+FFFF makes the whole string four bytes a character), so its offsets are
the body's own and a resent run is compared as bytes. JSON's structure is ASCII, so the
scanner finds where every value ends in this text; a value whose bytes are not ASCII is
read again from them as UTF-8 (``_utf8``). A new conversation's items are read in one
orjson pass instead (``whole.Whole``).

Values handed out are shared between requests: no stage may change them in place (none
does; the redactor, normaliser and providers build new values).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.jsontext import STRICT, orjson_own
from otel_replay.core.limits import MAX_BODY_DEPTH
from otel_replay.gateway.body import Body, Item, Piece, cleaned_lists
from otel_replay.gateway.call import parse_body
from otel_replay.gateway.items import LONG_VALUE, Remembered, check_depth, fits
from otel_replay.gateway.whole import Whole
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session

__all__ = ["Bodies", "Body"]

_WS = re.compile(r"[ \t\n\r]*")
_BLANK = frozenset(" \t\n\r")
_AFTER_ITEM = frozenset(" \t\n\r,]")  # what may follow an array's item
_Items = Sequence[Item | JSON]
_SCAN: Any = STRICT.scan_once  # type: ignore[attr-defined]  # the C scanner; no NaN
_COLLECT_AFTER = 1 << 18
"""Recorded text (characters) past which the collector runs once primed: its first full
collection walks everything loaded (tens of milliseconds for a long coding session)."""


class _Unread(Exception):
    """The body is not read piecewise (the whole-body path decides what it is)."""


class Bodies:
    """Reads request bodies for one redactor, remembering array items by their text."""

    def __init__(self, redactor: Redactor, max_depth: int = MAX_BODY_DEPTH) -> None:
        self.redactor = redactor
        self.max_depth = max_depth
        self._cleaned = cleaned_lists(redactor)
        self._met = Remembered(redactor, max_depth)
        self._last: dict[str, list[Item | JSON]] = {}
        # per key: the last array's body, its start, its end and its last item's start,
        # its items' count, and whether one of them is no recording's
        self._runs: dict[str, tuple[bytes, int, int, int, int, bool]] = {}
        self._raw = b""
        self._whole = Whole(b"")
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

        # a paused collector is left to whoever paused it (the CLI's start freezes it all)
        if bodies.prime(requests()) >= _COLLECT_AFTER and gc.isenabled():
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
                self._last[key] = self._met.primed(value)
                self._runs.pop(key, None)

    def prime(self, bodies: Iterable[JSON]) -> int:
        """Remembers the recorded ``bodies``' items (``Remembered.prime``); returns the
        characters of recorded text it went through."""
        return self._met.prime(bodies)

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
        # content no recording holds in the layout recorded (fresh values in a resent
        # conversation): the matcher, which gives the same answer, decides without the
        # body being hashed twice
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

    def last_array(self, key: str) -> tuple[tuple[bytes, int, int, int], list[Item | JSON]] | None:
        """The last array read under ``key``: its body, its start, its end and its last
        item's start, and its items; None when not known."""
        run, items = self._runs.get(key), self._last.get(key)
        if run is None or items is None or len(items) != run[4]:
            return None
        return run[:4], list(items)

    def read_item(self, text: str, i: int, items: list[Item | JSON]) -> int:
        """Reads an array's item at ``text[i]`` (a character per byte) into ``items`` as
        ``read`` does: met before, the very same item; the index after it (ValueError
        and the like when there is none, BodyTooDeep)."""
        return self._next_item(text, i, self.max_depth - 1, items, ())

    def read_run(self, raw: bytes, start: int, stop: int, items: list[Item | JSON]) -> int | None:
        """Reads the items ``raw[start:stop]`` holds, each after a comma (an array's items
        after its first), into ``items`` as ``read_item`` does: those met before found by
        their bytes, the rest all at once when their text is orjson's own
        (``orjson_own``); where the last one but one ends (``start`` for one item), or
        None when they are not so written (nothing read)."""
        if raw[start : start + 1] != b",":
            return None
        text, room = raw[start:stop].decode("latin-1"), self.max_depth - 2
        met: list[Item] = []
        at, before = 0, 0
        while at < len(text):  # an agent's new items most often sent before (recorded)
            found = self._met.at(text, at + 1, room) if text.startswith(",", at) else None
            if found is None:
                break
            met.append(found)
            before, at = at, at + 1 + len(found.text)
        rest: list[tuple[JSON, bytes]] | None = [] if at == len(text) else None
        if at < len(text) and text.startswith(",", at):
            rest = orjson_own(raw[start + at + 1 : stop])
        if rest is None:
            return None
        for item in met:
            self._met_again(item)
        items.extend(met)
        for value, written in rest:
            before, at = at, at + 1 + len(written)
            if type(value) is dict or type(value) is list:
                items.append(self._item(written.decode("latin-1"), value, room, decoded=True))
            else:
                check_depth(value, room, self.max_depth)
                items.append(value)
        return start + before

    def grew(
        self, key: str, raw: bytes, place: tuple[int, int, int], items: list[Item | JSON]
    ) -> None:
        """``raw`` taken for the last body read, its array ``key`` at ``place`` (start,
        end, last item's start) holding ``items``."""
        start, end, last = place
        self._raw, self._last[key] = raw, items
        self._runs[key] = (raw, start, end, last, len(items), True)
        self.reusing = True

    def read(self, raw: bytes) -> Body:
        """The body of ``raw``; :class:`BodyTooDeep` when it nests beyond the limit."""
        self._met_new = False
        self._reused = 0
        self._whole = Whole(raw)
        try:
            self._raw = raw
            value, pieces = self._read(raw.decode("latin-1"))
        except (_Unread, UnicodeDecodeError, ValueError, StopIteration, RecursionError):
            self.reusing = False
            return Body(raw, parse_body(raw, self.max_depth), self.redactor)
        self.reusing = 2 * self._reused >= len(raw)
        return Body(raw, value, self.redactor, pieces, self._met_new, lists=self._cleaned)

    def _read(self, text: str) -> tuple[dict[str, JSON], list[Piece]]:
        i = _WS.match(text, 0).end()  # type: ignore[union-attr]
        if not text.startswith("{", i):
            raise _Unread
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        value: dict[str, JSON] = {}
        pieces: list[Piece] = []
        room = self.max_depth - 1  # the levels left inside the body's own braces
        while True:
            if not text.startswith('"', i):
                raise _Unread
            start = i
            key, i = _SCAN(text, i)
            key = _utf8(text, start, i, key)
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
            if not text.startswith(":", i):
                raise _Unread
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            piece: Item | JSON | list[Item | JSON]
            if text.startswith("[", i):
                items, i = self._array(key, text, i, room)
                item: JSON = [p.value if isinstance(p, Item) else p for p in items]
                piece = items
            else:
                start = i
                item, i = _SCAN(text, i)
                if i - start >= LONG_VALUE:  # instructions, a system prompt: the same object
                    piece = self._item(text[start:i], item, room)
                    item = piece.value
                else:
                    item = _utf8(text, start, i, item)
                    check_depth(item, room, self.max_depth)
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

    def _array(self, key: str, text: str, i: int, room: int) -> tuple[list[Item | JSON], int]:
        """The items of the array at ``text[i]``, and the index after it. When the array
        begins with the last one read under ``key``, whole or but for its last item (a
        conversation resent, its last turn's own message replaced), those items are
        taken with one comparison of the bodies' bytes (no copy)."""
        last = self._last.get(key, ())
        items: list[Item | JSON] = []
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        if text.startswith("]", i):
            self._last[key] = items
            self._runs.pop(key, None)
            return items, i + 1
        match = _WS.match
        start, ends = i, [0, 0]  # where the last two items read end
        met_new, self._met_new = self._met_new, False  # this array's own, then the body's
        taken = self._resent(key, text, i)
        if taken is not None:
            count, size, inner, fresh = taken
            items.extend(last[:count])
            self._reused += size
            self._met_new = fresh
            ends = [i + inner if inner >= 0 else -1, i + size]
            i += size
        else:
            i = self._next_item(text, i, room, items, last, key)
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
                i = self._next_item(text, i, room, items, last, key)
                ends = [ends[1], i]
                continue
            if after == "]":
                self._last[key] = items
                fresh = self._met_new
                if ends[0] >= 0:
                    self._runs[key] = (self._raw, start, ends[1], ends[0], len(items), fresh)
                else:
                    self._runs.pop(key, None)
                self._met_new = met_new or fresh
                return items, i + 1
            raise _Unread

    def _next_item(
        self, text: str, i: int, room: int, items: list[Item | JSON], last: _Items, key: str = ""
    ) -> int:
        """Reads the item at ``text[i]`` of the array under ``key`` into ``items`` (the one
        the last array had at that place, when its text is there); the index after it."""
        n = len(items)
        before = last[n] if n < len(last) else None
        if not isinstance(before, Item) or not text.startswith(before.text, i):
            before = self._met.at(text, i, room - 1)  # met elsewhere
        if before is not None:
            items.append(before)
            self._met_again(before)
            return i + len(before.text)
        whole = self._whole.item(key, n, i) if key and not self._reused else None
        if whole is not None:  # nothing of the body met yet: a new conversation
            items.append(self._item(text[i : whole[1]], whole[0], room - 1, decoded=True))
            return whole[1]
        begin = i
        parsed, i = _SCAN(text, i)
        if text.startswith(("{", "["), begin):
            items.append(self._item(text[begin:i], parsed, room - 1))
        else:
            parsed = _utf8(text, begin, i, parsed)
            check_depth(parsed, room - 1, self.max_depth)
            items.append(parsed)
        return i

    def _resent(self, key: str, text: str, i: int) -> tuple[int, int, int, bool] | None:
        """(items, bytes, where the last item but one of them ends: -1 when not known,
        whether one of the run is no recording's) of the last array under ``key`` that
        the array at ``i`` begins with, whole or but for its last item; None when
        neither."""
        run = self._runs.get(key)
        if run is None:
            return None
        raw, start, end, but_last, count, fresh = run
        view = memoryview(raw)
        for stop, items, inner in ((end, count, but_last - start), (but_last, count - 1, -1)):
            size = stop - start
            if items > 0 and self._raw.startswith(view[start:stop], i):
                if text[i + size : i + size + 1] in _AFTER_ITEM:  # the item ends there
                    return items, size, inner, fresh
        return None

    def _met_again(self, item: Item) -> None:
        """Counts ``item``, met before, in the body being read."""
        self._reused += len(item.text)
        self._met_new = self._met_new or not item.recorded

    def _item(self, text: str, parsed: JSON, room: int, decoded: bool = False) -> Item:
        """The item whose text (a character per byte) is ``text``, ``parsed`` from it (read
        from its UTF-8 when ``decoded``, else from ``text``)."""
        found = self._met.get(text)
        if found is not None:
            self._met_again(found)
            fits(found, room, self.max_depth)
            return found
        if not decoded and not text.isascii():  # read again from its UTF-8
            parsed = _SCAN(text.encode("latin-1").decode("utf-8"), 0)[0]
        check_depth(parsed, room, self.max_depth)
        item = Item(text, parsed, room)
        self._met_new = True
        if not self._met.add(item):  # the memory started afresh
            self._last.clear()
            self._runs.clear()
        self._met.share(item)
        return item


def _utf8(text: str, start: int, end: int, scanned: JSON) -> JSON:
    """The value at ``text[start:end]`` that the scanner read as ``scanned``: itself when
    those bytes are ASCII, else read again from them as UTF-8 (UnicodeDecodeError when
    they are not)."""
    segment = text[start:end]
    if segment.isascii():
        return scanned
    value: JSON = _SCAN(segment.encode("latin-1").decode("utf-8"), 0)[0]
    return value
