"""The exact-body index: recordings found by the request body itself, before building or
normalising its canonical request.

A key is the provider, the endpoint and a digest of the body as compact JSON, read piece
by piece: each top-level field's text, a list's items through ``core.memo.ListHash`` (an
earlier message of a conversation, the same object every turn, is hashed once). Equal keys
mean equal bodies, so their canonical requests (and normalised forms) are equal too.
Only recordings that know every component are indexed: a partial recording can match
requests whose bodies differ, which is for the component matcher to decide.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from otel_replay.core.exchange import ALL_KNOWN, Exchange
from otel_replay.core.memo import ListHash

__all__ = ["ExactIndex", "exact_key"]


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


_LISTS = ListHash(_compact)


def exact_key(provider: str, endpoint: str, body: dict[str, Any]) -> str:
    """Provider, endpoint and the sha256 of the body's fields: each name and value as
    compact JSON, a list by the digest of its text. TypeError / ValueError for a body
    without a JSON form."""
    found = hashlib.sha256()
    for name, value in body.items():
        found.update(_compact(name) + b":")
        if type(value) is list:
            found.update(b"#" + _LISTS.hexdigest(value).encode("ascii") + b",")
        else:
            found.update(_compact(value) + b",")
    return f"{provider} {endpoint} {found.hexdigest()}"


def text_size(body: dict[str, Any]) -> int:
    """The length in bytes of the body as compact JSON, from its fields' texts."""
    size = 1
    for name, value in body.items():
        size += len(_compact(name)) + 2
        size += _LISTS.size(value) if type(value) is list else len(_compact(value))
    return size + (not body)


RAW_MAX = 64 * 1024
"""A recorded body up to this size is also indexed by its text, the form SDKs send, so a
small request found as sent is not even parsed."""


class ExactIndex:
    """Recording indices by exact key, in recording order; small bodies by text too."""

    __slots__ = ("_keys", "_texts")  # texts: per (provider, endpoint), by their bytes

    def __init__(self, exchanges: Iterable[Exchange] = ()) -> None:
        self._keys: dict[str, list[int]] = {}
        self._texts: dict[tuple[str, str], dict[bytes, list[int]]] = {}
        for i, ex in enumerate(exchanges):
            self.add(i, ex)

    def __bool__(self) -> bool:
        return bool(self._keys)

    def add(self, index: int, exchange: Exchange) -> None:
        """Indexes recording ``index`` when its raw body is known and it knows everything
        in full (no lossy form)."""
        request = exchange.request
        if not isinstance(exchange.raw_request, dict) or request.known != ALL_KNOWN:
            return
        if request.views:
            return
        provider, endpoint, body = exchange.provider, request.endpoint, exchange.raw_request
        try:
            found = exact_key(provider, endpoint, body)
            if text_size(body) <= RAW_MAX:
                texts = self._texts.setdefault((provider, endpoint), {})
                texts.setdefault(_compact(body), []).append(index)
        except (TypeError, ValueError):
            return
        self._keys.setdefault(found, []).append(index)

    def for_raw(self, provider: str, endpoint: str, raw: bytes) -> list[int]:
        """Recordings whose body is the text of ``raw`` (a small JSON object's bytes,
        compared as they are: a recorded text is valid UTF-8, so equal bytes are it)."""
        texts = self._texts.get((provider, endpoint)) if len(raw) <= RAW_MAX else None
        return [] if texts is None else texts.get(raw, [])

    def for_body(self, provider: str, endpoint: str, body: Any) -> list[int]:
        """Recordings whose body equals the parsed ``body``."""
        if not self._keys or not isinstance(body, dict):
            return []
        try:
            return self._keys.get(exact_key(provider, endpoint, body), [])
        except (TypeError, ValueError):
            return []
