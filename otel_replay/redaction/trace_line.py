"""A trace line's redaction: the one check every line the trace store writes passes.

A line is an OTLP JSON document written compactly (``core.jsontext.otlp_line``). Its
check, in order:

- header attributes that carry credentials (``http.request.header.x-api-key``) hold
  placeholders, whatever their values look like;
- attributes named like a secret (``aws_secret_access_key``, ``db.password``): an
  attribute is a ``{"key": NAME, "value": ANYVALUE}`` pair, so a secret under it never
  reads ``"name": "value"`` in the line's text, the form the secret shapes know; the
  names are found with one pass over the line (:func:`names_a_secret`) and the document
  rewritten when one names a secret (:func:`scrub_secret_attributes`);
- then the redactor's pass over the whole text, or, for otel-replay's own lines, its
  verdict part by part (:class:`CleanParts`); a pass whose result is not JSON (a pattern
  running to the end of the text) gives way to the walk of the document.

**Part by part.** The gateway's own spans repeat most of their text from call to call (a
coding agent's system prompt, tools and earlier turns, resent every turn), so the pass
would read the same text again and again. :class:`CleanParts` gives the same verdict —
"the pass would change nothing" — while reading only the parts of a line it has not seen
before. A line is cut at its *joints*: a quote followed by ``,``, ``}`` or ``]`` (the end
of a JSON string, at any level of nesting), or a longer string holding one. No match of
the redactor holds a joint or starts inside one:

- every secret shape starts with a letter or ``-``, ``_``, ``:``, ``?``, ``&``, ``[``;
  a shape holds a quote only between a secret's name and its value, and there it is
  followed by blanks and ``:`` or ``=`` (``"password": "..."``), never by ``,}]``;
  the only shape that can run across anything, a PEM private key with no end line, is
  ruled out by looking for ``-----BEGIN`` first;
- an encoded secret's run (base64, percent-encoding, ``\\u`` escapes) holds no quote;
- a literal secret value (from the environment or ``.env``) could hold anything, so the
  store uses this only when no value holds a joint's character (``JOINT_CHARS``).

So each match lies inside one part, and the pass over the line changes nothing exactly
when it changes none of the parts. Parts already known to be clean are skipped; the
others are joined at joints and checked with one pass. Any change sends the line back to
the full pass, so the line written is always the full pass's line.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from otel_replay.core.exchange import JSON
from otel_replay.core.jsontext import otlp_line
from otel_replay.redaction.headers import (
    HEADER_ATTRIBUTE_PREFIXES,
    scrub_attributes,
    scrub_header_attributes,
)
from otel_replay.redaction.keyed import PlaceholderKey
from otel_replay.redaction.names import credential_like, is_secret_field

__all__ = [
    "CUT_LINE",
    "JOINT_CHARS",
    "CleanParts",
    "LineCheck",
    "names_a_secret",
    "scrub_secret_attributes",
]

Redact = Callable[[Any], Any]
RedactText = Callable[[str], str]

# --- attributes named like a secret ------------------------------------------------------

_KEY_MARK = '"key":"'
"""How an attribute's name begins in a compact OTLP JSON line."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
# How a header attribute's key reads in an OTLP JSON line.
_HEADER_MARKERS = tuple(f'"key":"{prefix}' for prefix in HEADER_ATTRIBUTE_PREFIXES)


@functools.lru_cache(maxsize=4096)
def _secret(name: str) -> bool:
    return is_secret_field(name)


def names_a_secret(text: str) -> bool:
    """Whether a compact OTLP JSON line holds an attribute whose name marks a secret (one
    pass of ``str.find`` over the line; each distinct name is judged once)."""
    at = text.find(_KEY_MARK)
    while at >= 0:
        start = at + len(_KEY_MARK)
        end = text.find('"', start)
        if end < 0:
            return False
        if _secret(text[start:end]):
            return True
        at = text.find(_KEY_MARK, end)
    return False


