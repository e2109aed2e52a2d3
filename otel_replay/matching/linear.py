"""Volatile rules from a rule file, compiled with RE2 so that a user's pattern runs in time
linear in the (untrusted) text it scans.

All linear rules in force become one RE2 alternation, led by a branch that matches the
placeholders and redaction marks already in a text, so normalising twice changes nothing.
At one position a later rule of the table wins over an earlier one (a rule file's rows
take precedence over a profile's, ``--rules`` over both).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import re2

from otel_replay.matching.rules import DROP, VolatileRule

__all__ = [
    "UNANCHORED",
    "LinearRules",
    "PatternError",
    "char_size",
    "check_linear",
    "compile_linear",
    "full_text",
]

_PLACEHOLDER = r"\[REDACTED:[A-Za-z0-9_.:-]+\]|<[A-Za-z][A-Za-z0-9_]*(?::[0-9]+)?>"


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error is reported once, by the caller
    return options


_OPTIONS = _options()

# the standard library's own reading of a pattern (``re._parser``), used only to find the
# literal text a pattern needs
_sre_parse: Any = re._parser.parse  # type: ignore[attr-defined]
_sre_constants: Any = re._constants  # type: ignore[attr-defined]
_LITERAL, _BRANCH, _SUBPATTERN = (
    _sre_constants.LITERAL,
    _sre_constants.BRANCH,
    _sre_constants.SUBPATTERN,
)


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message is RE2's own."""


UNANCHORED = re2._re2.RE2.Anchor.UNANCHORED
"""RE2's unanchored search (a match anywhere from the position given)."""


def char_size(lead: int) -> int:
    """The bytes of the UTF-8 character whose first byte is ``lead``."""
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def check_linear(pattern: str) -> Any:
    """``pattern`` compiled with RE2, or PatternError with RE2's reason."""
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(text.rsplit(": ", 1)[0] if ": " in text else text) from None


class LinearRules:
    """One RE2 alternation over the rules, and the rules applying to numbers."""

    __slots__ = ("_branches", "_match", "fixed", "kinds", "needles", "numeric", "regex")

    def __init__(self, rules: Sequence[VolatileRule]) -> None:
        ordered = list(reversed(rules))  # later rows take precedence
        self.kinds = {f"r{i}": rule.kind for i, rule in enumerate(ordered)}
        self.fixed = frozenset(rule.kind for rule in ordered if rule.fixed)
        branches = [f"(?P<keep>{_PLACEHOLDER})"]
        branches += [f"(?P<r{i}>{rule.pattern})" for i, rule in enumerate(ordered)]
        self.regex = check_linear("|".join(branches))
        # each branch's group and what its match becomes: kept (None) or a rule's kind
        groups = dict(self.regex._regexp.NamedCapturingGroups())
        self._branches = tuple(
            (groups[name.encode()], self.kinds.get(name)) for name in ["keep", *self.kinds]
        )
        self._match = self.regex._regexp.Match  # RE2's own search, spans in UTF-8 bytes
        self.numeric = [(r.kind, check_linear(r.pattern)) for r in ordered if r.numbers]
        # text a match of every rule holds: a text holding none of it is left as it is
        # without a call into RE2 (whose wrapper costs microseconds on the shortest text)
        needles: set[str] = set()
        for rule in ordered:
            found = required_texts(rule.pattern)
            if found is None:
                needles.clear()
                break
            needles.update(found)
        self.needles = tuple(sorted(needles)) or None

    def substitute(self, s: str, placeholder: Callable[[str, str], str]) -> str:
        """Every match replaced by ``placeholder(kind, value)`` (``<kind>`` when fixed, and
        nothing for a ``drop`` rule)."""
        needles = self.needles
        if needles is not None and not any(needle in s for needle in needles):
            return s
        # what ``self.regex.sub`` does, without its wrapper's work per match in Python
        # (the offsets of every group turned into characters, the names looked up again):
        # the text searched as UTF-8, each match's branch told by the group it set
        data, match = s.encode("utf-8"), self._match
        size = len(data)
        (start, stop), *_ = spans = match(UNANCHORED, data, 0, size)
        if start < 0:
            return s
        pieces: list[bytes] = []
        end = 0
        while True:
            kind = next((kind for group, kind in self._branches if spans[group][0] >= 0), None)
            pieces.append(data[end:start])
            if kind is None:
                pieces.append(data[start:stop])
            elif kind in self.fixed:
                pieces.append(f"<{kind}>".encode())
            elif kind != DROP:
                pieces.append(placeholder(kind, data[start:stop].decode("utf-8")).encode())
            end = pos = stop
            if stop == start:  # an empty match: the search goes on a character later
                if stop == size:
                    break
                pos += char_size(data[stop])
            (start, stop), *_ = spans = match(UNANCHORED, data, pos, size)
            if start < 0:
                break
        pieces.append(data[end:])
        return b"".join(pieces).decode("utf-8")

    def number(self, text: str) -> str | None:
        """The kind of the first rule for numbers matching all of ``text``, if any."""
        for kind, pattern in self.numeric:
            if pattern.fullmatch(text):
                return str(kind)
        return None


