"""The exact-body index: recordings found by the request body as sent, before any parsing
or normalising.

SDKs send compact JSON in a stable key order, so a repeated request is often the recorded
text itself. A key is the provider, the endpoint and the body as compact JSON: equal keys
mean equal requests, so their canonical requests (and normalised forms) are equal too.
Only recordings that know every component are indexed: a partial recording can match
requests whose bodies differ, which is for the component matcher to decide.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from otel_replay.core.exchange import ALL_KNOWN, Exchange

__all__ = ["ExactIndex", "exact_key"]


def exact_key(provider: str, endpoint: str, body: dict[str, Any]) -> str:
    """Provider, endpoint and the body as compact JSON text (the form SDKs send)."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return f"{provider} {endpoint} {text}"


class ExactIndex:
    """Recording indices by exact key, in recording order."""

    __slots__ = ("_keys",)

    def __init__(self, exchanges: Iterable[Exchange] = ()) -> None:
        self._keys: dict[str, list[int]] = {}
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
        try:
            found = exact_key(exchange.provider, exchange.request.endpoint, exchange.raw_request)
        except (TypeError, ValueError):
            return
        self._keys.setdefault(found, []).append(index)

    def for_body(self, provider: str, endpoint: str, body: Any) -> list[int]:
        """Recordings whose body equals the parsed ``body``."""
        if not self._keys or not isinstance(body, dict):
            return []
        try:
            return self._keys.get(exact_key(provider, endpoint, body), [])
        except (TypeError, ValueError):
            return []

    def for_raw(self, provider: str, endpoint: str, raw: bytes) -> list[int]:
        """Recordings whose body is the text of ``raw`` (a JSON object's bytes)."""
        if not self._keys or not raw.startswith(b"{"):
            return []
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return []
        return self._keys.get(f"{provider} {endpoint} {text}", [])
