"""Long strings and lists stored once per trace file, read back (``spans.pieces`` and
``spans.lists`` write them).

Reading a trace file in order, :class:`Pieces` takes in the pieces each of otel-replay's
spans stores (in place in its GenAI attributes, or beside its body) and the lists its body
makes known, and gives a span whose body is a template the exact body again, as
``otel_replay.request.body``: each piece's marker replaced by its text, then each list
that begins with an earlier span's list given that list's first items. A span stores its
pieces and lists no later than the first span that refers to them, so files read in order
(rotated ones oldest first, as ``build`` reads them) always resolve.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core import jsontext
from otel_replay.core.errors import TraceFormatError
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.spans import attributes as own

__all__ = ["Pieces"]

_CARRIERS = frozenset({own.PIECES, own.PIECES_INLINE, own.REQUEST_TEMPLATE})
_ERRORS = (KeyError, IndexError, ValueError, TypeError, AttributeError)
_WHOLE = (
    "stored by an earlier span that is not in the files read: read the whole trace file, "
    "and the files it continues (oldest first)"
)


def _json(attrs: Mapping[str, Any], key: str) -> Any:
    text = attrs[key]
    if not isinstance(text, str):
        raise ValueError(f"{key} is not a string")
    return json.loads(text)


def _at(value: Any, path: list[Any]) -> Any:
    for step in path:
        value = value[step]
    return value


def _where(span: Span) -> str:
    return f"span {span.span_id.hex() or '?'} ({span.name})"


class Pieces:
    """The pieces and lists read so far, by id."""

    __slots__ = ("_built", "_lists", "_text")

    def __init__(self) -> None:
        self._text: dict[str, str] = {}
        self._lists: dict[str, list[Any]] = {}
        self._built: tuple[Span, Any] | None = None  # the body the last span made known

    def absorb(self, span: Span) -> dict[str, Any] | None:
        """Take in the pieces and lists ``span`` stores; its attributes when it stores or
        uses any (so the caller need not decode them again), else None."""
        self._built = None
        if not any(kv.key in _CARRIERS for kv in span.attributes):
            return None
        attrs = attributes_to_dict(span.attributes)
        try:
            if own.PIECES in attrs:
                loose = _json(attrs, own.PIECES)
                self._text.update((str(k), str(v)) for k, v in loose.items())
            if own.PIECES_INLINE in attrs:
                values: dict[str, Any] = {}
                for attribute, path, piece in _json(attrs, own.PIECES_INLINE):
                    if attribute not in values:
                        values[attribute] = _json(attrs, attribute)
                    text = _at(values[attribute], path)
                    if not isinstance(text, str):
                        raise ValueError(f"piece {piece} in {attribute} is not a string")
                    self._text[piece] = text
        except _ERRORS as exc:
            raise TraceFormatError(_where(span), f"corrupt otel_replay pieces: {exc}") from exc
        if own.REQUEST_LISTS in attrs and own.REQUEST_BODY not in attrs:
            body = self._body(span, attrs)
            try:
                for path, made, _, _ in _json(attrs, own.REQUEST_LISTS):
                    if made is not None:
                        self._lists[str(made)] = _at(body, path)
            except _ERRORS as exc:
                raise TraceFormatError(_where(span), f"corrupt otel_replay lists: {exc}") from exc
            self._built = (span, body)
        return attrs

    def expand(self, span: Span, attrs: dict[str, Any]) -> dict[str, Any]:
        """``attrs`` with the exact body (``otel_replay.request.body``) put back together
        from its template; unchanged when the span stores its body whole."""
        if own.REQUEST_TEMPLATE not in attrs or own.REQUEST_BODY in attrs:
            return attrs
        built = self._built
        body = built[1] if built is not None and built[0] is span else self._body(span, attrs)
        return {**attrs, own.REQUEST_BODY: jsontext.value_text(body)}

    def _body(self, span: Span, attrs: dict[str, Any]) -> Any:
        """The body the span's template, pieces and lists make."""
        try:
            body = _json(attrs, own.REQUEST_TEMPLATE)
            for path, piece in _json(attrs, own.REQUEST_REFS):
                text = self._text.get(piece)
                if text is None:
                    raise TraceFormatError(
                        _where(span), f"its request refers to piece {piece}, {_WHOLE}"
                    )
                if not path:
                    body = text
                else:
                    _at(body, path[:-1])[path[-1]] = text
            if own.REQUEST_LISTS in attrs:
                # in reverse: a list inside another's new items is filled before that
                # one's first items move them
                for path, _, earlier, count in reversed(_json(attrs, own.REQUEST_LISTS)):
                    if earlier is None:
                        continue
                    if count is None:  # the whole field is an earlier object
                        self._put(span, body, path, str(earlier))
                    else:
                        self._splice(span, _at(body, path), str(earlier), count)
        except _ERRORS as exc:
            raise TraceFormatError(_where(span), f"corrupt otel_replay template: {exc}") from exc
        return body

    def _earlier(self, span: Span, earlier: str) -> Any:
        found = self._lists.get(earlier)
        if found is None:
            raise TraceFormatError(_where(span), f"its request refers to list {earlier}, {_WHOLE}")
        return found

    def _put(self, span: Span, body: Any, path: list[Any], earlier: str) -> None:
        """The object ``earlier`` in place of its marker at ``path``."""
        found = self._earlier(span, earlier)
        if not path or _at(body, path) != own.PIECE_MARKER + earlier or type(found) is not dict:
            raise ValueError(f"object {earlier} does not fit where it is referred to")
        _at(body, path[:-1])[path[-1]] = found

    def _splice(self, span: Span, items: list[Any], earlier: str, count: Any) -> None:
        """``items``, whose first element stands for the first ``count`` items of the list
        ``earlier``, given them."""
        found = self._earlier(span, earlier)
        if (
            type(found) is not list
            or type(items) is not list
            or not items
            or items[0] != own.PIECE_MARKER + earlier
            or type(count) is not int
            or not 0 < count <= len(found)
        ):
            raise ValueError(f"list {earlier} does not fit where it is referred to")
        items[0:1] = found[:count]
