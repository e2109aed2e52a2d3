"""Normalisation of volatile values, so that two runs of the same agent compare equal.

Provider ids (``chatcmpl-…``, ``msg_…``, ``call_…``, ``toolu_…``, ...), UUIDs, ISO-8601
dates and timestamps, and email addresses become placeholders numbered per kind by first
occurrence across the whole request: ``<id:1>``, ``<uuid:1>``, ``<time:2>``,
``<email:1>``. The same value gets the same placeholder everywhere in the request, so a
tool-call id in an assistant message and in the tool result that answers it stay paired,
whatever the id was on the day of the recording.

Components are traversed in ``COMPONENTS`` order and dict keys in sorted order, so the
numbering does not depend on the key order of the source (a provider body or a span).
``endpoint`` and ``model`` are left exactly as they are — a model name such as
``gpt-4o-2024-08-06`` carries a date that is not volatile — except that an Azure OpenAI
endpoint loses its ``api-version`` and its deployment name (the model carries it).
Integral floats become ints (``1.0`` → ``1``), since a span attribute stores a request's
``1`` as a double.
Redaction placeholders (``[REDACTED:…]``) pass through unchanged. Dicts come out with
their keys sorted (matching compares canonical JSON, so order carries no meaning).
"""

from __future__ import annotations

import dataclasses
import re

from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.providers.azure import match_endpoint

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

_ID_BODY = r"[A-Za-z0-9]+"
_BRANCHES: tuple[tuple[str, str], ...] = (
    ("keep", r"\[REDACTED:[A-Za-z0-9_.:-]+\]|<(?:id|uuid|time|email):\d+>"),
    (
        "uuid",
        r"(?<![A-Za-z0-9])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
        r"-[0-9a-fA-F]{12}(?![A-Za-z0-9])",
    ),
    (
        "time",
        r"(?<![A-Za-z0-9_-])\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
        r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
        r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?(?![0-9])",
    ),
    (
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
        r"\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
    ),
    # An id's body holds a digit, or is long enough to be random: ``call_weather`` (a
    # tool name) stays, ``call_abc123`` and ``msg_01XFDUDYJgAACzvnptvVoYEL`` do not.
    (
        "id",
        r"(?<![A-Za-z0-9_-])(?:" + "|".join(PROVIDER_ID_PREFIXES) + r")[-_]"
        r"(?:(?=[A-Za-z]*[0-9])" + _ID_BODY + r"|[A-Za-z]{20,})(?![A-Za-z0-9])",
    ),
)
_VOLATILE_RE = re.compile("|".join(f"(?P<{name}>{p})" for name, p in _BRANCHES))

# Every volatile value holds one of these; a string with none is left alone at once.
_PREFILTER_RE = re.compile(r"[0-9@]|[A-Za-z]{20}")


# Strings known to hold no volatile value: short ones ("role", "user", "tool_call", a
# tool's name...) are most strings of a request, and long ones (a system prompt, a tool's
# description, earlier turns of the conversation) come back in every later request of an
# agent run, so remembering them skips most regex calls. Long ones are kept up to a budget
# of characters.
_STABLE: set[str] = set()
_STABLE_MAX_LENGTH = 64
_STABLE_MAX_SIZE = 16384
_STABLE_LONG: set[str] = set()
_STABLE_LONG_MAX_CHARS = 4_000_000
_stable_long_chars = 0


class _Numbering:
    """Placeholders for one request: per-kind counters and the values already seen."""

    __slots__ = ("counts", "seen")

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def replace(self, m: re.Match[str]) -> str:
        kind = m.lastgroup
        value = m.group()
        if kind is None or kind == "keep":
            return value
        placeholder = self.seen.get(value)
        if placeholder is None:
            n = self.counts.get(kind, 0) + 1
            self.counts[kind] = n
            placeholder = self.seen[value] = f"<{kind}:{n}>"
        return placeholder

    def text(self, s: str) -> str:
        if s in _STABLE:
            return s
        long = len(s) > _STABLE_MAX_LENGTH
        if long and s in _STABLE_LONG:
            return s
        out = _VOLATILE_RE.sub(self.replace, s) if _PREFILTER_RE.search(s) else s
        if out is s:
            if not long:
                if len(_STABLE) < _STABLE_MAX_SIZE:
                    _STABLE.add(s)
            else:
                _remember_long(s)
        return out

    def walk(self, value: JSON) -> JSON:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            try:
                keys = sorted(value)
            except TypeError:
                keys = sorted(value, key=str)
            text = self.text
            return {(text(k) if type(k) is str else k): self.walk(value[k]) for k in keys}
        if kind is list:
            return [self.walk(v) for v in value]
        if kind is float:
            return int(value) if value.is_integer() else value
        if kind is int or kind is bool or value is None:
            return value
        return self._walk_other(value)

    def _walk_other(self, value: JSON) -> JSON:
        """Subclasses of the JSON types (tuples, ordered dicts, str enums, ...)."""
        if isinstance(value, str):
            return self.text(str(value))
        if isinstance(value, dict):
            return self.walk(dict(value))
        if isinstance(value, list | tuple):
            return [self.walk(v) for v in value]
        if isinstance(value, float):
            return self.walk(float(value))
        return value


def _remember_long(s: str) -> None:
    global _stable_long_chars
    if _stable_long_chars + len(s) <= _STABLE_LONG_MAX_CHARS:
        _STABLE_LONG.add(s)
        _stable_long_chars += len(s)


def normalize_value(value: JSON) -> JSON:
    """One JSON value normalised on its own (numbering starts afresh)."""
    return _Numbering().walk(value)


def normalize_text(s: str) -> str:
    """One string normalised on its own (numbering starts afresh)."""
    return _Numbering().text(s)


def normalize(request: CanonicalRequest) -> CanonicalRequest:
    """The request with volatile values replaced by placeholders numbered by first
    occurrence across ``system``, ``messages``, ``tools`` and ``params``, in that order."""
    numbering = _Numbering()
    system = numbering.walk(request.system)
    messages = numbering.walk(request.messages)
    tools = numbering.walk(request.tools)
    params = numbering.walk(request.params)
    return dataclasses.replace(
        request,
        endpoint=match_endpoint(request.endpoint),
        system=system,
        messages=messages,
        tools=tools,
        params=params if isinstance(params, dict) else {},
    )
