"""Trace and span ids, and the short hashes miss messages show.

Ids travel as lower-case hex in exchanges and cassettes and as bytes in OTLP protobuf;
these are the only conversions between the two, and the only place new ids are made.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["hex_id", "id_bytes", "new_span_id", "new_trace_id", "short_hash"]

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
SHORT_HASH_DIGITS = 7


def new_trace_id() -> str:
    """A random 16-byte trace id, as 32 hex digits."""
    return secrets.token_hex(TRACE_ID_BYTES)


def new_span_id() -> str:
    """A random 8-byte span id, as 16 hex digits."""
    return secrets.token_hex(SPAN_ID_BYTES)


def hex_id(raw: bytes) -> str | None:
    """An OTLP id's hex form; None for an empty (absent) id."""
    return raw.hex() if raw else None


def id_bytes(hex_id: str | None, size: int) -> bytes:
    """An id's bytes for OTLP: the given hex id, or ``size`` random bytes when there is none."""
    if hex_id:
        return bytes.fromhex(hex_id)
    return secrets.token_bytes(size)


def short_hash(text: str) -> str:
    """The first 7 hex digits of the sha256 of ``text`` (UTF-8): what a miss message shows,
    so a reason can be checked by hand."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:SHORT_HASH_DIGITS]
