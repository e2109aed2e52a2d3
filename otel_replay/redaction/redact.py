"""Secret redaction: every secret becomes a typed placeholder before anything is written.

Placeholders are ``[REDACTED:kind]`` — ``[REDACTED:openai-key]``, ``[REDACTED:jwt]``,
``[REDACTED:env:MY_SERVICE_TOKEN]`` — and depend only on the kind of secret (or the name
of the variable that held it), never on its value. A recording made on one machine and a
live request made on another therefore redact to the same text, so matching stays stable
without the two machines sharing a secret. With ``OTEL_REPLAY_HMAC_KEY`` set they also
carry a keyed hash of the secret (``keyed.py``), so another secret reads differently.

Two passes, each one compiled alternation: first the shapes of known secrets, then the
literal values of secret-named environment variables and of the working directory's
``.env`` (longest first). Shapes win over literal values so that, for instance, an OpenAI
key reads ``[REDACTED:openai-key]`` whether or not it is also in this machine's
environment. A cheap substring prefilter skips the regular expressions for the common
case of text that holds no secret. Existing placeholders are never redacted again.
"""

from __future__ import annotations

import functools
import json as _json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import re2

from otel_replay.core.exchange import JSON
from otel_replay.core.jsontext import orjson_text
from otel_replay.redaction.encoded import EncodedSecrets
from otel_replay.redaction.headers import is_sensitive_header
from otel_replay.redaction.keyed import PlaceholderKey, key_from_environment, placeholder
from otel_replay.redaction.names import (
    credential_like,
    is_secret_field,
    is_secret_name,
    looks_like_settings,
    parse_dotenv,
)
from otel_replay.redaction.shapes import (
    ANCHOR_PATTERNS,
    ANCHORS,
    ENCODED_ANCHORS,
    PLACEHOLDER,
    PLACEHOLDER_RE,
    replacement,
    shape_replacement,
    shapes_by_first,
    shapes_re,
)

_WARM = (
    '{"prompt_cache_key": "Q1w2E3r4T5y6U7i8O9p0Q1w2E3r4", "api_token": "Zz9Yy8Xx7Ww6Vv5Uu4",'
    ' "max_output_tokens": 1000} [REDACTED:openai-key] password: hunter2-Xk9! DB_PASS=s3cr3t'
    "Value9 token_count=12 Authorization: Bearer abc123def456ghi client_secret=<yours>"
)
"""Text with the matches redaction meets most (a secret's name and a value, a placeholder,
a bearer token), run through once as a gateway starts: RE2 builds what its first match of
each kind needs then (tens of milliseconds for the whole alternation), not on a request."""

MIN_SECRET_LENGTH = 6
"""Environment and ``.env`` values shorter than this are not treated as secrets."""
_LONG_TEXT = 64 * 1024

# A query secret always reads ``?name=`` or ``&name=`` with a name of letters, ``_`` and
# ``-``, so ``=`` alone (frequent in base64 and prose) need not send text to the shapes.
_QUERY_ANCHOR = r"[?&][A-Za-z_-]+="

_CLEAN_MAX_LENGTH = 64
_CLEAN_MAX_SIZE = 16384
# An agent resends its whole conversation every turn: a string this long or longer (a
# system prompt, a tool description, an earlier message) is redacted once and its result
# remembered, up to this many characters in all; then the memory starts afresh.
_MEMO_MIN_LENGTH = 256
_MEMO_MAX_CHARS = 32 * 1024 * 1024
_MISSING = object()
_SCALARS = (int, float, bool)
_FIELD_PROBE = "A1b2C3d4" * 6  # a value every secret-field shape takes
_NOT_SECRET, _BY_SHAPE, _BY_WORD = 0, 1, 2
"""What a field's name says of its value: nothing, a secret the shapes read, a secret by
a word of the name alone."""


@functools.lru_cache(maxsize=16)
def _prefilter(literals: tuple[str, ...], hints: tuple[str, ...]) -> Any:
    """One RE2 search for everything a secret shows: the literal anchors, a query
    secret's ``?name=``, and the marks of an encoded secret (``hints``). RE2's DFA reads
    the text once, whatever the number of anchors. Compiled once per set of secrets: the
    redactor of each session a process opens (each ``serve`` cassette) shares it."""
    parts = [re2.escape(a) for a in literals]
    return re2.compile("|".join([*parts, *ANCHOR_PATTERNS, _QUERY_ANCHOR, *hints]))


