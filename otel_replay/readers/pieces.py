"""Long strings stored once per trace file, read back (``spans.pieces`` writes them).

Reading a trace file in order, :class:`Pieces` takes in the pieces each of otel-replay's
spans stores (in place in its GenAI attributes, or beside its body) and gives a span whose
body is a template the exact body again, as ``otel_replay.request.body``. A span stores
its pieces no later than the first span that refers to them, so files read in order
(rotated ones oldest first, as ``build`` reads them) always resolve.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.errors import TraceFormatError
from otel_replay.otlp import codec
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.spans import attributes as own

__all__ = ["Pieces"]

_CARRIERS = frozenset({own.PIECES, own.PIECES_INLINE, own.REQUEST_TEMPLATE})


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
    """The pieces read so far, by id."""

    __slots__ = ("_text",)

    def __init__(self) -> None:
        self._text: dict[str, str] = {}

    def absorb(self, span: Span) -> dict[str, Any] | None:
        """Take in the pieces ``span`` stores; its attributes when it stores or uses any
        (so the caller need not decode them again), else None."""
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
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            raise TraceFormatError(_where(span), f"corrupt otel_replay pieces: {exc}") from exc
        return attrs

    def expand(self, span: Span, attrs: dict[str, Any]) -> dict[str, Any]:
        """``attrs`` with the exact body (``otel_replay.request.body``) put back together
        from its template; unchanged when the span stores its body whole."""
        if own.REQUEST_TEMPLATE not in attrs or own.REQUEST_BODY in attrs:
            return attrs
        try:
            body = _json(attrs, own.REQUEST_TEMPLATE)
            for path, piece in _json(attrs, own.REQUEST_REFS):
                text = self._text.get(piece)
                if text is None:
                    raise TraceFormatError(
                        _where(span),
                        f"its request refers to piece {piece}, stored by an earlier span "
                        "that is not in the files read: read the whole trace file, and the "
                        "files it continues (oldest first)",
                    )
                if not path:
                    body = text
                else:
                    _at(body, path[:-1])[path[-1]] = text
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            raise TraceFormatError(_where(span), f"corrupt otel_replay template: {exc}") from exc
        return {**attrs, own.REQUEST_BODY: codec.value_text(body)}
