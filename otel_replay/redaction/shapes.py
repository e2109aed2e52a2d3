"""The shapes of known secrets, as one RE2 alternation.

RE2 matches in time linear in the text whatever the text: no backtracking, so no
look-around, and a hostile body cannot stall the gateway. Checks a pattern language with
look-around would have made (a token after ``Bearer`` holds a digit; ``Basic`` credentials
are base64 of ``user:password``) are made on the match.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import re2

from otel_replay.redaction.keyed import PlaceholderKey, placeholder
from otel_replay.redaction.labelled import (
    LABELLED_ANCHOR,
    LABELLED_SHAPES,
    is_value,
    labels_a_secret,
    looks_like_credential,
    secret_label,
    without_groups,
)

__all__ = [
    "ANCHORS",
    "ANCHOR_PATTERNS",
    "ENCODED_ANCHORS",
    "PLACEHOLDER",
    "PLACEHOLDER_RE",
    "key_kind",
    "replacement",
    "shape_replacement",
    "shapes_by_first",
    "shapes_re",
]

PLACEHOLDER = r"\[REDACTED:[A-Za-z0-9_.:-]+\]"
PLACEHOLDER_RE = re.compile(PLACEHOLDER)

_B64URL = r"[A-Za-z0-9_-]"
# A value that is a placeholder or a PEM block is not a secret of the shape that precedes
# it: such a match is left as it is (see ``shape_replacement``).
_NOT_OURS = ("[REDACTED:", "-----BEGIN")
_AWS_NAME = r"(?i:ws_?secret_?(?:access_?)?key|ws-secret-(?:access-)?key)"
_SECRET_ACCESS_NAME = r"(?i:ecret_?access_?key|ecret-access-key)"
# Quotes may be JSON-escaped when the text is a raw request body, and escaped again for
# each level of JSON held in a string (tool-call arguments inside a span attribute).
# Beyond AWS's own alphabet too: a value under its name written in base64url (``-``, ``_``)
# is redacted whole, not up to its first ``-``.
_AWS_VALUE = r"(?:\\*[\"'])?\s*[:=]\s*(?:\\*[\"'])?(?P<secret>[A-Za-z0-9/+_-]{40,})"
# An opaque token after "Bearer": 8 or more token characters holding a digit, or 20 or more
# (a longer run of letters is too long to be a word); the length and digit are checked on
# the match (``shape_replacement``), since the pattern language has no look-ahead.
_BEARER_VALUE = r"\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
_BEARER_WORD = 20
_BASIC_VALUE = r"\s+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})"
_PASSWORD_NAME = r"(?i:assw(?:or)?d|rivate[_-]?key)"
_SECRET_NAME = r"(?i:ecret(?:[_-]?(?:access[_-]?)?key)?)"
_API_KEY_NAME = r"(?i:pi[_-]?key)"
_TOKEN_NAME = r"(?i:token)"
_CREDENTIALS_NAME = r"(?i:redentials?)"
# The name ends at the value: a closing quote (JSON-escaped in a raw body, at any depth of
# JSON held in strings) and ``:``, or
# ``=`` (prose such as "the password: ..." is ``labelled``'s); a placeholder, a nested
# object, a PEM block (its own shape's) or a short value (a flag, ``true``) is not a
# secret.
_FIELD_VALUE = (
    r"(?:\\*[\"']\s*:|\s*=)\s*(?:\\*[\"'])?"
    r"(?P<secret>-{0,4}[^\s\"'\\,;&{}\[\]<>-][^\s\"'\\,;&{}\[\]<>]{7,})"
)
_QUERY_VALUE = (
    r"(?i:api[_-]?key|apikey|key|access[_-]?token|auth[_-]?token|token|client[_-]?secret"
    r"|secret|password|passwd|sig|signature|x-amz-signature|x-amz-credential"
    r"|x-amz-security-token|code)=(?P<secret>[^&\s#\"'<>\\]+)"
)

# (kind, pattern). The whole match is the secret, unless the pattern has a group named
# ``secret``: then only that part is replaced and the rest (a key name, ``Bearer ``, a
# URL's user) is kept. Every pattern starts with one literal character, so the combined
# alternation starts with a set of first characters and the regex engine skips ahead to
# candidates instead of trying every branch at every position. Where two patterns can
# start at the same position the first listed wins. Shapes are not anchored at word
# boundaries: a secret glued to other text is still redacted (over-redaction is the safe
# failure). Patterns are RE2 syntax: the engine runs in time linear in the text, whatever
# the text (no backtracking, so no look-around): a hostile body cannot stall the gateway.
_SHAPES: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\z)",
    ),
    ("anthropic-key", r"sk-ant-[a-z]{2,8}\d{2}-" + _B64URL + r"{16,}"),
    # Project, service-account and admin keys; legacy keys are 32+ letters and digits.
    ("openai-key", r"sk-(?:(?:proj|svcacct|admin|None)-" + _B64URL + r"{20,}|[A-Za-z0-9]{32,})"),
    ("stripe-key", r"sk_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("stripe-key", r"rk_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("aws-access-key-id", r"AKIA[A-Z0-9]{16}"),
    ("aws-access-key-id", r"ASIA[A-Z0-9]{16}"),
    ("aws-secret-key", "a" + _AWS_NAME + _AWS_VALUE),
    ("aws-secret-key", "A" + _AWS_NAME + _AWS_VALUE),
    ("aws-secret-key", "s" + _SECRET_ACCESS_NAME + _AWS_VALUE),
    ("aws-secret-key", "S" + _SECRET_ACCESS_NAME + _AWS_VALUE),
    # A value under a secret's name: ``"password": "..."``, ``client_secret=...``,
    # ``--db-password=...``, ``"api_key": "..."``, ``refresh_token: ...`` (JSON, YAML,
    # query, command line), whatever the value looks like, unless it is plainly none
    # (``labelled.is_value``: ``os.environ``, ``$API_KEY``, ``YOUR_API_KEY``, ``****``).
    # Other labels, and ``label: value`` in prose, are ``labelled``'s (after every shape).
    ("secret-field", "p" + _PASSWORD_NAME + _FIELD_VALUE),
    ("secret-field", "P" + _PASSWORD_NAME + _FIELD_VALUE),
    ("secret-field", "s" + _SECRET_NAME + _FIELD_VALUE),
    ("secret-field", "S" + _SECRET_NAME + _FIELD_VALUE),
    ("secret-field", "a" + _API_KEY_NAME + _FIELD_VALUE),
    ("secret-field", "A" + _API_KEY_NAME + _FIELD_VALUE),
    ("secret-field", "_" + _TOKEN_NAME + _FIELD_VALUE),
    ("secret-field", "-" + _TOKEN_NAME + _FIELD_VALUE),
    ("secret-field", "c" + _CREDENTIALS_NAME + _FIELD_VALUE),
    ("secret-field", "C" + _CREDENTIALS_NAME + _FIELD_VALUE),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-token", r"xapp-[A-Za-z0-9-]{10,}"),
    ("jwt", r"eyJ" + _B64URL + r"{8,}\." + _B64URL + r"{8,}\." + _B64URL + r"*"),
    ("bearer-token", "Bearer" + _BEARER_VALUE),
    ("bearer-token", "bearer" + _BEARER_VALUE),
    ("bearer-token", "BEARER" + _BEARER_VALUE),
    # Hosted-model and developer-platform keys: each vendor's documented prefix, then
    # at least the length its keys have (a shorter run is left alone).
    ("openrouter-key", r"sk-or-v1-[A-Za-z0-9]{32,}"),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}"),
    ("groq-key", r"gsk_[A-Za-z0-9]{40,}"),
    ("xai-key", r"xai-[A-Za-z0-9]{40,}"),
    ("replicate-token", r"r8_[A-Za-z0-9]{30,}"),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-[0-9]+)?"),
    ("perplexity-key", r"pplx-[A-Za-z0-9]{32,}"),
    ("gitlab-token", r"glpat-[A-Za-z0-9_-]{20,}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36,}"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"),
    ("azure-account-key", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
    ("azure-account-key", r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"),
    # "Basic" credentials are base64 of "user:password" (checked on the match); "Token"
    # credentials are opaque tokens, like bearer tokens ("token" in lower case is prose).
    ("basic-auth", "Basic" + _BASIC_VALUE),
    ("basic-auth", "basic" + _BASIC_VALUE),
    ("basic-auth", "BASIC" + _BASIC_VALUE),
    ("token-auth", "Token" + _BEARER_VALUE),
    ("token-auth", "TOKEN" + _BEARER_VALUE),
    ("url-password", r"://[^\s/:@\"'<>\[\]]+:(?P<secret>[^\s/@\"'<>\\]+)@"),
    ("query-secret", r"\?" + _QUERY_VALUE),
    ("query-secret", "&" + _QUERY_VALUE),
)

# Substrings at least one of which every shape match contains. Text with none of them
# (and no secret value) is returned untouched without running the shapes.
ANCHORS: tuple[str, ...] = (
    "PRIVATE KEY",
    *"sk- sk_ rk_ AKIA ASIA ecret ECRET ghp_ gho_ ghu_ ghs_ ghr_ github_pat_".split(),
    *"AIza xox xapp- eyJ earer EARER :// =".split(),
    *"hf_ gsk_ xai- r8_ dapi pplx- glpat- npm_ SG. _v1_ hooks.slack.com".split(),
    *"asic ASIC Token TOKEN ccountKey= ccessKey=".split(),
    *"assw ASSW rivate RIVATE pi_key pi-key piKey pikey PI_KEY PIKEY PI-KEY".split(),
    *"redential REDENTIAL".split(),
)
# A name ending in ``token`` is a secret's only where a value follows (``"refresh_token":``,
# ``auth-token=``): the bare words are common (``"max_tokens"``, ``"input_tokens"`` in
# every model call), so they are looked for with what follows them.
_TOKEN_FIELD_ANCHORS = tuple("_token _TOKEN _Token -token -TOKEN".split())
ANCHOR_PATTERNS: tuple[str, ...] = (r"[_-](?i:token)(?:[\\\"'=]|\s)", LABELLED_ANCHOR)
"""RE2 patterns that, with ``ANCHORS``, every shape match holds one of."""
# Literal text whose base64 forms betray an encoded secret: the anchors of three or more
# characters (``=`` alone encodes to nothing of its own), and longer prefixes so that a
# secret that does not start an encoded block is found too (an anchor needs six
# characters to leave a base64 form of its own one or two bytes into a block).
ENCODED_ANCHORS = (
    *(a for a in ANCHORS + _TOKEN_FIELD_ANCHORS if len(a) >= 3),
    *"sk-proj- sk-svcacct- sk-admin- sk-ant-api sk-ant-admin sk-or-v1-".split(),
    "Bearer ",
    "Basic ",
    "Token ",
    *"Authorization key= KEY= token= secret= password= signature= ://".split(),
    *"https:// http:// postgres:// postgresql:// mysql:// mongodb:// mongodb+srv://".split(),
    *"redis:// rediss:// amqp:// amqps:// ftp:// sftp:// ssh:// git@".split(),
)


class _Pattern:
    """A shape's pattern for the backtracking engine, compiled when first used: a start
    compiles none of them, and a run compiles those its matches are told apart by."""

    __slots__ = ("_compiled", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source)
        return compiled


class _Shape(NamedTuple):
    """One shape as the replacement sees it: its placeholder, its pattern for the
    backtracking engine (run only on a match RE2 already found, anchored there, so its
    cost is that of one match), the check its value must pass (a bearer token's digit),
    whether it starts with a secret's name (``named``: a field, a labelled value) and
    whether that label is read back from the text (``labelled``).
    A named tuple: made at every start, where a dataclass costs a compile of its methods."""

    placeholder: str
    pattern: _Pattern
    check: Callable[[str], bool] | None
    named: bool
    labelled: bool


def _opaque_token(value: str) -> bool:
    """A token after "Bearer" or "Token": it holds a digit or is too long to be a word."""
    return len(value) >= _BEARER_WORD or any(c.isdigit() for c in value)


def _basic_credentials(value: str) -> bool:
    """Base64 of ``user:password``, as HTTP Basic authentication sends it."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bearer-token": _opaque_token,
    "token-auth": _opaque_token,
    "basic-auth": _basic_credentials,
    "secret-field": is_value,
}
LABELLED_KIND = "secret-field"
"""A labelled value's placeholder is a secret field's: a value under a secret's name."""


