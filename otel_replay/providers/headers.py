"""Which headers the providers' table makes special: those a request carries a credential
in (forwarded only to the upstream they are for) and the response headers a recording
keeps. Read from every row of ``PROVIDERS`` once, as the package loads."""

from __future__ import annotations

from collections.abc import Mapping

from otel_replay.providers.spec import CredentialHeader
from otel_replay.providers.table import PROVIDERS, upstream_spec

__all__ = ["credential_headers", "forwarded_headers", "kept_headers"]

_CREDENTIAL_HEADERS = tuple(
    sorted(
        dict.fromkeys(header for row in PROVIDERS for header in row.credential_headers),
        key=lambda header: header.scheme is not None,
    )
)
_CREDENTIAL_NAMES = frozenset(header.name for header in _CREDENTIAL_HEADERS)
_KEPT_NAMES = frozenset().union(*(row.kept_headers for row in PROVIDERS))
_KEPT_PREFIXES = tuple(prefix for row in PROVIDERS for prefix in row.kept_prefixes)


def credential_headers() -> tuple[CredentialHeader, ...]:
    """Every header a provider's request carries a credential in: key headers first, then
    those with a scheme (``Authorization``, which proxies use too)."""
    return _CREDENTIAL_HEADERS


def forwarded_headers(upstream: str, headers: Mapping[str, str]) -> dict[str, str]:
    """The request headers forwarded to ``upstream``: without any other upstream's
    credential headers (an upstream whose requests are re-signed replaces its own)."""
    own = upstream_spec(upstream)
    mine = () if own is None else own.credential_headers
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in _CREDENTIAL_NAMES:  # else no credential header's: kept
            foreign = any(h.carried(lower, value) for h in _CREDENTIAL_HEADERS)
            if foreign and not any(h.carried(lower, value) for h in mine):
                continue
        kept[name] = value
    return kept


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The response headers a recording keeps and replays (lower-case names): those any
    provider declares."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower in _KEPT_NAMES or lower.startswith(_KEPT_PREFIXES):
            kept[lower] = value
    return kept
