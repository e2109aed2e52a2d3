"""Matching rules as data: the rows the normaliser engine applies.

A rule is a row, never a branch. ``VolatileRule(kind, pattern)`` turns every match of a
regular expression into a placeholder numbered per kind by first occurrence (``<id:1>``);
the kind ``keep`` passes its matches through unchanged (placeholders and redaction marks,
so normalising twice changes nothing). ``IgnoreRule(path)`` drops what a path names in the
canonical request before anything is compared: ``params.metadata.user_id``,
``messages[*].parts[*].id``, ``params.*.trace``; a path continues into a JSON document
carried as a string (``params.client_metadata.x-turn.started_at`` where ``x-turn`` holds
JSON text). Every row has a ``Scope``: provider, model, endpoint and agent profile, each a
``fnmatch`` pattern or None for any.

``BUILTIN_RULES`` is the first table: provider ids, UUIDs, ISO-8601 times and emails, and
the transport fields the provider surfaces never put in a canonical request. An agent
profile or a user's rule file adds rows to the same engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = [
    "ANY",
    "BUILTIN_RULES",
    "KEEP",
    "PROVIDER_ID_PREFIXES",
    "IgnoreRule",
    "Rule",
    "Scope",
    "Subject",
    "VolatileRule",
]

KEEP = "keep"
"""The kind of a volatile rule whose matches stay as they are."""


@dataclass(frozen=True, slots=True)
class Subject:
    """What a rule's scope is checked against: one request's provider, model, endpoint
    (as matching compares it) and the agent profile in force; None when unknown."""

    provider: str | None = None
    model: str | None = None
    endpoint: str | None = None
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a rule applies: each field a ``fnmatch`` pattern, None for anything. A
    pattern never matches an unknown value."""

    provider: str | None = None
    model: str | None = None
    endpoint: str | None = None
    profile: str | None = None

    def applies(self, subject: Subject) -> bool:
        return (
            _fits(self.provider, subject.provider)
            and _fits(self.model, subject.model)
            and _fits(self.endpoint, subject.endpoint)
            and _fits(self.profile, subject.profile)
        )


def _fits(pattern: str | None, value: str | None) -> bool:
    return pattern is None or (value is not None and fnmatchcase(value, pattern))


ANY = Scope()


@dataclass(frozen=True, slots=True)
class VolatileRule:
    """Matches of ``pattern`` become ``<kind:N>``. ``prefilter``, when every rule in force
    has one, is a cheaper pattern that any string holding a match also matches."""

    kind: str
    pattern: str
    scope: Scope = ANY
    prefilter: str | None = None


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """What ``path`` names in the canonical request is left out of matching."""

    path: str
    scope: Scope = ANY


Rule = VolatileRule | IgnoreRule

PROVIDER_ID_PREFIXES: tuple[str, ...] = (
    "chatcmpl",
    "srvtoolu",
    "toolu",
    "call",
    "msg",
    "resp",
    "req",
    "fc",
    "rs",
    "run",
)

# Every built-in volatile value holds one of these; a string with none is left alone.
_BUILTIN_PREFILTER = r"[0-9@]|[A-Za-z]{20}"
_ID_BODY = r"[A-Za-z0-9]+"

_VOLATILE: tuple[VolatileRule, ...] = (
    VolatileRule(KEEP, r"\[REDACTED:[A-Za-z0-9_.:-]+\]|<(?:id|uuid|time|email):\d+>"),
    VolatileRule(
        "uuid",
        r"(?<![A-Za-z0-9])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
        r"-[0-9a-fA-F]{12}(?![A-Za-z0-9])",
        prefilter=_BUILTIN_PREFILTER,
    ),
    VolatileRule(
        "time",
        r"(?<![A-Za-z0-9_-])\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
        r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
        r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?(?![0-9])",
        prefilter=_BUILTIN_PREFILTER,
    ),
    VolatileRule(
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
        r"\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
        prefilter=_BUILTIN_PREFILTER,
    ),
    # An id's body holds a digit, or is long enough to be random: ``call_weather`` (a
    # tool name) stays, ``call_abc123`` and ``msg_01XFDUDYJgAACzvnptvVoYEL`` do not.
    VolatileRule(
        "id",
        r"(?<![A-Za-z0-9_-])(?:" + "|".join(PROVIDER_ID_PREFIXES) + r")[-_]"
        r"(?:(?=[A-Za-z]*[0-9])" + _ID_BODY + r"|[A-Za-z]{20,})(?![A-Za-z0-9])",
        prefilter=_BUILTIN_PREFILTER,
    ),
)

# Fields that only choose how the answer travels; each provider surface leaves them out
# of the canonical request it reads.
_TRANSPORT: tuple[IgnoreRule, ...] = (
    IgnoreRule("params.stream", Scope(provider="openai")),
    IgnoreRule("params.stream_options", Scope(provider="openai")),
    IgnoreRule("params.stream", Scope(provider="anthropic")),
)

BUILTIN_RULES: tuple[Rule, ...] = (*_VOLATILE, *_TRANSPORT)
