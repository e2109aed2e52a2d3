"""A secret after a label that names one, in free text: ``aws_secret_access_key: ...``,
``DB_PASSWORD=...``, ``"client_secret": "..."`` in a prompt, a log line or a tool's output.

The value has no provider prefix, so only the label says it is a secret, and only the
value's look says it is one and not prose. A label is an identifier holding a secret word
as ``names.is_secret_field`` reads it (``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``,
``CREDENTIALS``..., not a describing ``token_count`` or ``token_type``, not an identifier
``prompt_cache_key``, not a lone ``key`` or ``token``) or ending in ``_PASS`` or ``_PAT``;
it is written ``label: value``, ``label=value`` or as a JSON member (its quotes escaped
once per level of JSON held in a string). The value is redacted when it looks like a
credential (:func:`looks_like_credential`): 8 characters or more, not words and not
numbers, and varied enough.

The patterns are RE2's (linear time, no look-around), as ``shapes``'s are: each starts
with a literal character, at the secret word or just before it (``_key``: a lone ``key``
cannot start a match, so the OTLP ``"key":`` of every attribute costs nothing). The
label's words before the match (``prompt_cache`` in ``prompt_cache_key``) are read back
from the text on the match, a bounded step.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

import re2

from otel_replay.redaction.names import is_secret_field

__all__ = [
    "LABELLED_ANCHOR",
    "LABELLED_SHAPES",
    "is_value",
    "labels_a_secret",
    "looks_like_credential",
    "secret_label",
    "without_groups",
]

_TAIL = r"[A-Za-z0-9_.-]*"
_QUOTE = r"(?:\\*[\"'`])?"
# ``label: value``, ``label = value``, ``"label": "value"``, ``\"label\": \"value\"``,
# ``**Label:** value`` (Markdown), ``label := value`` (Go), ``'label' => 'value'``.
_SEP = _QUOTE + r"(?:\*\*)?[ \t]*(?::=|=>|[:=])(?:\*\*)?[ \t]*" + _QUOTE
# What a value may hold: not a space, quote, backslash (a JSON escape ends it), nor
# ``, ; &`` (a list, a connection string, a query) or brackets (a template, a
# placeholder, a subscript); it does not end with ``. ) :`` (prose around it, a label),
# nor start with five dashes (a PEM block's ``-----BEGIN``, which its own shape must see).
_CHAR = r"[^\s\"'`\\,;&{}\[\]<>]"
_VALUE = r"(?P<secret>-{0,4}[^\s\"'`\\,;&{}\[\]<>-]" + _CHAR + r"{6,}[^\s\"'`\\,;&{}\[\]<>.):])"
# A label may name the one that follows (``credentials: password: ...``): that one is
# part of the match, or it would end the first one's value and so go unread.
_CHAIN = r"(?:(?P<chain>[A-Za-z0-9_.-]{1,64})" + _SEP + ")?"
# (first character, the rest of the label up to its separator)
_LABELS: tuple[tuple[str, str], ...] = (
    *((c, r"(?i:ecret)" + _TAIL) for c in "sS"),
    *((c, r"(?i:assw(?:or)?d)" + _TAIL) for c in "pP"),
    *((c, r"(?i:redentials?)" + _TAIL) for c in "cC"),
    *((c, r"(?i:pikey)" + _TAIL) for c in "aA"),
    # ``KEY`` and ``TOKEN`` as a word after another (``api_key``, ``x-api-key``,
    # ``db.token``, ``apiKey``, ``refreshToken``): a lone one is too common to mark one
    *((c, r"(?i:key|token)" + _TAIL) for c in ("_", "-", r"\.")),
    ("K", "ey" + _TAIL),
    ("T", "oken" + _TAIL),
    # a name ending in ``_PASS`` or ``_PAT``, maybe numbered (``DB_PASS``, ``GITHUB_PAT_2``)
    ("_", r"(?i:pass|pat)(?:_?[0-9]+)?"),
)
LABELLED_SHAPES: tuple[str, ...] = tuple(
    first + rest + _SEP + _CHAIN + _VALUE for first, rest in _LABELS
)
"""The labelled-value patterns, for ``shapes``'s alternation (after every other shape)."""
_GROUP = re.compile(r"\(\?P<\w+>")


def without_groups(pattern: str) -> str:
    """``pattern`` with its named groups made plain (RE2 finds a match without groups
    with its DFA alone)."""
    return _GROUP.sub("(?:", pattern)


LABELLED_ANCHOR = "|".join(without_groups(p) for p in LABELLED_SHAPES)
"""An RE2 pattern every labelled-value match holds (for the redactor's prefilter)."""

_LABEL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LABEL_MAX = 64
_NUMBERED = re.compile(r"_?[0-9]+$")


def labels_a_secret(text: str, start: int, whole: str) -> bool:
    """Whether the label of a match ``whole`` starting at ``start`` in ``text`` names a
    secret: the identifier characters before the match and those that start it (at most
    ``_LABEL_MAX`` of each: a bounded step per match, whatever the text), or those that
    start it alone (text glued before a label, ``Aapikey``, does not hide it; the words
    before ``_key`` that make it an identifier, ``prompt_cache_key``, still do)."""
    at = start
    stop = max(0, start - _LABEL_MAX)
    while at > stop and text[at - 1] in _LABEL_CHARS:
        at -= 1
    end = 0
    while end < min(len(whole), _LABEL_MAX) and whole[end] in _LABEL_CHARS:
        end += 1
    own = whole[:end]
    return secret_label(text[at:start] + own) or (at < start and secret_label(own))


