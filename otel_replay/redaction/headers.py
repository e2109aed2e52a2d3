"""Credential-bearing headers: never recorded, and scrubbed from header attributes."""

from __future__ import annotations

from collections.abc import Callable

from otel_replay.core.exchange import JSON

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


def scrub_header_attributes(node: JSON) -> JSON:
    """An OTLP JSON document (or part of one) whose credential-bearing header attributes
    (``http.request.header.api-key``, ``...authorization``: any name
    :func:`is_sensitive_header` accepts, ``_`` read as ``-``) hold placeholders instead of
    their values, which need not look like secrets (an Azure key is 32 hex digits)."""
    if isinstance(node, list):
        return [scrub_header_attributes(item) for item in node]
    if not isinstance(node, dict):
        return node
    return scrub_attributes(node, _header_placeholder, lambda value: True)


def _header_placeholder(key: str) -> str | None:
    if not key.startswith(HEADER_ATTRIBUTE_PREFIXES):
        return None
    name = key.split(".header.", 1)[1]
    return f"[REDACTED:header:{name}]" if is_sensitive_header(name.replace("_", "-")) else None


def scrub_attributes(
    node: JSON, placeholder_for: Callable[[str], str | None], hides: Callable[[str], bool]
) -> JSON:
    """An OTLP JSON document (or part of one) whose attributes (``{"key", "value"}``
    pairs, at any depth) with a name ``placeholder_for`` gives a placeholder hold it in
    place of each string value that ``hides`` accepts."""
    if isinstance(node, list):
        return [scrub_attributes(item, placeholder_for, hides) for item in node]
    if not isinstance(node, dict):
        return node
    key = node.get("key")
    if isinstance(key, str) and "value" in node:
        placeholder = placeholder_for(key)
        if placeholder is not None:
            return {**node, "value": _placeholders(node["value"], placeholder, hides)}
    return {k: scrub_attributes(v, placeholder_for, hides) for k, v in node.items()}


def _placeholders(value: JSON, placeholder: str, hides: Callable[[str], bool]) -> JSON:
    """An OTLP AnyValue (JSON form) with every string ``hides`` accepts replaced by
    ``placeholder``."""
    if isinstance(value, dict):
        return {
            k: placeholder
            if k == "stringValue" and isinstance(v, str) and hides(v)
            else _placeholders(v, placeholder, hides)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_placeholders(item, placeholder, hides) for item in value]
    return value
