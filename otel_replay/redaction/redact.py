"""Secret redaction: every secret becomes a typed placeholder before anything is written.

Placeholders are ``[REDACTED:kind]`` — ``[REDACTED:openai-key]``, ``[REDACTED:jwt]``,
``[REDACTED:env:MY_SERVICE_TOKEN]`` — and depend only on the kind of secret (or the name
of the variable that held it), never on its value. A recording made on one machine and a
live request made on another therefore redact to the same text, so matching stays stable
without the two machines sharing a secret.

Two passes, each one compiled alternation: first the shapes of known secrets, then the
literal values of secret-named environment variables and of the working directory's
``.env`` (longest first). Shapes win over literal values so that, for instance, an OpenAI
key reads ``[REDACTED:openai-key]`` whether or not it is also in this machine's
environment. A cheap substring prefilter skips the regular expressions for the common
case of text that holds no secret. Existing placeholders are never redacted again.
"""

from __future__ import annotations

import base64
import binascii
import json as _json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from otel_replay.core.exchange import JSON
from otel_replay.redaction.encoded import EncodedSecrets
from otel_replay.redaction.headers import is_sensitive_header
from otel_replay.redaction.names import is_secret_name, looks_like_settings, parse_dotenv

MIN_SECRET_LENGTH = 6
_LONG_TEXT = 64 * 1024
"""Environment and ``.env`` values shorter than this are not treated as secrets."""

PLACEHOLDER = r"\[REDACTED:[A-Za-z0-9_.:-]+\]"
PLACEHOLDER_RE = re.compile(PLACEHOLDER)

_B64URL = r"[A-Za-z0-9_-]"
# A value that is a placeholder or a PEM block is not a secret of the shape that precedes
# it: such a match is left as it is (see ``_shape_replacement``).
_NOT_OURS = ("[REDACTED:", "-----BEGIN")
_AWS_NAME = r"(?i:ws_?secret_?(?:access_?)?key|ws-secret-(?:access-)?key)"
_SECRET_ACCESS_NAME = r"(?i:ecret_?access_?key|ecret-access-key)"
# Quotes may be JSON-escaped when the text is a raw request body.
_AWS_VALUE = r"(?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?(?P<secret>[A-Za-z0-9/+]{40,})"
# An opaque token after "Bearer": 8 or more token characters holding a digit, or 20 or more
# (a longer run of letters is too long to be a word); the length and digit are checked on
# the match (``_shape_replacement``), since the pattern language has no look-ahead.
_BEARER_VALUE = r"\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
_BEARER_WORD = 20
_BASIC_VALUE = r"\s+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})"
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
_ANCHORS: tuple[str, ...] = (
    "PRIVATE KEY",
    *"sk- sk_ rk_ AKIA ASIA ecret ECRET ghp_ gho_ ghu_ ghs_ ghr_ github_pat_".split(),
    *"AIza xox xapp- eyJ earer EARER :// =".split(),
    *"hf_ gsk_ xai- r8_ dapi pplx- glpat- npm_ SG. _v1_ hooks.slack.com".split(),
    *"asic ASIC Token TOKEN ccountKey= ccessKey=".split(),
)
# Literal text whose base64 forms betray an encoded secret: the anchors of three or more
# characters (``=`` alone encodes to nothing of its own), and longer prefixes so that a
# secret that does not start an encoded block is found too (an anchor needs six
# characters to leave a base64 form of its own one or two bytes into a block).
_ENCODED_ANCHORS = (
    *(a for a in _ANCHORS if len(a) >= 3),
    *"sk-proj- sk-svcacct- sk-admin- sk-ant-api sk-ant-admin sk-or-v1-".split(),
    "Bearer ",
    "Basic ",
    "Token ",
    *"Authorization key= KEY= token= secret= password= signature= ://".split(),
    *"https:// http:// postgres:// postgresql:// mysql:// mongodb:// mongodb+srv://".split(),
    *"redis:// rediss:// amqp:// amqps:// ftp:// sftp:// ssh:// git@".split(),
)
# The same test as one compiled search. A query secret always reads ``?name=`` or
# ``&name=`` with a name of letters, ``_`` and ``-``, so ``=`` alone (frequent in base64
# and prose) need not send text to the shapes.
_QUERY_ANCHOR = r"[?&][A-Za-z_-]+="
_QUERY_ANCHOR_RE = re.compile(_QUERY_ANCHOR)
_QUERY_NAME_RE = re.compile(r"[A-Za-z_-]+=")
_QUERY_MARKS = 32