def _table() -> list[tuple[str, str, Callable[[str], bool] | None, bool]]:
    """Every shape in order: (kind, pattern, check, labelled)."""
    return [
        *((kind, pattern, _CHECKS.get(kind), False) for kind, pattern in _SHAPES),
        *((LABELLED_KIND, pattern, looks_like_credential, True) for pattern in LABELLED_SHAPES),
    ]


def _alternation(named: bool) -> Any:
    branches = [PLACEHOLDER]
    for kind, pattern, _, labelled in _table():
        if pattern[0] in "([.^$*+?{|" or (pattern[0] == "\\" and pattern[1].isalnum()):
            raise ValueError(f"shape for {kind} must start with a literal character")
        if named or not (labelled or kind == LABELLED_KIND):
            branches.append(without_groups(pattern))
    return re2.compile("|".join(branches))


@functools.cache
def shapes_re() -> Any:
    """One RE2 alternation over all shapes, without groups (RE2 then finds matches with
    its DFA alone, whatever their length), placeholders first so they are kept as they
    are. Compiled at first use (``Redactor.prepare``): a gateway's start does not wait."""
    return _alternation(named=True)


@functools.cache
def _unnamed_re() -> Any:
    """The shapes that do not start with a secret's name: what a value under a name is
    searched for (``GITHUB_TOKEN: ghp_...``). Not the named ones: ``a_key=b_key=c_key=...``
    would search each value's value again, in time (and depth) growing with the text."""
    return _alternation(named=False)


