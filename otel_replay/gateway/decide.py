"""What the gateway does with one request, decided without any I/O.

:func:`decide` maps the facts about a call — the mode, whether its path is a provider's,
what matching found, whether it carries the gateway's own key — to a :class:`Decision`;
the aiohttp handlers in ``app`` only carry it out. :func:`carries_own_key` is the auto
mode's key check, over header values alone.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from otel_replay import providers
from otel_replay.core import envvars as ev
from otel_replay.core.errors import ReplayMiss
from otel_replay.providers.spec import CredentialHeader

__all__ = ["Action", "Decision", "OwnKeys", "carries_own_key", "decide", "lowered", "matches"]

Action = Literal["replay", "forward", "miss", "not_provider"]


@dataclass(frozen=True, slots=True)
class Decision:
    """``replay`` the recording at ``index``; ``forward`` live and record; answer a
    ``miss``; or ``not_provider``: the path is no provider API's (neither a miss nor live)."""

    action: Action
    index: int | None = None
    miss: ReplayMiss | None = None


def matches(mode: str) -> bool:
    """Whether a call is matched against the cassette in ``mode`` (record mode forwards
    everything, so it never looks)."""
    return mode != "record"


def decide(
    mode: str,
    *,
    routed: bool,
    match: int | ReplayMiss | None,
    own_key: bool,
    live: bool = False,
) -> Decision:
    """The decision for one call.

    ``routed``: its path is under a provider's mount. ``match``: the recording that
    matched, or the miss (None when the mode does not match, or for a live call).
    ``own_key``: it carries exactly one of the gateway's own credentials for its upstream.
    ``live``: a ``live`` rule covers it, so in auto mode it goes to the provider (with the
    gateway's own key, like any auto-mode forward) whatever the cassette holds.
    """
    if not routed:
        return Decision("not_provider")
    if not matches(mode) or (mode == "auto" and live and own_key):
        return Decision("forward")
    if match is None:
        raise ValueError(f"a call in {mode} mode is decided only after matching")
    if not isinstance(match, ReplayMiss):
        return Decision("replay", index=match)
    if mode == "auto" and own_key:
        return Decision("forward", miss=match)
    return Decision("miss", miss=match)


def lowered(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with lower-case names (a repeated header: its last value), as the
    credential checks read them."""
    return {k.lower(): v for k, v in headers.items()}


def offered_credential(headers: Mapping[str, str], known: Iterable[CredentialHeader]) -> str:
    """The credential a request offers: the first of the ``known`` headers it carries."""
    for header in known:
        value = header.value(headers)
        if value:
            return value
    return ""


def carries_own_key(
    headers: Mapping[str, str], known: Iterable[CredentialHeader], keys: Iterable[bytes]
) -> bool:
    """Whether the credential a request offers (lower-case header names) is exactly one of
    ``keys``, compared in constant time."""
    offered = offered_credential(headers, known)
    given = offered.encode()
    return bool(offered) and any(secrets.compare_digest(given, key) for key in keys)


class OwnKeys:
    """The caller's own credentials per upstream, read once from ``env``: auto mode
    forwards a miss only when the request offers exactly one of them."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._keys: dict[str, tuple[bytes, ...]] = {}

    def offered(self, upstream: str, headers: Mapping[str, str]) -> bool:
        """Whether the request offers one of the caller's keys in its upstream's headers."""
        row = providers.upstream_spec(upstream)
        if row is None:
            return False
        if row.minted_credentials:  # a token its SDK minted: the caller's unless ours
            offered = offered_credential(headers, row.credential_headers)
            return bool(offered) and offered != ev.PLACEHOLDER_KEY
        return carries_own_key(headers, row.credential_headers, self._own(upstream))

    def missing(self, upstream: str) -> bool:
        """Whether the caller holds no key of ``upstream``: an auto-mode miss then cannot
        go live (a test is *not evaluated*). A token an SDK mints is missing when the
        request offered none but ours, which is when such a call misses in auto mode."""
        row = providers.upstream_spec(upstream)
        if row is None:
            return False
        return bool(row.minted_credentials) or not self._own(upstream)

    def _own(self, upstream: str) -> tuple[bytes, ...]:
        keys = self._keys.get(upstream)
        if keys is None:
            row = providers.upstream_spec(upstream)
            names = row.credential_env if row is not None else ()
            own = [self._env.get(name, "") for name in names]
            keys = tuple(k.encode() for k in own if k and k != ev.PLACEHOLDER_KEY)
            self._keys[upstream] = keys
        return keys