# Characters frequent in prose and JSON. An anchor holding any other character is found
# through it, with a one-character search (memchr) far faster than a substring search;
# the rest are found with ``in``, or by the first two characters several of them share.
_COMMON = frozenset("abcdefghiklmnoprstuvwy0123456789 \t\n\r\"':,.;{}[]()_-/\\")
_KEY_HITS = 16
# (anchors tested with ``in``, ((key, ((anchor, offset of the key in it), ...)), ...))
_LiteralPlan = tuple[tuple[str, ...], tuple[tuple[str, tuple[tuple[str, int], ...]], ...]]


def _literal_key(anchor: str) -> tuple[str, int]:
    for offset, char in enumerate(anchor):
        if char not in _COMMON:
            return char, offset
    return anchor[:2], 0


def _literal_plan(literals: Iterable[str]) -> _LiteralPlan:
    """The literal anchors split into ones tested with ``in`` and groups found by a key."""
    by_key: dict[str, list[tuple[str, int]]] = {}
    for anchor in literals:
        key, offset = _literal_key(anchor)
        by_key.setdefault(key, []).append((anchor, offset))
    plain = tuple(g[0][0] for k, g in by_key.items() if len(g) == 1 and k[0] in _COMMON)
    groups = tuple((k, tuple(g)) for k, g in by_key.items() if len(g) > 1 or k[0] not in _COMMON)
    return plain, groups


def _holds_literal(s: str, plan: _LiteralPlan) -> bool:
    """Whether any literal anchor of ``plan`` occurs in ``s``."""
    plain, groups = plan
    for key, group in groups:
        at = s.find(key)
        budget = _KEY_HITS
        while at >= 0:
            for anchor, offset in group:
                if at >= offset and s.startswith(anchor, at - offset):
                    return True
            budget -= 1
            if not budget:  # a text full of the key: search for the anchors themselves
                if any(s.find(anchor, max(at - offset, 0)) >= 0 for anchor, offset in group):
                    return True
                break
            at = s.find(key, at + 1)
    return any(anchor in s for anchor in plain)


def _has_query_anchor(s: str) -> bool:
    """``_QUERY_ANCHOR_RE.search(s) is not None``, several times faster on long text: the
    regex engine steps through every character, while ``?`` and ``&`` are found with a
    fast substring search and are rare in prose and JSON."""
    match = _QUERY_NAME_RE.match
    budget = _QUERY_MARKS
    for mark in "?&":
        at = s.find(mark)
        while at >= 0:
            if match(s, at + 1) is not None:
                return True
            budget -= 1
            if not budget:  # a text full of marks: the regex engine's own scan is faster
                return _QUERY_ANCHOR_RE.search(s) is not None
            at = s.find(mark, at + 1)
    return False


_SHORT = 24
_CLEAN_MAX_LENGTH = 64
_CLEAN_MAX_SIZE = 16384
_SCALARS = (int, float, bool)


def _anchor_pattern(literals: Iterable[str]) -> Any:
    parts = [re2.escape(a) for a in literals if a != "="]
    return re2.compile("|".join([*parts, _QUERY_ANCHOR]))


@dataclass(frozen=True, slots=True)
class _Shape:
    """One shape as the replacement sees it: its placeholder, its pattern for the
    backtracking engine (run only on a match RE2 already found, anchored there, so its
    cost is that of one match) and whether it is a bearer token (checked on the match)."""

    placeholder: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None


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
}


