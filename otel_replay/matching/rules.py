"""Matching rules as data: the rows the normaliser engine applies.

A rule is a row, never a branch. ``VolatileRule(kind, pattern)`` turns every match of a
regular expression into a placeholder numbered per kind by first occurrence (``<id:1>``);
the kind ``keep`` passes its matches through unchanged (placeholders and redaction marks,
so normalising twice changes nothing). ``IgnoreRule(path)`` drops what a path names in the
canonical request before anything is compared: ``params.metadata.user_id``,
``messages[*].parts[*].id``, ``params.*.trace``; a path continues into a JSON document
carried as a string (``params.client_metadata.x-turn.started_at`` where ``x-turn`` holds
JSON text). With a ``pattern`` it drops only the values that are text the pattern matches
in full, or objects holding such text in a field (a message part whose ``content`` is a
block the client generates: ``messages[*].parts[*]``). Every row has a ``Scope``:
provider, model, endpoint and agent profile, each a ``fnmatch`` pattern or None for any.

``LiveRule(scope)`` marks the requests it covers as always answered by the provider in
``auto`` mode. A volatile rule read from a rule file is ``linear``: compiled with RE2, so a
user's pattern runs in time linear in the text it scans.

``BUILTIN_RULES`` is the first table: provider ids, UUIDs, ISO-8601 times, dates written in
prose, epoch seconds and milliseconds near now (as numbers too), emails, and the transport
fields the provider surfaces never put in a canonical request. The caller's working and
home directories (``place_rules``) are taken from the process when a request is
normalised. An agent profile or a user's rule file adds rows to the same engine.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.ignore import has_path, parse_path

__all__ = [
    "ANY",
    "BUILTIN_RULES",
    "DROP",
    "EPOCH_WINDOW_SECONDS",
    "KEEP",
    "PROVIDER_ID_PREFIXES",
    "IgnoreRule",
    "LiveRule",
    "Profile",
    "Rule",
    "Scope",
    "Subject",
    "VolatileRule",
    "detect",
    "epoch_rule",
    "integer_range_pattern",
    "place_rules",
]

KEEP = "keep"
"""The kind of a volatile rule whose matches stay as they are."""
DROP = "drop"
"""The kind of a volatile rule whose matches are left out: text that one run holds and
another may not (a section present on one side only), compared as if absent on both."""


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
    has one, is a cheaper pattern that any string holding a match also matches.
    ``numbers``: a JSON integer whose decimal text the pattern matches in full is replaced
    too. ``fixed``: the placeholder is ``<kind>``, without a number. ``linear``: compiled
    with RE2 (no look-around), applied before the other rules. ``word_start``: a match
    never begins right after an ASCII letter or digit (the pattern opens with a
    look-behind refusing them), so the normaliser tries such rules only where a word
    starts."""

    kind: str
    pattern: str
    scope: Scope = ANY
    prefilter: str | None = None
    numbers: bool = False
    fixed: bool = False
    linear: bool = False
    word_start: bool = False


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """What ``path`` names in the canonical request is left out of matching; with
    ``pattern`` (RE2), only a named value that is a string the pattern matches in full, or
    an object with such a string as one of its fields."""

    path: str
    scope: Scope = ANY
    pattern: str | None = None


MCP_PROVIDER = "mcp"
"""The provider of a tool call (an MCP request: ``providers.mcp``)."""


@dataclass(frozen=True, slots=True)
class LiveRule:
    """Requests within ``scope`` always go to the provider in ``auto`` mode; a scope of
    provider ``mcp`` (a tool, a server) sends tool calls to the real server in every mode."""

    scope: Scope = ANY

    @property
    def for_tools(self) -> bool:
        """Whether it names tool calls (provider ``mcp``) rather than model calls."""
        return self.scope.provider == MCP_PROVIDER


Rule = VolatileRule | IgnoreRule | LiveRule


@dataclass(frozen=True, slots=True)
class Profile:
    """An agent profile: a named rule table, in force for a request that has one of the
    ``detect`` paths (a path as an ignore rule writes it; it may go into JSON text)."""

    name: str
    detect: tuple[str, ...]
    rules: tuple[Rule, ...] = ()


_parsed = functools.lru_cache(maxsize=256)(parse_path)


def detect(profiles: Sequence[Profile], request: CanonicalRequest) -> str | None:
    """The name of the first profile whose shape ``request`` has."""
    for profile in profiles:
        for path in profile.detect:
            steps = _parsed(path)
            if steps[0].key is not None and has_path(request.component(steps[0].key), steps[1:]):
                return profile.name
    return None