def scrub_secret_attributes(node: JSON, key: PlaceholderKey | None = None) -> JSON:
    """An OTLP JSON document (or part of one) whose attributes named like a secret hold
    ``[REDACTED:attribute:NAME]`` (keyed with ``key``) in place of each string value that
    looks like a credential (8 characters or more, no spaces)."""
    return scrub_attributes(node, _kind, credential_like, key)


def _kind(name: str) -> str | None:
    return f"attribute:{_UNSAFE.sub('_', name)}" if _secret(name) else None


# --- the pass, part by part --------------------------------------------------------------

JOINTS = ('\\"},{\\"', '"}', '",', '"]')
"""Cut at in turn: a part not known clean is cut again at the next. First between two
objects of a list held in a string value (a message, a tool of a GenAI attribute, or of
a body's template: a conversation's earlier messages, met again, each stay one part),
a joint with what surrounds it."""
_GLUE = '",'  # the parts left to check are joined at a joint, and checked in one pass
JOINT_CHARS = '",}]'
"""A secret value holding one of these could run across a joint."""
_UNBOUNDED = "-----BEGIN"  # a private key's pattern runs to the end of the text
_MIN_LENGTH = 32  # shorter parts are checked again each time (cheaper than remembering)
LONG_LINE = 64 * 1024
"""Shorter lines are first given the redactor's cheap test, which most often clears them
at once (a long line nearly always holds one of its anchors, a URL's ``://``)."""
CUT_LINE = 8 * 1024
"""Shorter lines are redacted whole: one pass reads them faster than they are cut up."""
_MAX_CHARS = 64 * 1024 * 1024  # then the memory starts afresh
_LEARNT = 1024  # shorter texts learnt ahead are checked with their line


class CleanParts:
    """Remembers the parts of lines that ``redact_text`` leaves unchanged."""

    __slots__ = ("_chars", "_clean", "_might_hold", "_redact_text")

    def __init__(
        self, redact_text: Callable[[str], str], might_hold: Callable[[str], bool] | None = None
    ) -> None:
        """``might_hold``: the redactor's cheap test (false: nothing to redact)."""
        self._redact_text = redact_text
        self._might_hold = might_hold
        self._clean: set[str] = set()
        self._chars = 0

    def clean(self, text: str) -> bool:
        """Whether ``redact_text(text) == text``; False may also mean "not known" (or a
        line short enough to redact whole): the caller then redacts the whole text."""
        if len(text) < CUT_LINE or _UNBOUNDED in text:
            return False
        if len(text) < LONG_LINE and self._might_hold is not None and not self._might_hold(text):
            return True
        return self._check(text)

    def learn(self, text: str) -> None:
        """Check the parts of ``text``, a piece of a line to come (a recorded call's
        request, while its provider works), so that the line has only its other parts
        left to check when it is written."""
        if _UNBOUNDED not in text:
            self._check(text)

    def _check(self, text: str) -> bool:
        unseen: list[str] = []
        leaves: list[str] = []
        self._collect(text, 0, unseen, leaves)
        if not leaves:
            return True
        probe = _GLUE.join(leaves)
        if self._redact_text(probe) != probe:
            return False
        self._remember(unseen)
        return True

    def _collect(self, text: str, level: int, unseen: list[str], leaves: list[str]) -> None:
        """The parts of ``text`` not known clean: at each level, a part not remembered is
        cut again at the next kind of joint; what is left at the last level, and a part
        too short to be remembered, is checked (a text holding joints is clean exactly
        when its parts are, so a short part is not worth cutting)."""
        if level == len(JOINTS):
            leaves.append(text)
            return
        clean = self._clean
        for part in text.split(JOINTS[level]):
            if len(part) < _MIN_LENGTH:  # never remembered: checked as it is
                leaves.append(part)
            elif part not in clean:
                unseen.append(part)
                self._collect(part, level + 1, unseen, leaves)

    def _remember(self, parts: list[str]) -> None:
        size = sum(map(len, parts))
        if self._chars + size > _MAX_CHARS:
            self._clean.clear()
            self._chars = 0
        self._clean.update(parts)
        self._chars += size


