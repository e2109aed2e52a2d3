"""Volatile rules from a rule file, compiled with RE2 so that a user's pattern runs in time
linear in the (untrusted) text it scans.

All linear rules in force become one RE2 alternation, led by a branch that matches the
placeholders and redaction marks already in a text, so normalising twice changes nothing.
At one position a later rule of the table wins over an earlier one (a rule file's rows
take precedence over a profile's, ``--rules`` over both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import re2

from otel_replay.matching.rules import DROP, VolatileRule

__all__ = ["LinearRules", "PatternError", "check_linear", "compile_linear", "full_text"]

_PLACEHOLDER = r"\[REDACTED:[A-Za-z0-9_.:-]+\]|<[A-Za-z][A-Za-z0-9_]*(?::[0-9]+)?>"


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error is reported once, by the caller
    return options


_OPTIONS = _options()


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message is RE2's own."""


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

    __slots__ = ("fixed", "kinds", "numeric", "regex")

    def __init__(self, rules: Sequence[VolatileRule]) -> None:
        ordered = list(reversed(rules))  # later rows take precedence
        self.kinds = {f"r{i}": rule.kind for i, rule in enumerate(ordered)}
        self.fixed = frozenset(rule.kind for rule in ordered if rule.fixed)
        branches = [f"(?P<keep>{_PLACEHOLDER})"]
        branches += [f"(?P<r{i}>{rule.pattern})" for i, rule in enumerate(ordered)]
        self.regex = check_linear("|".join(branches))
        self.numeric = [(r.kind, check_linear(r.pattern)) for r in ordered if r.numbers]

    def substitute(self, s: str, placeholder: Callable[[str, str], str]) -> str:
        """Every match replaced by ``placeholder(kind, value)`` (``<kind>`` when fixed, and
        nothing for a ``drop`` rule)."""
        if self.regex.search(s) is None:
            return s
        kinds, fixed = self.kinds, self.fixed

        def replace(m: Any) -> str:
            kind = kinds.get(m.lastgroup or "")
            if kind is None:
                return str(m.group())
            if kind == DROP:
                return ""
            return f"<{kind}>" if kind in fixed else placeholder(kind, m.group())

        return str(self.regex.sub(replace, s))

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

    def accepts(value: Any) -> bool:
        if isinstance(value, str):
            return regex.fullmatch(value) is not None
        if isinstance(value, dict):
            return any(
                isinstance(v, str) and regex.fullmatch(v) is not None for v in value.values()
            )
        return False

    return accepts


def compile_linear(rules: Sequence[VolatileRule]) -> LinearRules | None:
    """The rules compiled, or None when there are none."""
    return LinearRules(rules) if rules else None
