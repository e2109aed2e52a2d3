"""Attribute values as the span readers take them: events, provider names, JSON held in
attributes as text or as OTLP structures, and flattened ``prefix.N.key`` groups."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON
from otel_replay.core.ids import hex_id

Event = tuple[str, Mapping[str, Any], Any]
"""A GenAI event: its name, its attributes and its body (log records) or None."""


# --- small value helpers ----------------------------------------------------------------


def span_place(span: Span) -> dict[str, Any]:
    """Where an exchange read from ``span`` sits: its times and its trace, span and parent
    ids, as :class:`~otel_replay.core.exchange.Exchange` fields."""
    return {
        "start_ns": span.start_time_unix_nano,
        "end_ns": span.end_time_unix_nano,
        "trace_id": hex_id(span.trace_id),
        "span_id": hex_id(span.span_id),
        "parent_span_id": hex_id(span.parent_span_id),
    }


def span_attributes(span: Span) -> dict[str, Any]:
    from otel_replay.otlp.attributes import attributes_to_dict

    return dict(attributes_to_dict(span.attributes))


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_flag(value: Any) -> bool:
    """A boolean attribute, as a bool or as its text (litellm writes ``"False"``)."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def plain(value: Any) -> JSON:
    """Attribute values as JSON: tuples (OTel arrays) become lists; a double JSON has no
    number for (NaN, an infinity) becomes the string OTLP's JSON form writes it as."""
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return _NOT_FINITE[repr(value)]
    return value


def json_value(value: Any) -> JSON:
    """An attribute holding JSON: text that parses as an array or object is parsed;
    structured values (OTLP kvlist / array) are returned as plain JSON."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                return json.loads(text)
            except ValueError:
                return value
        return value
    return plain(value)


def provider_name(value: Any, model: Any = None) -> str | None:
    """Our provider name for a ``gen_ai.provider.name`` / ``gen_ai.system`` value; Vertex
    AI's names the API of the publisher of ``model`` (the request's model)."""
    return providers.api_named(value, model)


def tree(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys unflattened: ``tool_calls.0.name`` -> ``{"tool_calls": [{"name": …}]}``."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        node = root
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = plain(value)
    result = _lists(root)
    return result if isinstance(result, dict) else {"items": result}


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    fixed = {k: _lists(v) for k, v in node.items()}
    if fixed and all(k.isdigit() for k in fixed):
        return [fixed[k] for k in sorted(fixed, key=int)]
    return fixed


def indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix + "N.rest"`` attributes grouped by N, in order: one flat dict per index."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if index.isdigit() and rest:
            groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def with_details(attrs: Mapping[str, Any], events: Sequence[Event]) -> Mapping[str, Any]:
    """The span's attributes and those of a linked ``gen_ai.client.inference.operation.
    details`` event: the latest form's content, carried by a log record (the span's own
    values win)."""
    details = [a for name, a, _body in events if name == genai.DETAILS_EVENT]
    if not details:
        return attrs
    merged = dict(attrs)
    for event_attrs in details:
        merged.update({k: v for k, v in event_attrs.items() if k not in merged})
    return merged
