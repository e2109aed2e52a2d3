"""Where a request may go: never to an upstream with another provider's credential.

The router places a request by its path; it is forwarded with only its upstream's
credential headers (``providers.forwarded_headers``: ``x-goog-api-key`` or Azure's
``api-key`` on an OpenAI call are left out). A key in a
credential header shaped as the key of a provider with another API (an OpenAI key as
Anthropic's ``x-api-key``, a Gemini key as a bearer token, an AWS access key id in a
SigV4 ``Authorization``) makes the request *misplaced*: the agent is talking to the wrong
API. Providers serving the same API (OpenAI and the hosts compatible with it) may carry
each other's key shapes: which of them the agent meant is the user's setting.
A request no mount claims that carries a provider's credential is a model call the
gateway cannot *place*. Either is refused with the reason, counted and never forwarded.
Pure functions over the ``PROVIDERS`` table and the lower-case header names of a request.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from multidict import MultiMapping

from otel_replay.providers.spec import ProviderSpec
from otel_replay.providers.table import PROVIDERS, UNDECLARED_KEYS
from otel_replay.redaction.shapes import key_kind

__all__ = ["Placements", "credential_owner", "misplaced", "unplaced"]

_CREDENTIAL_HEADER_NAMES = tuple(
    dict.fromkeys(header.name for row in PROVIDERS for header in row.credential_headers)
)
_CREDENTIALS = (*_CREDENTIAL_HEADER_NAMES, "query key")
_SHORTEST_KEY = 20  # no provider's key is shorter (an AWS access key id has 20 characters)
_WORDS = re.compile(r"[\s,;=/:\"']+")  # what separates a key from the rest of a header


def _titles(names: Iterator[str]) -> str:
    return " / ".join(dict.fromkeys(names))


def _keys(value: str) -> Iterator[tuple[str, list[ProviderSpec]]]:
    """The provider keys in a header value (each of its words that is a key as a whole:
    ``Bearer KEY``, SigV4's ``Credential=KEY/...``): each one's shape, and the rows
    declaring it (empty for a provider without a row, ``UNDECLARED_KEYS``)."""
    for word in _WORDS.split(value):
        if len(word) < _SHORTEST_KEY:
            continue
        kind = key_kind(word)
        if kind is None:
            continue
        rows = [row for row in PROVIDERS if kind in row.key_kinds]
        if rows or kind in UNDECLARED_KEYS:
            yield kind, rows


def _owners(kind: str, rows: list[ProviderSpec]) -> str:
    return _titles(row.title for row in rows) if rows else UNDECLARED_KEYS[kind]


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'AEIOU' else 'a'} {noun}"


def misplaced(spec: ProviderSpec, headers: Mapping[str, str]) -> str | None:
    """Why a request placed on ``spec``'s upstream must not be forwarded there (a
    credential header, or the ``key`` query parameter as ``query key``, holds the key of
    a provider with another API), or None. Headers of the agent's own (a proxy's token)
    are its business."""
    for name in _CREDENTIALS:
        for kind, rows in _keys(headers.get(name, "")):
            if kind not in spec.key_kinds and all(row.api != spec.api for row in rows):
                return f"its {name} holds {_a(_owners(kind, rows))} key"
    return None


class Placements:
    """``misplaced`` for requests as they arrive, each verdict remembered by the
    credentials it was given: an agent sends the same few on every call."""

    REMEMBERED = 64

    def __init__(self) -> None:
        self._verdicts: dict[tuple[str, tuple[str, ...], tuple[str, ...]], str | None] = {}

    def misplaced(
        self, spec: ProviderSpec, headers: MultiMapping[str], query_key: str
    ) -> str | None:
        """``misplaced(spec, ...)`` for a request with ``headers`` (names in any case;
        every value of a repeated header is looked at) and ``query_key`` (its ``?key=``)."""
        values = [", ".join(headers.getall(name, ())) for name in _CREDENTIAL_HEADER_NAMES]
        key = (spec.api, spec.key_kinds, (*values, query_key))  # all the verdict reads
        verdicts = self._verdicts
        if key in verdicts:
            return verdicts[key]
        why = misplaced(spec, dict(zip(_CREDENTIALS, key[2], strict=True)))
        if len(verdicts) >= self.REMEMBERED:
            verdicts.clear()
        verdicts[key] = why
        return why


def credential_owner(headers: Mapping[str, str]) -> str | None:
    """Whose credential a request carries (a provider's title), by the shape of a key in
    it, else by the name of a credential header; None when it carries none."""
    for value in headers.values():
        for kind, rows in _keys(value):
            return _owners(kind, rows)
    for row in PROVIDERS:
        if any(headers.get(header.name) for header in row.credential_headers):
            return row.title
    return None


def unplaced(method: str, path: str, headers: Mapping[str, str]) -> str | None:
    """Why a request no mount claims is a model call the gateway cannot place (it carries
    a provider's credential), or None: a stray (a health check), not a model call."""
    owner = credential_owner(headers)
    if owner is None:
        return None
    apis = ", ".join(row.title for row in PROVIDERS)
    return (
        f"cannot place {method} {path}: it carries {_a(owner)} credential but is no path "
        f"of a supported API ({apis}); not forwarded"
    )