PROVIDER_ID_PREFIXES: tuple[str, ...] = (
    "chatcmpl",
    "srvtoolu",
    "toolu_bdrk",  # Anthropic's ids as Bedrock serves them
    "msg_bdrk",
    "tooluse",  # Bedrock Converse's tool-use ids
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

EPOCH_WINDOW_SECONDS = 5 * 366 * 86400
"""How far from now an integer may lie to be taken for an epoch time (about 5 years)."""

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_DAY = r"(?:0?[1-9]|[12][0-9]|3[01])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)[0-9]{2}"


def integer_range_pattern(low: int, high: int) -> str:
    """A regular expression matching exactly the decimal integers from ``low`` to ``high``
    (both non-negative), without leading zeros."""
    if low > high:
        return r"(?!)"
    branches: list[str] = []
    _range_branches(str(low), str(high), branches)
    return "(?:" + "|".join(branches) + ")"


def _range_branches(low: str, high: str, out: list[str]) -> None:
    if len(low) < len(high):  # split at the change in length
        _range_branches(low, "9" * len(low), out)
        _range_branches("1" + "0" * len(low), high, out)
        return
    _same_length(low, high, "", out)


def _same_length(low: str, high: str, prefix: str, out: list[str]) -> None:
    if not low:
        out.append(prefix)
        return
    if low[0] == high[0]:
        _same_length(low[1:], high[1:], prefix + low[0], out)
        return
    rest = len(low) - 1
    if low[1:] == "0" * rest and high[1:] == "9" * rest:
        out.append(prefix + _digits(low[0], high[0]) + ("[0-9]" * rest))
        return
    _same_length(low[1:], "9" * rest, prefix + low[0], out)
    if int(high[0]) - int(low[0]) > 1:
        middle = _digits(str(int(low[0]) + 1), str(int(high[0]) - 1))
        out.append(prefix + middle + "[0-9]" * rest)
    _same_length("0" * rest, high[1:], prefix + high[0], out)


def _digits(low: str, high: str) -> str:
    return low if low == high else f"[{low}-{high}]"


def epoch_rule(now: float | None = None, window: int = EPOCH_WINDOW_SECONDS) -> VolatileRule:
    """Epoch seconds and milliseconds within ``window`` seconds of ``now`` (as numbers and
    inside text) become ``<time:N>``; an order number such as 123456 does not. The window's
    ends are rounded outwards to a multiple of 10^7 seconds (about four months)."""
    at = int(time.time() if now is None else now)
    step = 10**7
    low, high = max(at - window, 0) // step * step, (at + window) // step * step + step - 1
    seconds = integer_range_pattern(low, high)
    return VolatileRule(
        "time",
        f"(?={_first_digit(low, high)})"
        + r"(?<![0-9A-Za-z.+-])"
        + seconds
        + r"(?:[0-9]{3})?(?![0-9A-Za-z])",
        prefilter=_BUILTIN_PREFILTER,
        numbers=True,
        word_start=True,
    )


def _first_digit(low: int, high: int) -> str:
    """What the first digit of a number from ``low`` to ``high`` can be."""
    if len(str(low)) != len(str(high)):
        return "[1-9]"
    return _digits(str(low)[0], str(high)[0])


def place_rules(cwd: str, home: str) -> tuple[VolatileRule, ...]:
    """The working and home directories as path prefixes: ``<cwd>``, ``<home>`` (the
    working directory first, as it usually lies below home). A root or empty directory
    names nothing."""
    rules: list[VolatileRule] = []
    for kind, place in (("cwd", cwd), ("home", home)):
        place = place.rstrip("/\\")
        if len(place) < 2:
            continue
        literal = re.escape(place)
        rules.append(
            VolatileRule(
                kind,
                f"(?={re.escape(place[0])})" + r"(?<![\w.~/\\-])" + literal + r"(?![\w.~-])",
                prefilter=literal,
                fixed=True,
            )
        )
    return tuple(rules)


_VOLATILE: tuple[VolatileRule, ...] = (
    VolatileRule(
        KEEP,
        r"\[REDACTED:[A-Za-z0-9_.:-]+\]|<(?:id|uuid|time|email):\d+>|<(?:cwd|home)>",
    ),
    VolatileRule(
        "uuid",
        r"(?<![A-Za-z0-9])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
        r"-[0-9a-fA-F]{12}(?![A-Za-z0-9])",
        prefilter=_BUILTIN_PREFILTER,
        word_start=True,
    ),
    VolatileRule(
        "time",
        r"(?<![A-Za-z0-9_-])\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
        r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
        r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?(?![0-9])",
        prefilter=_BUILTIN_PREFILTER,
        word_start=True,
    ),
    # dates in prose: "November 2026", "30 November 2026", "Nov 30, 2026"
    VolatileRule(
        "time",
        r"(?=[0-9ADFJMNOS])(?<![A-Za-z0-9])(?:"
        + _DAY
        + r"\s+)?"
        + _MONTH
        + r"\.?(?:\s+"
        + _DAY
        + r",?)?"
        r"\s+" + _YEAR + r"(?![0-9])",
        prefilter=_BUILTIN_PREFILTER,
        word_start=True,
    ),
    epoch_rule(),
    VolatileRule(
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
        r"\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
        prefilter=_BUILTIN_PREFILTER,
        word_start=True,
    ),
    # An id's body holds a digit, or is long enough to be random: ``call_weather`` (a
    # tool name) stays, ``call_abc123`` and ``msg_01XFDUDYJgAACzvnptvVoYEL`` do not.
    VolatileRule(
        "id",
        r"(?<![A-Za-z0-9_-])(?:" + "|".join(PROVIDER_ID_PREFIXES) + r")[-_]"
        r"(?:(?=[A-Za-z]*[0-9])" + _ID_BODY + r"|[A-Za-z]{20,})(?![A-Za-z0-9])",
        prefilter=_BUILTIN_PREFILTER,
        word_start=True,
    ),
)

# Fields that only choose how the answer travels; each provider surface leaves them out
# of the canonical request it reads.
_TRANSPORT: tuple[IgnoreRule, ...] = (
    IgnoreRule("params.stream", Scope(provider="openai")),
    IgnoreRule("params.stream_options", Scope(provider="openai")),
    IgnoreRule("params.stream", Scope(provider="anthropic")),
)

# Values a client mints afresh in every run, where the provider's API gives them no meaning.
_MINTED: tuple[IgnoreRule, ...] = (
    # the Gemini API pairs a function response with its call by name; a client may give
    # both an id of its own making (the AI SDK's @ai-sdk/google does, one per run)
    IgnoreRule("messages[*].parts[*].id", Scope(provider="gcp.gemini")),
)

BUILTIN_RULES: tuple[Rule, ...] = (*_VOLATILE, *_TRANSPORT, *_MINTED)
