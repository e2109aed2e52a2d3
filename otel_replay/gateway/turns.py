"""A coding agent's next turn replayed by what it adds to its last one.

A coding agent's request is its last one with messages added: the same bytes up to the
end of its conversation's array (or up to its last item, which Claude Code sends again
without its cache marker), new items, then the same bytes to the end. ``Turns`` finds that
by comparing the two bodies' bytes, reads only the new items (``Bodies.read_item``: an
item met before is the very same object, its redaction done once), makes them canonical messages
(``providers.conversation``) and has ``matching.continuation`` match the turn by them.
Anything else (another field changed, a body not read before, a provider whose messages
are not made item by item) is left to the full path, which gives the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from otel_replay.core.exchange import JSON
from otel_replay.gateway.bodies import Bodies
from otel_replay.gateway.body import Item
from otel_replay.gateway.call import BodyTooDeep, Call
from otel_replay.matching.continuation import Continuations
from otel_replay.providers.base import Provider
from otel_replay.providers.conversation import item_messages
from otel_replay.session.session import Session

__all__ = ["Turns"]

_WS = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True, slots=True)
class _Last:
    """The last request matched under a key: its bytes, and whether it asked for a stream
    (as its next turn, the same but for its array, does)."""

    raw: bytes
    asks_stream: bool


class Turns:
    """The turns of ``session``'s conversations, read with ``reader``."""

    def __init__(self, session: Session, reader: Bodies) -> None:
        self.session = session
        self.reader = reader
        self.continuations = Continuations(
            session.matcher, lambda index: session.recording(index).request
        )
        self._last: dict[Hashable, _Last] = {}
        self.followed = 0
        """Turns matched by what they add (for tests and benchmarks)."""

    def matched(self, call: Call, index: int) -> None:
        """The full path matched ``call`` (read by ``reader``) to recording ``index``."""
        key = (call.provider.name, call.path)
        if call.reading is None or item_messages(call.provider.name, call.operation) is None:
            self._forget(key)
            return
        self._last[key] = _Last(call.raw, call.asks_stream)
        self.continuations.matched(key, call.canonical, index)

    def follow(self, provider: Provider, path: str, raw: bytes) -> tuple[int, bool] | None:
        """The recording the full path would consume for the body ``raw``, consumed, and
        whether the call asks for a stream; None when this cannot tell (nothing
        consumed)."""
        key = (provider.name, path)
        last = self._last.get(key)
        if last is None:
            return None
        found = item_messages(provider.name, provider.operation(path))
        assert found is not None  # ``matched`` kept only such calls
        field, convert = found
        grown = self._grown(raw, field, last.raw)
        index = None if grown is None else self._match(key, *grown, convert)
        if index is None:
            self._forget(key)
            return None
        self._last[key] = _Last(raw, last.asks_stream)
        self.followed += 1
        return index, last.asks_stream

    def _match(
        self, key: Hashable, kept: int, items: list[Item | JSON], convert: Callable[[JSON], JSON]
    ) -> int | None:
        redactor = self.session.redactor
        added = [
            convert(item.clean(redactor) if isinstance(item, Item) else redactor.json(item))
            for item in items
        ]
        return self.continuations.follow(key, kept, added, lambda _: True)

    def _forget(self, key: Hashable) -> None:
        self._last.pop(key, None)
        self.continuations.forget(key)

    def _grown(self, raw: bytes, field: str, last: bytes) -> tuple[int, list[Item | JSON]] | None:
        """How many of the last body's items under ``field`` ``raw`` keeps, and the items
        it has after them, when it is that body with only those changed (then taken by
        the reader for its last body); None otherwise."""
        known = self.reader.last_array(field)
        if known is None or known[0][0] is not last:
            return None
        (_, start, end, before_last), items = known
        body = memoryview(last)
        tail = body[end:]
        stop = len(raw) - len(tail)
        if not raw.endswith(tail):
            return None
        # after the last item, or after the one before it (the last sent again, changed)
        for cut, kept in ((end, len(items)), (before_last, len(items) - 1)):
            if kept < 1 or cut > stop or not raw.startswith(body[:cut]):
                continue
            new: list[Item | JSON] = []
            try:
                before = self._items(raw[cut:stop].decode("latin-1"), new)
            except (ValueError, StopIteration, RecursionError, BodyTooDeep):
                return None  # UnicodeDecodeError included
            if before is None:
                return None
            self.reader.grew(field, raw, (start, stop, cut + before), [*items[:kept], *new])
            return kept, new
        return None

    def _items(self, text: str, new: list[Item | JSON]) -> int | None:
        """Reads the items ``text`` (a character per byte) lists, each after a comma,
        into ``new``; where the one before the last ends (0: before the text), None when
        ``text`` is not such a list."""
        i, before = 0, 0
        while True:
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
            if not text.startswith(",", i):
                return None
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            end = self.reader.read_item(text, i, new)
            i = _WS.match(text, end).end()  # type: ignore[union-attr]
            if i == len(text):
                return before
            before = end
