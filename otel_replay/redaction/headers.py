"""Credential-bearing headers: never recorded, and scrubbed from header attributes."""

from __future__ import annotations

from otel_replay.core.exchange import JSON

__all__ = [
    "HEADER_ATTRIBUTE_PREFIXES",
    "SENSITIVE_HEADERS",
    "is_sensitive_header",
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
    key = node.get("key")
    if isinstance(key, str) and key.startswith(HEADER_ATTRIBUTE_PREFIXES) and "value" in node:
        name = key.split(".header.", 1)[1]
        if is_sensitive_header(name.replace("_", "-")):
            placeholder = f"[REDACTED:header:{name}]"
            return {**node, "value": _placeholders(node["value"], placeholder)}
    return {k: scrub_header_attributes(v) for k, v in node.items()}


def _placeholders(value: JSON, placeholder: str) -> JSON:
    """An OTLP AnyValue (JSON form) with every string replaced by ``placeholder``."""
    if isinstance(value, dict):
        return {
            k: placeholder if k == "stringValue" else _placeholders(v, placeholder)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_placeholders(item, placeholder) for item in value]
    return value