# --- the line ----------------------------------------------------------------------------


class LineCheck:
    """The redaction of the lines one trace store writes.

    ``redact`` walks a JSON value replacing secrets (None: lines are written as they
    are). ``redact_text`` does the same on JSON text: one regex pass over the whole line,
    several times faster than the walk; its result is used when it is still valid JSON,
    else the walk decides. ``by_parts``: otel-replay's own lines may be checked part by
    part, each distinct part once (:class:`CleanParts`: true when no literal secret value
    holds a character of ``JOINT_CHARS``); received telemetry is always redacted whole.
    ``might_hold``: the redactor's cheap test, which clears most lines of a middling size
    at once. ``placeholder_key``: the key of the placeholders written for attributes
    named like a secret (``redaction.keyed``)."""

    __slots__ = ("_key", "_redact", "_redact_text", "parts")

    def __init__(
        self,
        redact: Redact | None = None,
        redact_text: RedactText | None = None,
        *,
        by_parts: bool = False,
        might_hold: Callable[[str], bool] | None = None,
        placeholder_key: PlaceholderKey | None = None,
    ) -> None:
        self._redact = redact
        self._redact_text = redact_text
        self._key = placeholder_key
        self.parts = (
            CleanParts(redact_text, might_hold) if by_parts and redact_text is not None else None
        )

    def line(self, doc: dict[str, Any], own: bool = False) -> tuple[bytes, bool]:
        """The redacted line of ``doc`` (newline included), and whether redaction left it
        as ``doc`` encodes (only then does the line hold each string of ``doc`` exactly).
        ``own``: a line of otel-replay's own, which may be checked part by part."""
        text = otlp_line(doc)
        if self._redact is None:
            return (text + "\n").encode("utf-8"), True
        intact = True
        if any(marker in text for marker in _HEADER_MARKERS):
            doc = scrub_header_attributes(doc, self._key)
            text, intact = otlp_line(doc), False
        if names_a_secret(text):
            doc = scrub_secret_attributes(doc, self._key)
            text, intact = otlp_line(doc), False
        parts = self.parts if own else None
        if intact and parts is not None and parts.clean(text):
            return (text + "\n").encode("utf-8"), True  # what the pass below would return
        if self._redact_text is not None:
            # Every string of ``doc`` appears in the line as JSON text, and placeholders
            # hold no quote or backslash; only a pattern running to the end of the text
            # (an unterminated PEM block) can break the line, and then the walk decides.
            clean = self._redact_text(text)
            if clean == text:
                return (clean + "\n").encode("utf-8"), intact
            if _is_json(clean):
                return (_bytes_placeholders(clean) + "\n").encode("utf-8"), False
        line = _bytes_placeholders(otlp_line(self._redact(doc)))
        return (line + "\n").encode("utf-8"), False

    def learning(self, texts: list[str]) -> Iterator[None]:
        """Check ahead the strings an own line is about to hold (a recorded call's
        request, while its provider works), as that line will hold them, so that its
        check reads only what is new in it; a step for each text checked."""
        if self.parts is None or sum(map(len, texts)) < CUT_LINE:  # redacted whole
            return
        for text in texts:
            if len(text) >= _LEARNT:
                self.parts.learn(orjson.dumps(text).decode("utf-8"))
                yield


_BYTES_PLACEHOLDER = re.compile(r'"bytesValue":"(\[REDACTED:[A-Za-z0-9_.:-]+\])"')


def _bytes_placeholders(line: str) -> str:
    """A redacted line whose ``bytesValue`` fields are base64 again: a secret found in
    bytes (redaction decodes base64) leaves its placeholder there, which OTLP JSON would
    no longer read as bytes; it becomes the base64 of the placeholder's text."""
    if '"bytesValue":"[' not in line:
        return line
    return _BYTES_PLACEHOLDER.sub(
        lambda m: '"bytesValue":"' + base64.b64encode(m.group(1).encode()).decode() + '"', line
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
