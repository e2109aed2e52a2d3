"""The one regular expression a rule set's volatile rules (``matching.rules``) are tried
in, each as a named group in the table's order: at every place of a text the first rule
that matches there wins, as one alternation of them all decides.

Rules marked ``word_start`` match only where no ASCII letter or digit precedes; a run of
them is tried behind one look-behind saying so, so the inside of a word (most of any
text) costs one test rather than one per rule.

``Substitution`` replaces the alternation's matches as ``re.sub`` does, the places worth
trying found first by RE2 (``relaxed``: the alternation without its look-arounds, which
matches wherever the alternation does): the standard library's engine tries every rule at every
place of a text, some 0.2 µs a character here, where RE2 passes over the text in linear
time; a long text (a system prompt, a tool's output) then costs a few tries, not a scan.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from otel_replay.matching.linear import UNANCHORED, PatternError, char_size, check_linear

__all__ = ["Substitution", "alternation", "relaxed"]

_SCANNED = 256
"""Texts shorter than this are left to the standard library alone (RE2's call costs more)."""

_WORD_START = r"(?<![A-Za-z0-9])"


def alternation(branches: Sequence[tuple[str, str, bool]], gated: bool = True) -> str:
    """One regular expression trying each (kind, pattern, word start) branch in turn, as
    the group ``r<i>``. Consecutive branches that only match where a word starts are
    tried behind one look-behind (when ``gated``): the inside of a word, most of any
    text, is then passed over with one test rather than one per branch (about three
    times as fast over prose), and the same branch matches in the same place, as
    ``tests/test_normalize.py`` holds against the plain alternation (``gated=False``)."""
    out: list[str] = []
    run: list[str] = []
    for i, (_, pattern, word_start) in enumerate(branches):
        group = f"(?P<r{i}>{pattern})"
        if gated and word_start:
            run.append(group)
            continue
        if run:
            out.append(_WORD_START + "(?:" + "|".join(run) + ")")
            run = []
        out.append(group)
    if run:
        out.append(_WORD_START + "(?:" + "|".join(run) + ")")
    return "|".join(out)


_ANY_WIDE = r"\x{80}-\x{10FFFF}"
# what the standard library's \d, \s and \w take in a text (any character beyond ASCII
# may be one of them), spelled for RE2, whose own take ASCII alone
_WIDENED = {"d": "0-9", "s": r"\t\n\v\f\r \x1c-\x1f", "w": "0-9A-Za-z_"}
_LEFT_OUT = frozenset("AZbB")  # zero-width escapes: left out, as look-arounds are
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
_GROUPS = ("(?:", "(?P<")  # the other groups read; any other (?...) is not (flags, ...)


def relaxed(pattern: str) -> str | None:
    """A pattern for RE2 that matches wherever the standard library's ``pattern`` matches
    (and maybe elsewhere): its look-arounds, anchors and word boundaries left out, its
    \\d, \\s and \\w taking any character beyond ASCII too. None when it holds what is not
    read here (inline flags, ``{,n}``, an unbalanced group or class)."""
    out: list[str] = []
    dropped = 0  # inside a left-out look-around: its nesting depth
    klass = ""  # inside a class: "[" or "[^"
    i, size = 0, len(pattern)
    while i < size:
        c = pattern[i]
        piece = c
        if c == "\\":
            piece = pattern[i : i + 2]
            letter = piece[1:]
            if letter in _WIDENED and klass != "[^":
                piece = _WIDENED[letter] + _ANY_WIDE
                piece = piece if klass else f"[{piece}]"
            elif letter in _LEFT_OUT and not klass:
                piece = ""
            i += 2
        elif klass:
            if c == "]":
                klass = ""
            i += 1
        elif c == "[":
            klass = "[^" if pattern.startswith("[^", i) else "["
            at = i + len(klass)
            if pattern[at : at + 1] == "]":  # a ] first in a class is one of its characters
                at += 1
            piece, i = pattern[i:at], at
        elif c == "(":
            if dropped:
                dropped += 1
            elif pattern.startswith(_LOOKAROUNDS, i):
                dropped = 1
            elif pattern.startswith("(?", i) and not pattern.startswith(_GROUPS, i):
                return None  # flags, a conditional, an atomic group: not read here
            i += 1
        elif c == ")" and dropped:
            dropped -= 1
            i += 1
            continue
        elif c in "^$":
            piece = ""
            i += 1
        elif c == "{" and pattern.startswith("{,", i):
            return None  # {,n}: a repetition to the standard library, text to RE2
        else:
            i += 1
        if not dropped:
            out.append(piece)
    return None if dropped or klass else "".join(out)


class Substitution:
    """``regex.sub`` with a replacement function, the places worth trying found by RE2:
    ``relaxed(regex)`` matches wherever ``regex`` does, and each place it matches at is
    tried by ``regex.match``, in order, so the same matches are replaced as ``regex.sub``
    replaces. Short texts, texts with lone surrogates (no UTF-8 for RE2), a pattern not
    read or ignoring case: ``regex.sub`` itself."""

    __slots__ = ("_find", "_regex")

    def __init__(self, regex: re.Pattern[str]) -> None:
        self._regex = regex
        self._find: Any = None
        wide = relaxed(regex.pattern)
        if wide is not None and not regex.flags & re.IGNORECASE:
            try:
                self._find = check_linear(wide)._regexp.Match
            except PatternError:
                pass

    def __call__(self, replace: Callable[[re.Match[str]], str], s: str) -> str:
        find = self._find
        if find is None or len(s) < _SCANNED:
            return self._regex.sub(replace, s)
        try:
            data = s.encode("utf-8")
        except UnicodeEncodeError:
            return self._regex.sub(replace, s)
        size, match = len(data), self._regex.match
        narrow = size == len(s)  # ASCII: a byte's offset is its character's
        matches: list[re.Match[str]] = []
        pos = 0  # where RE2 goes on (bytes)
        synced = (0, 0)  # a byte offset and its character's
        while pos < size:
            (start, _), *_ = find(UNANCHORED, data, pos, size)
            if start < 0:
                break
            at = start
            if not narrow:  # RE2's places are characters' first bytes, in order
                at = synced[1] + len(data[synced[0] : start].decode("utf-8"))
                synced = (start, at)
            found = match(s, at)
            if found is None:
                pos = start + char_size(data[start])
                continue
            stop = found.end()
            if stop == at:  # an empty match: re.sub's own rules for those (nothing replaced yet)
                return self._regex.sub(replace, s)
            matches.append(found)
            pos = stop
            if not narrow:
                pos = synced[0] + len(s[at:stop].encode("utf-8"))
                synced = (pos, stop)
        if not matches:
            return s
        pieces: list[str] = []
        end = 0
        for found in matches:  # replaced in order, as re.sub calls ``replace``
            pieces.append(s[end : found.start()])
            pieces.append(replace(found))
            end = found.end()
        pieces.append(s[end:])
        return "".join(pieces)
