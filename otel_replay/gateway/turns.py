"""A coding agent's next turn replayed by what it adds to its last one.

A coding agent's request is its last one with messages added: the same bytes up to the
end of its conversation's array (or up to its last item, which Claude Code sends again
without its cache marker), new items, then the same members to the end (the same bytes,
or for Codex, whose ``client_metadata`` is a hash map, the same values with their keys in
another order). ``Turns`` finds that by comparing the two bodies' bytes, reads only the
new items (``Bodies.read_item``: an
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
from otel_replay.core.jsontext import value_key
from otel_replay.gateway.bodies import Bodies
from otel_replay.gateway.body import Item
from otel_replay.gateway.call import BodyTooDeep, Call
from otel_replay.matching.continuation import Continuations
from otel_replay.providers.base import Provider
from otel_replay.providers.conversation import item_messages
from otel_replay.session.session import Session

__all__ = ["Turns"]

_WS = re.compile(r"[ \t\n\r]*")
_BLANK = re.compile(rb"[ \t\n\r]*")


@dataclass(frozen=True, slots=True)
class _Last:
    """The last request matched under a key: its bytes, and whether it asked for a stream
    (as its next turn, the same but for its array, does)."""

    raw: bytes
    asks_stream: bool
    index: int  # the recording it replayed


class Turns:
    """The turns of ``session``'s conversations, read with ``reader``."""

    def __init__(self, session: Session, reader: Bodies) -> None:
        self.session = session
        self.reader = reader
        self.continuations = Continuations(
            session.matcher, lambda index: session.recording(index).request
        )
        self._last: dict[Hashable, _Last] = {}
        self._members: tuple[bytes, bytes] | None = None  # a body's, after its array
        self.followed = 0
        """Turns matched by what they add (for tests and benchmarks)."""

    def matched(self, call: Call, index: int) -> None:
        """The full path matched ``call`` (read by ``reader``) to recording ``index``, by
        the matcher or by its exact body (a turn sent as recorded)."""
        key = (call.provider.name, call.path)
        if call.reading is None or item_messages(call.provider.name, call.operation) is None:
            self._forget(key)
            return
        self._last[key] = _Last(call.raw, call.asks_stream, index)
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
        index = None if grown is None else self._match(key, last.index, *grown, convert)
        if index is None:
            self._forget(key)
            return None
        self._last[key] = _Last(raw, last.asks_stream, index)
        self.followed += 1
        return index, last.asks_stream

    def prepare(self, provider: Provider, path: str) -> None:
        """Makes ahead what the next turn of the conversation last matched for
        ``provider`` and ``path`` needs (``Continuations.prepare``)."""
        if (provider.name, path) in self._last:
            self.continuations.prepare((provider.name, path))

    def _match(
        self,
        key: Hashable,
        last: int,
        kept: int,
        items: list[Item | JSON],
        convert: Callable[[JSON], JSON],
    ) -> int | None:
        redactor = self.session.redactor
        added = [
            convert(item.clean(redactor) if isinstance(item, Item) else redactor.json(item))
            for item in items
        ]
        # the same members as the last body: it continues the response the last one did
        chain = self.session.chain
        return self.continuations.follow(key, kept, added, lambda found: chain.alike(found, last))

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
        # after the last item, or after the one before it (the last sent again, changed)
        for cut, kept in ((end, len(items)), (before_last, len(items) - 1)):
            if kept < 1 or not raw.startswith(body[:cut]):
                continue
            new: list[Item | JSON] = []
            rest = body[end:]
            try:
                # the same members after the array are as long (Codex's reordered too)
                stop = len(raw) - len(rest)
                before = self.reader.read_run(raw, cut, stop, new) if stop > cut else None
                if before is None:
                    new.clear()
                    text = raw[cut:].decode("latin-1")
                    read = self._items(text, new)
                    if read is None:
                        return None
                    before, stop = cut + read[0], cut + read[1]
            except (ValueError, StopIteration, RecursionError, BodyTooDeep):
                return None
            if not self._same_rest(raw, stop, last, rest):
                return None
            self.reader.grew(field, raw, (start, stop, before), [*items[:kept], *new])
            return kept, new
        return None

    def _same_rest(self, raw: bytes, at: int, last: bytes, rest: memoryview) -> bool:
        """Whether ``raw`` after its array's last item (at ``at``) is ``rest``, the last
        body's: the same bytes, or the same members with the same values in another order
        (Codex writes its ``client_metadata`` from a hash map, its keys in a new order
        each request). The last body's members are kept from its own turn."""
        known = self._members
        theirs = known[1] if known is not None and known[0] is last else None
        if len(raw) - at == len(rest) and raw.endswith(rest):
            self._members = None if theirs is None else (raw, theirs)
            return True
        ours = _members(raw[at:])
        if ours is None or ours != (_members(bytes(rest)) if theirs is None else theirs):
            return False
        self._members = (raw, ours)
        return True

    def _items(self, text: str, new: list[Item | JSON]) -> tuple[int, int] | None:
        """Reads the items ``text`` (a character per byte) begins with, each after a
        comma, up to the array's end, into ``new``: where the one before the last ends
        (0: before the text) and where the last does; None when ``text`` does not begin
        so."""
        i, before, end = 0, 0, 0
        while True:
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
            if text.startswith("]", i) and end:
                return before, end
            if not text.startswith(",", i):
                return None
            i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            before, end = end, self.reader.read_item(text, i, new)
            i = end


def _members(rest: bytes) -> bytes | None:
    """The members that follow an array's last item to the body's end
    (``] , "k": v … }``), as ``value_key`` gives them: equal for the same members with the
    same values in any order; None when ``rest`` is not such."""
    i = _BLANK.match(rest).end()  # type: ignore[union-attr]
    if not rest.startswith(b"]", i):
        return None
    i = _BLANK.match(rest, i + 1).end()  # type: ignore[union-attr]
    if rest.startswith(b",", i):
        return value_key(b"{" + rest[i + 1 :])
    if rest.startswith(b"}", i) and _BLANK.match(rest, i + 1).end() == len(rest):  # type: ignore[union-attr]
        return b"{}"
    return None