@functools.lru_cache(maxsize=4096)
def secret_label(label: str) -> bool:
    """Whether a label names a secret: ``is_secret_field``'s words (``client_secret``,
    ``x-api-key``, ``aws_secret_access_key``; not ``token_count``, ``prompt_cache_key``,
    a lone ``key``), or a name ending in ``_PASS`` or ``_PAT``."""
    label = label.strip("._-")
    if is_secret_field(label):
        return True
    upper = _NUMBERED.sub("", label.upper())
    return upper.endswith(("_PASS", "_PAT"))


# Values that are no secret whatever their label: a reference to an environment
# variable (``$OPENAI_API_KEY``, ``%API_KEY%``), a variable's name (``YOUR_API_KEY``), a
# constant, an assignment (``max_tokens=512``), a code reference (``os.environ``,
# ``settings.SECRET_KEY``, a call), a URL
# (its password and query secrets have shapes of their own), a path, a date; a secret
# written masked or as a hint of one (``sk-...abcd``, ``****``, ``xxxx``); a
# placeholder's words (``your-api-key-here``). One RE2 pattern, matched whole (on the
# value's UTF-8 bytes: RE2's Python binding reads ``str`` at thrice the cost).
_NON_VALUES = (
    r"\$(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)",
    r"%[A-Za-z_][A-Za-z0-9_]*%",
    r"[A-Z]+(?:_[A-Z]+)+(?:_?[0-9]+)?",
    r"(?:[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+)=.*",
    r"(?i:null|none|nil|true|false|undefined)",
    r"[A-Za-z_]+(?:\.[A-Za-z_]+)+",
    r"(?:[a-z_][A-Za-z0-9_.]*|[A-Za-z_][A-Za-z_.]*)?\(.*",
    r"[A-Za-z][A-Za-z0-9+.-]*://.*",
    r"(?:~|\.\.?)/.*",
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9:.]+(?:Z|[+-][0-9:]+)?)?",
    r".*(?:\*\*\*|\.\.\.|…|•|[xX]{6}).*",
    r"(?:.*[-_.])?(?i:your|placeholder|changeme|replaceme|redacted)(?:[-_.].*)?",
)
# Letters alone, a word or words joined by ``- _ . / :`` (lower, Capitalized, UPPER, or
# camelCase whose humps are short or hold a vowel: ``SecretStr``, ``myApiKey``; random
# letters such as ``GXypGxkpDmfj`` are not), each part short enough to be a word: an
# identifier (``os.environ``), a path (``/etc/app/secrets.json``), a name
# (``weather-service-key``), prose (``correcthorse``), not a credential.
_HUMP = r"[A-Z](?:[a-z]{1,2}|[a-z]{0,5}[aeiou][a-z]{0,5})"
_WORD = r"(?:[a-z]{1,12}|[A-Z][a-z]{1,11}|[A-Z]{1,12})(?:" + _HUMP + ")*"
_WORDS = r"[~./]*" + _WORD + r"(?:[-_./:]+" + _WORD + r")*/?"
_NOT_VALUE = re2.compile("|".join(_NON_VALUES))
_NOT_CREDENTIAL = re2.compile("|".join((*_NON_VALUES, _WORDS)))
MIN_LENGTH = 8
"""A shorter value is no credential (a flag, ``true``, a count)."""
MIN_ONE_CLASS = 13
"""A value of letters of one case alone is a credential from this length, if varied."""
VARIED = 0.6
"""A value holding two or more of lower case, upper case, digits and symbols is a
credential when its Shannon entropy is at least this share of the most its length allows
(``log2`` of the length, up to 16 characters): ``hunter2-Xk9q``, ``Summer2024!``,
``P@ssw0rd`` pass; ``aaaa1111``, ``abab-abab-abab`` do not."""
VARIED_ONE_CLASS = 0.8
"""The same share for a value of letters of one case alone (``internationalization`` is
below it)."""
_SAMPLE = 256
"""A value's character classes and entropy are those of its first characters."""
_DIGIT = re.compile(r"[0-9]")
_SYMBOL = re.compile(r"[^\w]|_")


def is_value(value: str) -> bool:
    """Whether a value under a secret's name may be the secret at all: not one character
    repeated, nor any of ``_NON_VALUES`` (a reference to a variable, a variable's name, a
    constant, code, a URL, a path, a date, a masked secret, a placeholder's words)."""
    return len(set(value)) > 1 and _NOT_VALUE.fullmatch(value.encode()) is None


def looks_like_credential(value: str) -> bool:
    """Whether a value after a secret's label in free text looks like a credential rather
    than prose or code: 8 characters or more, a letter among them, varied
    (:data:`VARIED`), neither a non-value (:func:`is_value`) nor words (``_WORDS``).
    The cheap tests first: most values a hostile text repeats fail one of them."""
    if len(value) < MIN_LENGTH:
        return False
    sample = value[:_SAMPLE]
    lower, upper = sample != sample.upper(), sample != sample.lower()
    if not (lower or upper):  # a number, a version, a time
        return False
    digit = _DIGIT.search(sample) is not None
    symbol = _SYMBOL.search(sample) is not None
    classes = lower + upper + digit + symbol
    if classes == 1 and len(value) < MIN_ONE_CLASS:
        return False
    share = VARIED if classes > 1 else VARIED_ONE_CLASS
    if _bits_per_char(sample) < share * math.log2(min(len(value), 16)):
        return False
    return _NOT_CREDENTIAL.fullmatch(value.encode()) is None


def _bits_per_char(value: str) -> float:
    """Shannon entropy of the value's characters, in bits per character."""
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in Counter(value).values())