@functools.cache
def shapes_by_first() -> dict[str, tuple[_Shape, ...]]:
    """The shapes by first character, in order, to tell which one matched: each compiled
    for the backtracking engine when a match is first told apart by it (most never are)."""
    by_first: dict[str, list[_Shape]] = {}
    for kind, pattern, check, labelled in _table():
        first = pattern[1] if pattern[0] == "\\" else pattern[0]
        local = _Pattern(pattern.replace("\\z", "\\Z"))
        named = labelled or kind == LABELLED_KIND
        by_first.setdefault(first, []).append(
            _Shape(f"[REDACTED:{kind}]", local, check, named, labelled)
        )
    return {first: tuple(shapes) for first, shapes in by_first.items()}


def shape_replacement(m: Any, key: PlaceholderKey | None = None) -> str:
    """What a match of ``shapes_re`` becomes (its placeholders keyed with ``key``)."""
    whole: str = m.group()
    for shape in shapes_by_first().get(whole[:1], ()):
        found = shape.pattern.get().match(whole)
        if found is not None and found.end() == len(whole):
            return _replaced(shape, whole, found, m, key)
    return whole  # a placeholder, kept as it is


def replacement(key: PlaceholderKey | None) -> Callable[[Any], str]:
    """``shape_replacement`` with its placeholders keyed with ``key`` (itself for none)."""
    return shape_replacement if key is None else functools.partial(shape_replacement, key=key)


