"""Placeholders, written in one place, keyed when ``OTEL_REPLAY_HMAC_KEY`` is set.

Unkeyed, a placeholder names the kind of secret alone (``[REDACTED:openai-key]``): every
secret of a kind reads the same. With a key, it also carries the first 8 hex digits of
HMAC-SHA256(key, secret) (``[REDACTED:openai-key:3f2a9c1b]``): the same secret gives the
same placeholder in every run and two different secrets differ, so a request that now
carries another secret misses, while nothing secret reaches disk (the digits say nothing
of the secret without the key). A cassette keeps the key's :attr:`~PlaceholderKey.
fingerprint` (an HMAC of a fixed label, which says nothing of the key), so a replay with
another key, or none, is told so instead of missing unexplained.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from otel_replay.core import envvars as ev

__all__ = [
    "FINGERPRINT_FIELD",
    "PlaceholderKey",
    "key_from_environment",
    "key_notice",
    "placeholder",
]

TAG_DIGITS = 8
"""Hex digits of the HMAC a keyed placeholder carries."""
FINGERPRINT_FIELD = "placeholder_key"
"""The cassette ``source`` field holding the fingerprint of the key its placeholders used."""
_FINGERPRINT_LABEL = b"otel-replay placeholder key fingerprint"
_FINGERPRINT_DIGITS = 16


class PlaceholderKey:
    """The key placeholders are made with. Its repr shows the fingerprint, never the key."""

    __slots__ = ("_key", "fingerprint")

    def __init__(self, key: str) -> None:
        self._key = key.encode("utf-8", "surrogatepass")
        digest = hmac.new(self._key, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()
        self.fingerprint = "hmac-sha256:" + digest[:_FINGERPRINT_DIGITS]

    def tag(self, secret: str) -> str:
        """The first 8 hex digits of HMAC-SHA256(key, secret)."""
        data = secret.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()[:TAG_DIGITS]

    def __repr__(self) -> str:
        return f"PlaceholderKey({self.fingerprint})"


def placeholder(kind: str, secret: str, key: PlaceholderKey | None = None) -> str:
    """The placeholder of ``secret``, a secret of ``kind`` (``openai-key``,
    ``env:MY_TOKEN``, ``header:authorization``...): every placeholder is written here."""
    if key is None:
        return f"[REDACTED:{kind}]"
    return f"[REDACTED:{kind}:{key.tag(secret)}]"


def key_from_environment(environ: Mapping[str, str]) -> PlaceholderKey | None:
    """The key ``OTEL_REPLAY_HMAC_KEY`` gives, or None when it is unset or empty."""
    value = environ.get(ev.OTEL_REPLAY_HMAC_KEY, "")
    return PlaceholderKey(value) if value else None


def key_notice(recorded: object, key: PlaceholderKey | None, cassette: object) -> str | None:
    """One line when a cassette's placeholders were made with another key than this
    run's (``recorded``: the fingerprint its ``source`` keeps, or None), else None."""
    ours = key.fingerprint if key is not None else None
    if recorded == ours or (recorded is None and ours is None):
        return None
    if recorded is None:
        return (
            f"otel-replay: {cassette} was recorded without {ev.OTEL_REPLAY_HMAC_KEY} and this "
            "run has one: its secrets' placeholders differ, so a request holding a secret "
            f"misses; unset {ev.OTEL_REPLAY_HMAC_KEY}, or record it again with the key"
        )
    if ours is None:
        return (
            f"otel-replay: {cassette} was recorded with {ev.OTEL_REPLAY_HMAC_KEY} "
            f"({recorded}) and this run has none: a request holding a secret misses; "
            "set the same key"
        )
    return (
        f"otel-replay: {cassette} was recorded with another {ev.OTEL_REPLAY_HMAC_KEY} "
        f"({recorded}; this run's is {ours}): a request holding a secret misses; "
        "set the same key"
    )
