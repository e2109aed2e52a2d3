"""Secrets hidden by an encoding: base64, percent-encoding and JSON ``\\u`` escapes.

A key base64-encoded in a tool's output (a Kubernetes secret, a Docker config), a key
percent-encoded in a URL, or a key whose characters a JSON writer escaped as ``\\uXXXX``
shows none of the shapes the redactor looks for. Each candidate run of such text is
decoded and redacted as text; when that finds a secret, the whole run becomes the
placeholder of the first secret found in it (``[REDACTED:openai-key]``), so a recording
and a replay redact the same way.

Finding candidates is cheap, and done first: ``might_hide_secret`` says whether a text can
hold an encoded secret at all — a ``%`` followed by two hex digits, a ``\\u`` escape, or the
base64 form of a secret's literal prefix (``c2st`` for ``sk-``). The runs are found by RE2,
in time linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

import re2

__all__ = ["EncodedSecrets"]

_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.:-]+\]")
_URL_CHAR = r"[A-Za-z0-9._~-]"  # unreserved in a URL: a run stops at / ? & = +
_PERCENT = r"%[0-9A-Fa-f]{2}"
_PERCENT_RUN = re2.compile(f"(?:{_PERCENT}|{_URL_CHAR})*{_PERCENT}(?:{_PERCENT}|{_URL_CHAR})*")
_PERCENT_HINT = re2.compile(_PERCENT)
_ESCAPE = r"\\u[0-9A-Fa-f]{4}"
_ESCAPE_RUN = re2.compile(f"(?:{_ESCAPE}|{_URL_CHAR})*{_ESCAPE}(?:{_ESCAPE}|{_URL_CHAR})*")
_ESCAPE_ONE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_BASE64_RUN = re2.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_MIN_CORE = 4
MIN_ENCODED = 20
"""Shorter text cannot hide an encoded secret: the shortest secret shape is 20 characters."""


def _cores(anchor: str) -> Iterable[str]:
    """The base64 text ``anchor`` encodes to wherever it starts in the encoded data: at a
    block boundary, and (for anchors long enough to leave 4 characters of their own) one
    and two bytes into a block. Each is cut to the characters ``anchor`` alone decides."""
    data = anchor.encode("utf-8")
    for shift in (0, 1, 2):
        encoded = base64.b64encode(b"\0" * shift + data).decode("ascii")
        whole = (shift + len(data)) // 3 * 4  # characters of complete blocks
        lead = (shift * 4 + 2) // 3  # characters that also carry the leading bytes
        core = encoded[lead:whole]
        if len(core) >= _MIN_CORE:
            yield core
            yield core.replace("+", "-").replace("/", "_")


@functools.lru_cache(maxsize=16)
def _cores_re(anchors: frozenset[str]) -> Any:
    """One RE2 alternation of every core of ``anchors``, longest first: remembered, as a
    redactor is made for each session (a serve's ``use`` line, a pytest block) from the
    same shapes and mostly the same variables."""
    cores = sorted({c for a in anchors for c in _cores(a)}, key=lambda c: (-len(c), c))
    return re2.compile("|".join(re2.escape(c) for c in cores))


def _unescape(run: str) -> str:
    text = _ESCAPE_ONE.sub(lambda m: chr(int(m.group(1), 16)), run)
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _unbase64(run: str) -> str | None:
    body = run.rstrip("=")
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    urlsafe = "-" in body or "_" in body
    if urlsafe and ("+" in body or "/" in body):
        return None  # both alphabets: not base64
    altchars = b"-_" if urlsafe else None
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data.decode("utf-8", "replace")


class EncodedSecrets:
    """Finds secrets hidden by an encoding, given what the redactor looks for.

    ``anchors``: literal text every secret holds (shape prefixes, environment values).
    ``redact``: the redactor's own text redaction, used on each decoded run."""

    __slots__ = ("_cores_re", "_redact")

    def __init__(self, anchors: Iterable[str], redact: Callable[[str], str]) -> None:
        self._cores_re: Any = _cores_re(frozenset(anchors))
        self._redact = redact

    def hints(self) -> list[str]:
        """RE2 patterns at least one of which every text hiding an encoded secret holds
        (what :meth:`might_hide_secret` looks for), for a caller's combined prefilter."""
        return [p for p in (self._cores_re.pattern, _PERCENT, _ESCAPE) if p]

    def might_hide_secret(self, text: str) -> bool:
        """False means ``text`` certainly hides no encoded secret."""
        if len(text) < MIN_ENCODED:
            return False
        if "%" in text and _PERCENT_HINT.search(text) is not None:
            return True
        if "\\u" in text:
            return True
        return self._cores_re.search(text) is not None

    def redact(self, text: str) -> str:
        """``text`` with every encoded run that hides a secret replaced by its placeholder."""
        if "%" in text:
            text = _PERCENT_RUN.sub(lambda m: self._run(m.group(), _unpercent), text)
        if "\\u" in text:
            text = _ESCAPE_RUN.sub(lambda m: self._run(m.group(), _unescape), text)
        if self._cores_re.search(text) is not None:
            text = _BASE64_RUN.sub(lambda m: self._run(m.group(), _unbase64), text)
        return text

    def _run(self, run: str, decode: Callable[[str], str | None]) -> str:
        decoded = decode(run)
        if decoded is None or decoded == run:
            return run
        found = _PLACEHOLDER.search(self._redact(decoded))
        if found is None or found.group() in decoded:
            return run
        return found.group()


def _unpercent(run: str) -> str:
    return unquote(run, errors="replace")
