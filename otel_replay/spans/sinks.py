"""Where the span encoder puts typed attributes: straight onto a protobuf span, or into
the span's OTLP JSON document in the form ``codec.to_json`` gives the protobuf ones."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = ["JsonAttrs", "Sink", "SpanAttrs", "Unusual", "nanos"]


class Sink(Protocol):
    """Where the span encoder puts typed attributes: a protobuf span or OTLP JSON."""

    def text(self, key: str, value: str) -> None: ...

    def integer(self, key: str, value: int) -> None: ...

    def flag(self, key: str, value: bool) -> None: ...

    def double(self, key: str, value: float) -> None: ...

    def texts(self, key: str, values: Sequence[str]) -> None: ...


class SpanAttrs:
    """Appends typed attributes directly onto a span (no intermediate dict)."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def _add(self, key: str) -> AnyValue:
        kv = self._span.attributes.add()
        kv.key = key
        value: AnyValue = kv.value
        return value

    def text(self, key: str, value: str) -> None:
        self._add(key).string_value = value

    def integer(self, key: str, value: int) -> None:
        self._add(key).int_value = value

    def flag(self, key: str, value: bool) -> None:
        self._add(key).bool_value = value

    def double(self, key: str, value: float) -> None:
        self._add(key).double_value = value

    def texts(self, key: str, values: Sequence[str]) -> None:
        array = self._add(key).array_value
        for item in values:
            array.values.add().string_value = item


class Unusual(Exception):
    """A value the OTLP JSON encoder does not take the way protobuf would (a wrong type,
    an integer out of range): the caller goes through the protobuf span instead."""


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1


def _json_double(value: float) -> float | str:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return value


class JsonAttrs:
    """Appends attributes in the form ``codec.to_json`` gives the protobuf ones."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def text(self, key: str, value: str) -> None:
        if type(value) is not str:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"stringValue": value}})

    def integer(self, key: str, value: int) -> None:
        if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"intValue": str(value)}})

    def flag(self, key: str, value: bool) -> None:
        if type(value) is not bool:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"boolValue": value}})

    def double(self, key: str, value: float) -> None:
        if type(value) is not float:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"doubleValue": _json_double(value)}})

    def texts(self, key: str, values: Sequence[str]) -> None:
        if not values:  # an empty array leaves the attribute without a value
            self.items.append({"key": key})
            return
        items: list[dict[str, Any]] = []
        for item in values:
            if type(item) is not str:
                raise Unusual(key)
            items.append({"stringValue": item})
        self.items.append({"key": key, "value": {"arrayValue": {"values": items}}})


def nanos(value: int) -> str:
    """A time in nanoseconds as OTLP JSON writes it (an unsigned 64-bit integer)."""
    if type(value) is not int or not 0 <= value <= _UINT64_MAX:
        raise Unusual("time")
    return str(value)
