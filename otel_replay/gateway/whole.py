"""A new conversation's items read in one orjson pass.

The piecewise reader (``bodies.py``) finds where each array item it has not met ends by
reading it with the standard library's scanner, and reads an item holding non-ASCII
text a second time, from its UTF-8. A body none of whose text it has met yet (the first
request of a new conversation) is mostly such items. For those, ``Whole`` reads the body
once with orjson and hands the reader the item's value when the bytes at its place are
exactly orjson's writing of it (what coding agents send: compact JSON, UTF-8, the
standard escapes): that text is the item's, as a complete object or array ends where
its first bracket closes, and the standard library reads it as that value too (orjson
reads an integer beyond 64 bits as a float, which it writes otherwise; where orjson
refuses the body, NaN or a lone surrogate, nothing is read so). Any other item is left
to the scanner.
"""

from __future__ import annotations

from typing import Any

import orjson

from otel_replay.core.exchange import JSON
from otel_replay.core.jsontext import orjson_text

__all__ = ["Whole"]

_UNREAD = object()


class Whole:
    """The top-level arrays of the body ``raw``, read by orjson when first asked."""

    __slots__ = ("_raw", "_value")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._value: Any = _UNREAD

    def item(self, key: str, n: int, at: int) -> tuple[JSON, int] | None:
        """The ``n``-th item of the array under ``key`` and where it ends, when the body's
        bytes from ``at`` are orjson's writing of it (an object or an array); None
        otherwise (the scanner reads it)."""
        if self._value is _UNREAD:
            try:
                self._value = orjson.loads(self._raw)
            except orjson.JSONDecodeError:
                self._value = None
        array = self._value.get(key) if type(self._value) is dict else None
        if type(array) is not list or n >= len(array):
            return None
        value = array[n]
        if type(value) is not dict and type(value) is not list:
            return None
        written = orjson_text(value)
        if written is None or not self._raw.startswith(written, at):
            return None
        return value, at + len(written)