def _unnamed_replacement(m: Any, key: PlaceholderKey | None = None) -> str:
    whole: str = m.group()
    for shape in shapes_by_first().get(whole[:1], ()):
        if shape.named:
            continue
        found = shape.pattern.get().match(whole)
        if found is not None and found.end() == len(whole):
            return _replaced(shape, whole, found, m, key)
    return whole


def _within(value: str, key: PlaceholderKey | None) -> str:
    """A value under a secret's name with the known shapes in it redacted (looked for in
    its UTF-8 bytes first, which RE2's binding reads at a third of the cost of ``str``)."""
    if _unnamed_re().search(value.encode()) is None:
        return value
    unnamed = _unnamed_replacement
    if key is not None:
        unnamed = functools.partial(_unnamed_replacement, key=key)
    out: str = _unnamed_re().sub(unnamed, value)
    return out


def _placeholder(shape: _Shape, secret: str, key: PlaceholderKey | None) -> str:
    """A shape's placeholder for ``secret`` (``keyed.placeholder``, made once unkeyed)."""
    if key is None:
        return shape.placeholder
    return placeholder(shape.placeholder[len("[REDACTED:") : -1], secret, key)


def _replaced(
    shape: _Shape, whole: str, found: re.Match[str], m: Any, key: PlaceholderKey | None
) -> str:
    if "secret" not in shape.pattern.get().groupindex:  # the whole match is the secret
        return _placeholder(shape, whole, key)
    start, end = found.span("secret")
    secret = whole[start:end]
    if shape.labelled:
        return _labelled(shape, whole, found, m, key)
    if secret.startswith(_NOT_OURS) or (shape.check is not None and not shape.check(secret)):
        # not this shape's secret (a placeholder, a PEM block, a word after "Bearer"), but
        # it may hold another's: ``Bearer -----BEGINsk-proj-...`` keeps only what is clean
        kept = _within(secret, key) if shape.named else shapes_re().sub(replacement(key), secret)
        return whole if kept == secret else whole[:start] + kept + whole[end:]
    return whole[:start] + _placeholder(shape, secret, key) + whole[end:]