def full_text(pattern: str) -> Callable[[Any], bool]:
    """Whether a value is a string ``pattern`` matches in full, or an object with such a
    string as one of its fields (an ignore rule's ``pattern``)."""
    regex = check_linear(pattern)
    seen: dict[str, bool] = {}  # the answer per text: a conversation resends its texts
    chars = [0]

    def matches(text: str) -> bool:
        found = seen.get(text)
        if found is None:
            found = regex.fullmatch(text) is not None
            if chars[0] + len(text) > _SEEN_MAX_CHARS:
                seen.clear()
                chars[0] = 0
            seen[text] = found
            chars[0] += len(text)
        return found

    def accepts(value: Any) -> bool:
        if isinstance(value, str):
            return matches(value)
        if isinstance(value, dict):
            return any(isinstance(v, str) and matches(v) for v in value.values())
        return False

    return accepts


_SEEN_MAX_CHARS = 8 * 1024 * 1024
"""Text whose answer an ignore rule's pattern remembers at most."""


def required_texts(pattern: str) -> frozenset[str] | None:
    """Texts one of which every match of ``pattern`` holds (the longest run of literal
    characters its matches all have, or one per branch of an alternation), or None when
    the pattern shows none (or the standard library's parser does not read it as RE2
    does: then nothing is assumed). Case-insensitive patterns show none."""
    if "[:" in pattern:  # RE2's [[:alpha:]] is a class; the standard library's, text
        return None
    try:
        parsed = _sre_parse(pattern)
    except Exception:  # RE2-only syntax (\pL, \Q..\E): no shortcut, never a wrong one
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    items = list(parsed)
    if len(items) == 1 and items[0][0] is _BRANCH:
        found: set[str] = set()
        for branch in items[0][1][1]:
            text = _longest_run(branch)
            if not text:
                return None
            found.add(text)
        return frozenset(found)
    text = _longest_run(items)
    return frozenset({text}) if text else None


def _longest_run(items: Any) -> str | None:
    """The longest run of literal characters in a parsed sequence, taking groups in line;
    None when a group in it changes the flags."""
    best, run = "", []
    for op, arg in _in_line(items):
        if op is _LITERAL:
            run.append(chr(arg))
            continue
        if op is None:  # a group changing the flags
            return None
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return max(best, "".join(run), key=len)


def _in_line(items: Any) -> Any:
    for op, arg in items:
        if op is _SUBPATTERN:
            _, add, remove, inner = arg
            if add or remove:
                yield None, None
                return
            yield from _in_line(inner)
        else:
            yield op, arg


def compile_linear(rules: Sequence[VolatileRule]) -> LinearRules | None:
    """The rules compiled, or None when there are none."""
    return LinearRules(rules) if rules else None