@functools.lru_cache(maxsize=16)
def _values(ordered: tuple[str, ...]) -> Any:
    """The secret values' alternation (a placeholder kept as it is), compiled once per
    set of values, as ``_prefilter``."""
    return re2.compile(f"(?P<keep>{PLACEHOLDER})|" + "|".join(re2.escape(v) for v in ordered))


# Lone surrogates (from a JSON ``\ud800`` escape) cannot be encoded as UTF-8, which RE2
# reads; no secret holds one, so the text between them is redacted piece by piece.
_SURROGATES = re.compile("([\ud800-\udfff]+)")


@functools.cache
def _prepared() -> None:
    """``Redactor.prepare``'s work, done once: RE2's first matches build its machinery."""
    shapes_re().sub(shape_replacement, _WARM)
    shapes_by_first()


class Redactor:
    """Replaces secrets in text and JSON with typed placeholders. Stateless once built.

    ``secrets`` maps a variable name to its value; values shorter than
    ``MIN_SECRET_LENGTH`` are ignored. ``key``: placeholders carry a keyed hash of the
    secret (``keyed.py``). Its repr names the variables, never the values.
    """

    __slots__ = (
        "_anchors",
        "_clean",
        "_encoded",
        "_field_names",
        "_literals",
        "_memo",
        "_memo_chars",
        "_names",
        "_prefilter_re",
        "_raw_values",
        "_replacement",
        "_value_names",
        "_values_re",
        "key",
    )

    def __init__(
        self, secrets: Mapping[str, str] | None = None, key: PlaceholderKey | None = None
    ) -> None:
        by_value: dict[str, str] = {}
        raw: dict[str, str] = {}  # each form of a value (as JSON text too): the value
        for name, value in sorted((secrets or {}).items()):
            if len(value) >= MIN_SECRET_LENGTH and not PLACEHOLDER_RE.fullmatch(value):
                by_value.setdefault(value, name)
                # As it appears inside JSON text (a raw body, an SSE data line).
                escaped = _json.dumps(value, ensure_ascii=False)[1:-1]
                by_value.setdefault(escaped, name)
                raw.setdefault(value, value)
                raw.setdefault(escaped, value)
        self.key = key
        self._replacement = replacement(key)
        self._raw_values = raw
        self._names = tuple(sorted(set(by_value.values())))
        ordered = sorted(by_value, key=lambda v: (-len(v), v))
        self._values_re: Any = None
        self._anchors: tuple[str, ...] = ANCHORS
        if ordered:
            self._values_re = _values(tuple(ordered))
            self._anchors = ANCHORS + tuple(ordered)
        self._literals = tuple(a for a in self._anchors if a != "=")
        self._clean: set[str] = set()
        self._field_names: dict[str, int] = {}
        self._memo: dict[str, str | None] = {}
        self._memo_chars = 0
        self._value_names = by_value
        self._encoded = EncodedSecrets(ENCODED_ANCHORS + tuple(ordered), self._plain_text)
        self._prefilter_re = _prefilter(self._literals, tuple(self._encoded.hints()))

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
        return cls(secrets, key_from_environment(env))

    def __repr__(self) -> str:
        return f"Redactor(names={list(self._names)!r})"

    @staticmethod
    def prepare() -> None:
        """Compile now what redacting compiles when it first tells a match apart (a
        gateway does this before its first request, which then does not wait for it).
        Once a process: what it builds is shared by every redactor."""
        _prepared()

    @property
    def names(self) -> tuple[str, ...]:
        """Names of the variables whose values are redacted."""
        return self._names

    def values_avoid(self, chars: str) -> bool:
        """Whether no literal secret value (environment, ``.env``) holds any of ``chars``."""
        return not any(c in value for value in self._value_names for c in chars)

    def might_hold_secret(self, s: str) -> bool:
        """Cheap test: False means ``s`` certainly holds nothing to redact."""
        try:
            return self._might_hold_secret(s)
        except UnicodeEncodeError:  # lone surrogates, which RE2 cannot read
            return any(self._might_hold_secret(part) for part in _SURROGATES.split(s)[::2])

    def _might_hold_secret(self, s: str) -> bool:
        return self._prefilter_re.search(s) is not None

    def texts(self, items: list[str]) -> list[str]:
        """``[text(s) for s in items]`` (``items`` itself when none changes), after one
        cheap test over them all: a stream's events, which hold no secret most often."""
        if not self.might_hold_secret("\n".join(items)):
            return items
        return [self.text(s) for s in items]

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
        out: str = shapes_re().sub(self._replacement, s)
        if self._values_re is not None:
            out = self._values_re.sub(self._value_replacement, out)
        return out

    def _value_replacement(self, m: Any) -> str:
        found: str = m.group()
        if m.lastgroup == "keep":
            return found
        return placeholder(f"env:{self._value_names[found]}", self._raw_values[found], self.key)

    def json(self, value: JSON, *, size: int | None = None) -> JSON:
        """A copy of a JSON value with every string (dict keys too) redacted.

        Returns ``value`` itself when nothing needed redacting; never mutates it. ``size``:
        the length of the value's JSON text, when the caller knows it; a value that large
        (a whole conversation) nearly always holds some anchor, so it is walked at once
        rather than first serialised for the prefilter."""
        kind = type(value)
        if kind is str:  # what the prefilter would find, ``text`` finds as fast
            return self._clean_text(value)
        if value is None or kind in _SCALARS:  # only strings hold secrets
            return value
        if size is not None and size > _LONG_TEXT:
            return self._walk(value)
        # orjson writes every string and key as the standard library does (UTF-8, the
        # same escapes); only the spaces between them differ, and no anchor holds one
        compact = orjson_text(value)
        if compact is not None:
            return value if self._prefilter_re.search(compact) is None else self._walk(value)
        try:
            blob = _json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            blob = None
        if blob is not None and not self.might_hold_secret(blob):
            return value
        return self._walk(value)

    def _clean_text(self, s: str) -> str:
        """``text(s)``, remembering short strings that hold nothing to redact (keys,
        attribute names, enum values...), which come back in every batch, and the result
        for long ones, which come back in every turn of a conversation."""
        size = len(s)
        if size >= _MEMO_MIN_LENGTH:
            return self._memo_text(s, size)
        clean = self._clean
        if s in clean:
            return s
        out = self.text(s)
        if out is s and size <= _CLEAN_MAX_LENGTH and len(clean) < _CLEAN_MAX_SIZE:
            clean.add(s)
        return out

    def _memo_text(self, s: str, size: int) -> str:
        done = self._memo.get(s, _MISSING)
        if done is not _MISSING:
            return s if done is None else done  # type: ignore[return-value]
        out = self.text(s)
        if self._memo_chars + size > _MEMO_MAX_CHARS:
            self._memo.clear()
            self._memo_chars = 0
        self._memo[s] = None if out is s else out
        self._memo_chars += size
        return out

    def member(self, key: str, value: JSON) -> JSON | None:
        """What ``json`` makes of ``value`` as the field ``key`` of an object, when its
        name says it is a secret (a string under ``password``, ``api_key`` ...); None when
        the name says nothing, and ``json(value)`` is what it becomes."""
        if type(value) is str and self._names_a_secret(key):
            return self._field(key, value)
        return None

    def _names_a_secret(self, key: str) -> bool:
        """Whether a value under ``key`` is a secret by its name: as the text shapes read
        ``"key": "value"`` in JSON text (``password``, ``api_key`` ...), or by a secret
        word the shapes do not read (``API_TOKEN_FILE_CONTENT``: ``names.is_secret_field``)."""
        return self._field_kind(key) != _NOT_SECRET

    def _field_kind(self, key: str) -> int:
        found = self._field_names.get(key)
        if found is None:
            probe = _json.dumps({key: _FIELD_PROBE}, ensure_ascii=False)
            if self.text(probe) != probe:
                found = _BY_SHAPE
            else:
                found = _BY_WORD if is_secret_field(key) else _NOT_SECRET
            if len(self._field_names) < _CLEAN_MAX_SIZE:
                self._field_names[key] = found
        return found

    def _field(self, key: str, value: str) -> str:
        """``value`` under a secret's name, redacted as its ``"key": "value"`` text is (or,
        under a name the shapes do not read, whenever it looks like a credential)."""
        if self._field_kind(key) == _BY_WORD:
            if credential_like(value):
                return placeholder("secret-field", value, self.key)
            return self._clean_text(value)
        text = _json.dumps({key: value}, ensure_ascii=False)
        clean = self.text(text)
        if clean == text:
            return self._clean_text(value)
        try:
            parsed = _json.loads(clean)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and len(parsed) == 1:
            (found,) = parsed.values()
            if isinstance(found, str):
                return found
        return placeholder("secret-field", value, self.key)

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
                item = self.member(k, v) if type(k) is str else None
                if item is None:
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
