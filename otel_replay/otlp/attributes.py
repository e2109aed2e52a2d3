"""OTLP attributes and AnyValues as Python values, and back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

__all__ = ["any_value_to_python", "attributes_to_dict", "dict_to_attributes", "python_to_any_value"]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def any_value_to_python(value: AnyValue) -> Any:
    """An AnyValue as a Python value: str, bool, int, float, bytes, list, dict or None."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value_to_python(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_to_dict(value.kvlist_value.values)
    return getattr(value, kind)


def attributes_to_dict(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    """OTLP attributes as a dict; a repeated key keeps its last value."""
    return {kv.key: any_value_to_python(kv.value) for kv in kvs}


def python_to_any_value(obj: Any) -> AnyValue:
    """A Python value as an AnyValue; ints beyond int64 and unknown types become strings."""
    if obj is None:
        return AnyValue()
    if isinstance(obj, bool):
        return AnyValue(bool_value=obj)
    if isinstance(obj, int):
        if _INT64_MIN <= obj <= _INT64_MAX:
            return AnyValue(int_value=obj)
        return AnyValue(string_value=str(obj))
    if isinstance(obj, float):
        return AnyValue(double_value=obj)
    if isinstance(obj, str):
        return AnyValue(string_value=obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return AnyValue(bytes_value=bytes(obj))
    if isinstance(obj, Mapping):
        return AnyValue(kvlist_value=KeyValueList(values=dict_to_attributes(obj)))
    if isinstance(obj, list | tuple):
        return AnyValue(array_value=ArrayValue(values=[python_to_any_value(v) for v in obj]))
    return AnyValue(string_value=str(obj))


def dict_to_attributes(d: Mapping[str, Any]) -> list[KeyValue]:
    """The reverse of ``attributes_to_dict``."""
    return [KeyValue(key=str(k), value=python_to_any_value(v)) for k, v in d.items()]
