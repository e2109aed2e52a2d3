"""The redaction of a trace line checked part by part, each distinct part once.

The trace store redacts every line it writes: one pass of the redactor over the line's
whole JSON text. The gateway's own spans repeat most of their text from call to call (a
coding agent's system prompt, tools and earlier turns, resent every turn), so that pass
reads the same text again and again. :class:`CleanParts` gives the same verdict — "the
pass would change nothing" — while reading only the parts of a line it has not seen
before.

Why the parts can be checked one by one. A line is cut at its *joints*: a quote followed
by ``,``, ``}`` or ``]`` (the end of a JSON string, at any level of nesting), or a longer
string holding one. No match of the redactor holds a joint or starts inside one:

- every secret shape starts with a letter or ``-``, ``_``, ``:``, ``?``, ``&``, ``[``;
  a shape holds a quote only between a secret's name and its value, and there it is
  followed by blanks and ``:`` or ``=`` (``"password": "..."``), never by ``,}]``;
  the only shape that can run across anything, a PEM private key with no end line, is
  ruled out by looking for ``-----BEGIN`` first;
- an encoded secret's run (base64, percent-encoding, ``\\u`` escapes) holds no quote;
- a literal secret value (from the environment or ``.env``) could hold anything, so the
  caller uses this only when no value holds a joint's character (``JOINT_CHARS``).

So each match lies inside one part, and the pass over the line changes nothing exactly
when it changes none of the parts. Parts already known to be clean are skipped; the
others are joined at joints and checked with one pass. Any change sends the caller back
to the full pass, so the line written is always the full pass's line.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["JOINT_CHARS", "CleanParts"]

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
