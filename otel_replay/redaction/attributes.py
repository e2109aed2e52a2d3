"""Telemetry attributes named like a secret: an OTLP document's values under such a name
hold placeholders, whatever the value looks like.

An attribute is a ``{"key": NAME, "value": ANYVALUE}`` pair (on a span, a span event, a
log record, a resource; and inside a ``kvlistValue`` at any depth), so a secret under it
never reads ``"name": "value"`` in the line's text, the form the secret shapes know. The
trace store finds the names of a line's attributes with one pass over it
(:func:`names_a_secret`) and, when one names a secret (``aws_secret_access_key``,
``API_TOKEN_FILE_CONTENT``, ``db.password``: :func:`~otel_replay.redaction.names.
is_secret_field`), rewrites the document (:func:`scrub_secret_attributes`).
"""

from __future__ import annotations

import functools
import re

from otel_replay.core.exchange import JSON
from otel_replay.redaction.headers import scrub_attributes
from otel_replay.redaction.keyed import PlaceholderKey
from otel_replay.redaction.names import credential_like, is_secret_field

__all__ = ["names_a_secret", "scrub_secret_attributes"]

_KEY_MARK = '"key":"'
"""How an attribute's name begins in a compact OTLP JSON line."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@functools.lru_cache(maxsize=4096)
def _secret(name: str) -> bool:
    return is_secret_field(name)


def names_a_secret(text: str) -> bool:
    """Whether a compact OTLP JSON line holds an attribute whose name marks a secret (one
    pass of ``str.find`` over the line; each distinct name is judged once)."""
    at = text.find(_KEY_MARK)
    while at >= 0:
        start = at + len(_KEY_MARK)
        end = text.find('"', start)
        if end < 0:
            return False
        if _secret(text[start:end]):
            return True
        at = text.find(_KEY_MARK, end)
    return False


def scrub_secret_attributes(node: JSON, key: PlaceholderKey | None = None) -> JSON:
    """An OTLP JSON document (or part of one) whose attributes named like a secret hold
    ``[REDACTED:attribute:NAME]`` (keyed with ``key``) in place of each string value that
    looks like a credential (8 characters or more, no spaces)."""
    return scrub_attributes(node, _kind, credential_like, key)


def _kind(name: str) -> str | None:
    return f"attribute:{_UNSAFE.sub('_', name)}" if _secret(name) else None
