"""What the body reader (``bodies.py``) remembers: the items it met, by their text, and
their long members, by their value's text.

An item is remembered under its text as the reader sees it (a character per byte) and
found again by that text, or, before it is read, by its first characters and then its
bytes (``at``). An object item new to the reader may still hold members met before: an
agent sends each turn's items with fresh ids around the same content (Codex's tool list
and instructions, each item a fresh ``id``; a tool's output under a fresh call). Such an
item's object and array members whose compact JSON (orjson's) is long and equals one met
before are the very objects met before (``share``), so the stages that remember their
work by identity (redaction here, ``Item.clean``) do it once per member, not once per
item. Equal compact JSON is equal JSON, types and key order included, so the member
handed out is the value that was sent (orjson writes NaN as ``null``, but no value here
holds one: a request is read refusing NaN, and a recorded item holding one has no JSON
form, so it is not remembered).

Recorded bodies prime it (``prime``): their items under the texts an SDK writes them in,
their members as above, each redacted once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from otel_replay.core.exchange import JSON
from otel_replay.core.jsontext import orjson_text
from otel_replay.gateway.body import Item
from otel_replay.gateway.call import BodyTooDeep, nests_deeper
from otel_replay.redaction.redact import Redactor

__all__ = ["LONG_VALUE", "Remembered", "check_depth", "texts_of"]

LONG_VALUE = 256
"""A value whose text is this long or longer is remembered: a top-level value like an
array item, an item's member on its own."""
_MAX_CHARS = 32 * 1024 * 1024
"""Text remembered at most (items' bytes, about as much again in parsed values); past it
the memory starts afresh."""
_HEAD = 96
"""Characters of an object or array item by which it is first looked up, before it is
read: one met before (a recorded tool call, sent again in a later session) is found by
comparing its bytes, not scanned."""
_SAME_HEAD = 4
"""Items kept under one head: a conversation's tool results may begin alike for longer
(and an item with non-ASCII text is remembered as sent and escaped)."""
_PRIME_CHARS = 16 * 1024 * 1024
"""Recorded text written out at most to prime: the whole of a cassette whose interactions
share their items (format 2), the first recordings of one that repeats them."""


class Remembered:
    """Items met in bodies read with one redactor, by their text, and their members."""

    def __init__(self, redactor: Redactor, max_depth: int) -> None:
        self.redactor = redactor
        self.max_depth = max_depth
        self._items: dict[str, Item] = {}
        # object and array items by their first _HEAD characters (the last few met)
        self._heads: dict[str, list[Item]] = {}
        self._members: dict[bytes, Item] = {}
        self.chars = 0

    def get(self, text: str) -> Item | None:
        return self._items.get(text)

    def at(self, text: str, i: int, room: int) -> Item | None:
        """The item met before that ``text`` holds at ``i`` (an object or array), found by
        its first characters and bytes; None when there is none."""
        for found in self._heads.get(text[i : i + _HEAD], ()):
            if text.startswith(found.text, i):
                fits(found, room, self.max_depth)
                return found
        return None

    def add(self, item: Item) -> bool:
        """Remembers ``item``, a new one; False when the memory was full and started
        afresh first (what the reader keeps of the last bodies is then stale too)."""
        afresh = self.chars + len(item.text) > _MAX_CHARS
        if afresh:
            self._items.clear()
            self._heads.clear()
            self._members.clear()
            self.chars = 0
        self._remember(item)
        return not afresh

    def _remember(self, item: Item) -> None:
        self._items[item.text] = item
        self.chars += len(item.text)
        if len(item.text) > _HEAD and item.text.startswith(("{", "[")):
            same = self._heads.setdefault(item.text[:_HEAD], [])
            if len(same) >= _SAME_HEAD:
                del same[0]
            same.append(item)

    def share(self, item: Item) -> None:
        """``item``'s long object and array members met before made the very objects met
        before (a new item's value is the reader's own: changed in place before it is
        handed out), those not met yet remembered; ``item.members`` names them."""
        value = item.value
        if type(value) is not dict:
            return
        members: dict[str, Item] = {}
        for key, member in value.items():
            if type(member) is not dict and type(member) is not list:
                continue
            text = orjson_text(member)
            if text is None or len(text) < LONG_VALUE:
                continue
            found = self._members.get(text)
            if found is None:
                found = Item("", member, item.room - 1, item.recorded, size=len(text))
                self._members[text] = found
                self.chars += len(text)
            else:
                if found.value is not member:
                    if item.recorded:  # a recording's own values are not changed
                        continue
                    value[key] = found.value
                item.shared += len(text)
            members[key] = found
        if members:
            item.members = members

    def primed(self, items: list[JSON]) -> list[Item | JSON]:
        """Each of a recorded array's ``items`` as remembered under the text an SDK
        writes it in (``prime``), or itself when not."""
        found: list[Item | JSON] = []
        for item in items:
            texts = texts_of(item)
            primed = self._items.get(texts[0]) if texts else None
            found.append(item if primed is None else primed)
        return found

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
                room, places, least = self.max_depth - 1, [value], LONG_VALUE
                if type(value) is list:
                    room, places, kinds, least = room - 1, value, (dict, list), 0
                for item in places:
                    if type(item) not in kinds or (id(item), least) in done:
                        continue
                    done.add((id(item), least))
                    for text in texts_of(item):
                        written += len(text)
                        if written > _PRIME_CHARS:
                            return written
                        if text in self._items or len(text) < least:
                            continue
                        try:
                            check_depth(item, room, self.max_depth)
                        except BodyTooDeep:
                            break
                        primed = Item(text, item, room, recorded=True)
                        self._remember(primed)
                        self.share(primed)
                        primed.clean(self.redactor)
        return written


def fits(item: Item, room: int, limit: int) -> None:
    """BodyTooDeep when ``item``, met before, does not fit in ``room`` levels here."""
    if item.room > room:  # met before at a shallower place
        check_depth(item.value, room, limit)
        item.room = room


def texts_of(item: JSON) -> list[str]:
    """The compact JSON texts SDKs write ``item`` in (non-ASCII as is or escaped) as the
    reader sees them, a character per UTF-8 byte; none when it has no JSON form."""
    try:
        escaped = json.dumps(item, separators=(",", ":"), allow_nan=False)
        plain = json.dumps(item, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return [escaped] if plain == escaped else [_as_read(plain), escaped]
    except (TypeError, ValueError):  # UnicodeEncodeError: a lone surrogate
        return []


def _as_read(text: str) -> str:
    """``text`` as the reader sees it in a body: its UTF-8 bytes, a character each."""
    return text.encode("utf-8").decode("latin-1")


def check_depth(value: JSON, room: int, limit: int) -> None:
    """BodyTooDeep when ``value``, ``limit - room`` levels in, takes the body past ``limit``."""
    if room < 0 or nests_deeper(value, room):
        raise BodyTooDeep(limit)