def _labelled(
    shape: _Shape, whole: str, found: re.Match[str], m: Any, key: PlaceholderKey | None
) -> str:
    """A value after a label: a known shape in it is named as such (``GITHUB_TOKEN:
    ghp_...`` reads ``[REDACTED:github-token]``); else it is a secret field's when the
    label names a secret and the value looks like a credential. After two labels
    (``credentials: password: ...``) the second is the value's when it names a secret;
    else it begins the value (``DB_PASSWORD=user:pass``), or is one, or the value after
    it is (``password: admin: ...``)."""
    start, end = found.span("secret")
    marked = labels_a_secret(m.string, m.start(), whole)
    chained = found.start("chain")
    if chained >= 0:
        second = found.group("chain")
        if secret_label(second):
            marked = True
        elif found.end("chain") == start - 1 and whole[start - 1] in ":=":
            start = chained  # a value holding ``:`` or ``=``, read as one
        elif shape.check is None or shape.check(second):
            start, end = found.span("chain")
    secret = whole[start:end]
    kept = _within(secret, key)
    if kept == secret and (not marked or (shape.check is not None and not shape.check(secret))):
        return whole
    made = kept if kept != secret else _placeholder(shape, secret, key)
    return whole[:start] + made + whole[end:]


def key_kind(value: str) -> str | None:
    """The kind of secret ``value`` is as a whole (``openai-key``, ``google-api-key``...),
    or None when it has no known shape (found in linear time, then told apart)."""
    if not value or shapes_re().fullmatch(value) is None:
        return None
    for shape in shapes_by_first().get(value[:1], ()):
        if shape.pattern.get().fullmatch(value) is not None:
            return shape.placeholder[len("[REDACTED:") : -1]
    return None