def _compile_shapes() -> tuple[Any, dict[str, tuple[_Shape, ...]]]:
    """One RE2 alternation over all shapes, without groups (RE2 then finds matches with
    its DFA alone, whatever their length), placeholders first so they are kept as they
    are; and the shapes by first character, in order, to tell which one matched."""
    branches = [PLACEHOLDER]
    by_first: dict[str, list[_Shape]] = {}
    for kind, pattern in _SHAPES:
        if pattern[0] in "([.^$*+?{|" or (pattern[0] == "\\" and pattern[1].isalnum()):
            raise ValueError(f"shape for {kind} must start with a literal character")
        branches.append(pattern.replace("(?P<secret>", "(?:"))
        first = pattern[1] if pattern[0] == "\\" else pattern[0]
        local = re.compile(pattern.replace("\\z", "\\Z"))
        shape = _Shape(f"[REDACTED:{kind}]", local, _CHECKS.get(kind))
        by_first.setdefault(first, []).append(shape)
    compiled = re2.compile("|".join(branches))
    return compiled, {first: tuple(shapes) for first, shapes in by_first.items()}


_SHAPES_RE, _SHAPES_BY_FIRST = _compile_shapes()
_DEFAULT_ANCHOR_RE = _anchor_pattern(_ANCHORS)


def _shape_replacement(m: Any) -> str:
    whole: str = m.group()
    for shape in _SHAPES_BY_FIRST.get(whole[:1], ()):
        found = shape.pattern.match(whole)
        if found is not None and found.end() == len(whole):
            return _replaced(shape, whole, found)
    return whole  # a placeholder, kept as it is


def _replaced(shape: _Shape, whole: str, found: re.Match[str]) -> str:
    if "secret" not in shape.pattern.groupindex:  # the whole match is the secret
        return shape.placeholder
    start, end = found.span("secret")
    secret = whole[start:end]
    if secret.startswith(_NOT_OURS):
        return whole
    if shape.check is not None and not shape.check(secret):
        return whole  # e.g. a word after "Bearer" ("Bearer authentication"), not a token
    return whole[:start] + shape.placeholder + whole[end:]


# Lone surrogates (from a JSON ``\ud800`` escape) cannot be encoded as UTF-8, which RE2
# reads; no secret holds one, so the text between them is redacted piece by piece.
_SURROGATES = re.compile("([\ud800-\udfff]+)")


