"""Credential-bearing headers: never recorded, and scrubbed from header attributes."""

from __future__ import annotations

from collections.abc import Callable

from otel_replay.core.exchange import JSON
from otel_replay.redaction.keyed import PlaceholderKey, placeholder

__all__ = [
    "HEADER_ATTRIBUTE_PREFIXES",
    "SENSITIVE_HEADERS",
    "is_sensitive_header",
    "scrub_attributes",
    "scrub_header_attributes",
]

SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-auth-token",
        "x-amz-security-token",
        "x-csrf-token",
    }
)
_SENSITIVE_HEADER_SUFFIXES = ("-key", "-token", "-secret", "-password", "-signature")


def is_sensitive_header(name: str) -> bool:
    """Whether a header carries credentials and must never be recorded."""
    lower = name.lower()
    return lower in SENSITIVE_HEADERS or lower.endswith(_SENSITIVE_HEADER_SUFFIXES)


HEADER_ATTRIBUTE_PREFIXES = ("http.request.header.", "http.response.header.")


def scrub_header_attributes(node: JSON, key: PlaceholderKey | None = None) -> JSON:
    """An OTLP JSON document (or part of one) whose credential-bearing header attributes
    (``http.request.header.api-key``, ``...authorization``: any name
    :func:`is_sensitive_header` accepts, ``_`` read as ``-``) hold placeholders instead of
    their values, which need not look like secrets (an Azure key is 32 hex digits);
    ``key``: the placeholders' key (``keyed.py``)."""
    if isinstance(node, list):
        return [scrub_header_attributes(item, key) for item in node]
    if not isinstance(node, dict):
        return node
    return scrub_attributes(node, _header_kind, lambda value: True, key)


def _header_kind(key: str) -> str | None:
    if not key.startswith(HEADER_ATTRIBUTE_PREFIXES):
        return None
    name = key.split(".header.", 1)[1]
    return f"header:{name}" if is_sensitive_header(name.replace("_", "-")) else None


def scrub_attributes(
    node: JSON,
    kind_of: Callable[[str], str | None],
    hides: Callable[[str], bool],
    key: PlaceholderKey | None = None,
) -> JSON:
    """An OTLP JSON document (or part of one) whose attributes (``{"key", "value"}``
    pairs, at any depth) with a name ``kind_of`` gives a kind of secret hold its
    placeholder (keyed with ``key``) in place of each string value that ``hides``
    accepts."""
    if isinstance(node, list):
        return [scrub_attributes(item, kind_of, hides, key) for item in node]
    if not isinstance(node, dict):
        return node
    name = node.get("key")
    if isinstance(name, str) and "value" in node:
        kind = kind_of(name)
        if kind is not None:
            return {**node, "value": _placeholders(node["value"], kind, hides, key)}
    return {k: scrub_attributes(v, kind_of, hides, key) for k, v in node.items()}


def _placeholders(
    value: JSON, kind: str, hides: Callable[[str], bool], key: PlaceholderKey | None
) -> JSON:
    """An OTLP AnyValue (JSON form) with every string ``hides`` accepts replaced by its
    placeholder as a secret of ``kind``."""
    if isinstance(value, dict):
        return {
            k: placeholder(kind, v, key)
            if k == "stringValue" and isinstance(v, str) and hides(v)
            else _placeholders(v, kind, hides, key)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_placeholders(item, kind, hides, key) for item in value]
    return value