class Redactor:
    """Replaces secrets in text and JSON with typed placeholders. Stateless once built.

    ``secrets`` maps a variable name to its value; values shorter than
    ``MIN_SECRET_LENGTH`` are ignored. Its repr names the variables, never the values.
    """

    __slots__ = (
        "_anchor_re",
        "_anchors",
        "_clean",
        "_encoded",
        "_literals",
        "_names",
        "_plan",
        "_value_names",
        "_values_re",
    )

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        by_value: dict[str, str] = {}
        for name, value in sorted((secrets or {}).items()):
            if len(value) >= MIN_SECRET_LENGTH and not PLACEHOLDER_RE.fullmatch(value):
                by_value.setdefault(value, name)
                # As it appears inside JSON text (a raw body, an SSE data line).
                by_value.setdefault(_json.dumps(value, ensure_ascii=False)[1:-1], name)
        self._names = tuple(sorted(set(by_value.values())))
        ordered = sorted(by_value, key=lambda v: (-len(v), v))
        self._values_re: Any = None
        self._anchors: tuple[str, ...] = _ANCHORS
        if ordered:
            self._values_re = re2.compile(
                f"(?P<keep>{PLACEHOLDER})|" + "|".join(re2.escape(v) for v in ordered)
            )
            self._anchors = _ANCHORS + tuple(ordered)
        self._anchor_re = _DEFAULT_ANCHOR_RE if not ordered else _anchor_pattern(self._anchors)
        self._literals = tuple(a for a in self._anchors if a != "=")
        self._plan = _literal_plan(self._literals)
        self._clean: set[str] = set()
        self._value_names = by_value
        self._encoded = EncodedSecrets(_ENCODED_ANCHORS + tuple(ordered), self._plain_text)

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> Redactor:
        """Secrets from ``*_KEY``/``*_TOKEN``/``*_SECRET``/``*_PASSWORD`` variables and
        from every value of ``cwd/.env`` (the current directory by default)."""
        env = os.environ if environ is None else environ
        secrets = {name: value for name, value in env.items() if is_secret_name(name)}
        dotenv = (Path.cwd() if cwd is None else cwd) / ".env"
        try:
            text = dotenv.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        for name, value in parse_dotenv(text).items():
            if is_secret_name(name) or not looks_like_settings(name, value):
                secrets.setdefault(name, value)
        return cls(secrets)

    def __repr__(self) -> str:
        return f"Redactor(names={list(self._names)!r})"

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the variables whose values are redacted."""
        return self._names

    def might_hold_secret(self, s: str) -> bool:
        """Cheap test: False means ``s`` certainly holds nothing to redact."""
        try:
            return self._might_hold_secret(s)
        except UnicodeEncodeError:  # lone surrogates, which RE2 cannot read
            return any(self._might_hold_secret(part) for part in _SURROGATES.split(s)[::2])

    def _might_hold_secret(self, s: str) -> bool:
        if len(s) <= _SHORT:  # one compiled search beats many short substring tests
            if self._anchor_re.search(s) is not None:
                return True
        elif _holds_literal(s, self._plan) or _has_query_anchor(s):
            return True
        return self._encoded.might_hide_secret(s)

    def text(self, s: str) -> str:
        """``s`` with every secret replaced by its placeholder."""
        try:
            return self._text(s)
        except UnicodeEncodeError:  # lone surrogates: RE2 reads the text between them
            parts = _SURROGATES.split(s)
            parts[::2] = [self._text(part) for part in parts[::2]]
            out = "".join(parts)
            return s if out == s else out

    def _text(self, s: str) -> str:
        # On a long text (a whole OTLP batch) some anchor is nearly always present (a URL's
        # "://"), so the prefilter would only add a scan before the substitution's own.
        if len(s) <= _LONG_TEXT and not self.might_hold_secret(s):
            return s
        out = self._plain_text(s)
        if self._encoded.might_hide_secret(out):
            out = self._encoded.redact(out)
        return s if out == s else out  # unchanged text is returned as the same object

    def _plain_text(self, s: str) -> str:
        """``s`` with every secret written as itself replaced (no decoding)."""
        out: str = _SHAPES_RE.sub(_shape_replacement, s)
        if self._values_re is not None:
            out = self._values_re.sub(self._value_replacement, out)
        return out

    def _value_replacement(self, m: Any) -> str:
        found: str = m.group()
        if m.lastgroup == "keep":
            return found
        return f"[REDACTED:env:{self._value_names[found]}]"

    def json(self, value: JSON) -> JSON:
        """A copy of a JSON value with every string (dict keys too) redacted.

        Returns ``value`` itself when nothing needed redacting; never mutates it."""
        try:
            blob = _json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            blob = None
        if blob is not None and not self.might_hold_secret(blob):
            return value
        return self._walk(value)

    def _clean_text(self, s: str) -> str:
        """``text(s)``, remembering short strings that hold nothing to redact (keys,
        attribute names, enum values...), which come back in every batch."""
        clean = self._clean
        if s in clean:
            return s
        out = self.text(s)
        if out is s and len(s) <= _CLEAN_MAX_LENGTH and len(clean) < _CLEAN_MAX_SIZE:
            clean.add(s)
        return out

    def _walk(self, value: JSON) -> JSON:
        if isinstance(value, str):
            return self._clean_text(value)
        if isinstance(value, dict):
            text = self._clean_text
            walk = self._walk
            out = {}
            changed = False
            for k, v in value.items():
                key = text(k) if isinstance(k, str) else k
                item = v if v is None or type(v) in _SCALARS else walk(v)
                if item is not v or key != k:
                    changed = True
                out[key] = item
            return out if changed or len(out) != len(value) else value
        if isinstance(value, list | tuple):
            items = [self._walk(v) for v in value]
            if any(a is not b for a, b in zip(value, items, strict=True)):
                return items if isinstance(value, list) else tuple(items)
            return value
        return value

    def headers(self, mapping: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
        """Headers without credential headers (dropped entirely), other values redacted."""
        items = mapping.items() if isinstance(mapping, Mapping) else mapping
        return {name: self.text(value) for name, value in items if not is_sensitive_header(name)}


PATTERNS_ONLY = Redactor()
"""A redactor for secret shapes alone, without environment values."""
