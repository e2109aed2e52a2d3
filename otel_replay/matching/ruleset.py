"""The volatile and ignore rules in force for one subject, compiled (:class:`RuleSet`),
and their walk of a JSON value: ``substitute`` is the definition of what a string becomes.

A string goes through a rule file's patterns (RE2) first, then the fixed placeholders,
then one regular expression holding every other volatile rule; each match becomes a
placeholder numbered per kind by first occurrence (the ``Numbering`` passed through every
step, one per request). Dict keys are walked in sorted order, so the numbering does not
depend on the key order of the source, and integral floats become ints.

Strings that hold no volatile value are remembered per rule set (memoisation of
``substitute`` keyed by the string): short ones ("role", "user", a tool's name) are most
strings of a request, and long ones (a system prompt, earlier turns) come back in every
later request of an agent run. A long string that does hold volatile values (a coding
agent's instructions name its directory and the date) is remembered as a ``Template``:
filled with each request's numbering, it gives what substituting afresh gives (up to a
budget of characters); list items, and runs of them, likewise (``runs``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from typing import Any

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import SHARED
from otel_replay.matching.alternation import Substitution, alternation
from otel_replay.matching.ignore import Predicate, Step, dropper, parse_path
from otel_replay.matching.linear import compile_linear, full_text
from otel_replay.matching.numbering import Numbering, Template, ValueTemplate
from otel_replay.matching.rules import KEEP, IgnoreRule, VolatileRule
from otel_replay.matching.runs import ItemRuns

__all__ = ["RuleSet", "substitute"]

STABLE_MAX_LENGTH = 64
STABLE_MAX_SIZE = 16384
STABLE_LONG_MAX_CHARS = 4_000_000
_SHARED_MAX = 4096


class RuleSet:
    """The volatile rules in force for one subject, compiled, with the strings known to
    hold no match of them. Linear rules (a rule file's) run first, compiled with RE2;
    placeholders already in the text pass through both passes unchanged."""

    def __init__(self, volatile: Sequence[VolatileRule], ignore: Sequence[IgnoreRule]) -> None:
        kinds = {rule.kind for rule in volatile if rule.kind != KEEP}
        extra = sorted(kinds - {"id", "uuid", "time", "email"})
        keep = [rule.pattern for rule in volatile if rule.kind == KEEP]
        if extra:  # placeholders of other kinds pass through as well
            keep.append("<(?:" + "|".join(extra) + r")(?::\d+)?>")
        plain = [r for r in volatile if r.kind != KEEP and not r.linear and not r.fixed]
        branches: list[tuple[str, str, bool]] = [(KEEP, p, False) for p in keep]
        branches += [(rule.kind, rule.pattern, rule.word_start) for rule in plain]
        self.kinds: dict[str, str] = {f"r{i}": kind for i, (kind, _, _) in enumerate(branches)}
        # a fixed placeholder needs no numbering: its own pass, behind its own prefilter
        self.fixed = [
            (re.compile(r.prefilter or r.pattern), re.compile(r.pattern), f"<{r.kind}>")
            for r in volatile
            if r.fixed and not r.linear and r.kind != KEEP
        ]
        self.branches = tuple(branches)
        self.regex = re.compile(alternation(branches))
        self.substitution = Substitution(self.regex)  # ``regex.sub``, its places found by RE2
        filters = [rule.prefilter for rule in plain]
        self.prefilter: re.Pattern[str] | None = None
        if filters and all(filters):
            self.prefilter = re.compile("|".join(dict.fromkeys(f for f in filters if f)))
        self.linear = compile_linear([r for r in volatile if r.linear and r.kind != KEEP])
        self.numeric = [(r.kind, re.compile(r.pattern)) for r in plain if r.numbers]
        self.ignore: tuple[tuple[tuple[Step, ...], Predicate | None], ...] = tuple(
            (parse_path(r.path), None if r.pattern is None else full_text(r.pattern))
            for r in ignore
        )
        self.droppers = [dropper(steps[1:], when) for steps, when in self.ignore]
        self.stable: set[str] = set()
        self.stable_long: set[str] = set()
        self.stable_long_chars = 0
        self.templates: dict[str, Template] = {}
        self.short: dict[str, Template] = {}  # short strings holding volatile values
        self.runs = ItemRuns(self.walk)
        self.shared: dict[int, tuple[JSON, ValueTemplate]] = {}  # by identity: SHARED's
        self._kept = SHARED.kept.get

    def number(self, value: int, numbering: Numbering) -> JSON:
        """An integer, or its placeholder when a rule for numbers matches all its digits."""
        text = str(value)
        if self.linear is not None:
            kind = self.linear.number(text)
            if kind is not None:
                return numbering.placeholder(kind, text)
        for kind, pattern in self.numeric:
            if pattern.fullmatch(text):
                return numbering.placeholder(kind, text)
        return value

    def text(self, s: str, numbering: Numbering) -> str:
        """``substitute`` remembered: strings it leaves alone, and for strings with
        volatile values, the result with its placeholders left open (``Template``): an
        id or a time sent again (a turn's id in each of its messages) is filled, not
        scanned again."""
        if s in self.stable:
            return s
        long = len(s) > STABLE_MAX_LENGTH
        if long:
            if s in self.stable_long:
                return s
            template = self.templates.get(s)
            if template is not None:
                return template.fill(numbering)
            template = Template.of(s, lambda numbering: substitute(self, s, numbering))
            if template is None:
                if self.stable_long_chars + len(s) <= STABLE_LONG_MAX_CHARS:
                    self.stable_long.add(s)
                    self.stable_long_chars += len(s)
                return s
            if self.stable_long_chars + len(s) + len(template.text) <= STABLE_LONG_MAX_CHARS:
                self.templates[s] = template
                self.stable_long_chars += len(s) + len(template.text)
            return template.fill(numbering)
        template = self.short.get(s)
        if template is not None:
            return template.fill(numbering)
        template = Template.of(s, lambda numbering: substitute(self, s, numbering))
        if template is None:
            if len(self.stable) < STABLE_MAX_SIZE:
                self.stable.add(s)
            return s
        if len(self.short) >= STABLE_MAX_SIZE:
            self.short.clear()
        self.short[s] = template
        return template.fill(numbering)

    def items(self, value: JSON, numbering: Numbering) -> JSON:
        """``walk`` of a component, its items and runs of them remembered (``runs``)."""
        if type(value) is not list:
            return self.walk(value, numbering)
        return self.runs.walk(value, numbering)

    def walk(self, value: JSON, numbering: Numbering) -> JSON:
        kind = type(value)
        if kind is str:
            return self.text(value, numbering)
        if (kind is dict or kind is list) and self._kept(id(value)) is value:
            return self._shared(value, numbering)
        return self._walk(value, kind, numbering)

    def _shared(self, value: JSON, numbering: Numbering) -> JSON:
        """``walk`` of a value handed out shared (``core.memo.SHARED``), remembered with its
        placeholders left open."""
        found = self.shared.get(id(value))
        if found is None or found[0] is not value:
            if len(self.shared) >= _SHARED_MAX:
                self.shared.clear()
            walk = partial(self._walk, value, type(value))
            found = self.shared[id(value)] = (value, ValueTemplate(walk))
        return found[1].fill(numbering)

    def _walk(self, value: JSON, kind: type, numbering: Numbering) -> JSON:
        if kind is dict:
            try:
                keys = sorted(value)
            except TypeError:
                keys = sorted(value, key=str)
            text, stable, walk = self.text, self.stable, self.walk
            out: dict[Any, JSON] = {}
            for k in keys:  # ``walk`` of each, a string known stable (most keys) in line
                v = value[k]
                if type(k) is str and k not in stable:
                    k = text(k, numbering)
                if type(v) is str:
                    out[k] = v if v in stable else text(v, numbering)
                else:
                    out[k] = v if v is None or v is True or v is False else walk(v, numbering)
            return out
        if kind is list:
            text, stable, walk = self.text, self.stable, self.walk
            return [
                (v if v in stable else text(v, numbering)) if type(v) is str else walk(v, numbering)
                for v in value
            ]
        if kind is int:
            return self.number(value, numbering)
        if kind is float:
            return self.number(int(value), numbering) if value.is_integer() else value
        if kind is bool or value is None:
            return value
        return self._walk_other(value, numbering)

    def _walk_other(self, value: JSON, numbering: Numbering) -> JSON:
        """Subclasses of the JSON types (tuples, ordered dicts, str enums, ...)."""
        if isinstance(value, str):
            return self.text(str(value), numbering)
        if isinstance(value, dict):
            return self.walk(dict(value), numbering)
        if isinstance(value, list | tuple):
            return [self.walk(v, numbering) for v in value]
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return self.number(int(value), numbering)
        if isinstance(value, float):
            return self.walk(float(value), numbering)
        return value


def substitute(rules: RuleSet, s: str, numbering: Numbering) -> str:
    """The definition: every match of the rule set's volatile rules in ``s`` replaced by
    its placeholder (``keep`` matches stay). Returns ``s`` itself when nothing matched."""
    original = s
    if rules.linear is not None:
        s = rules.linear.substitute(s, numbering.placeholder)
    for needle, regex, placeholder in rules.fixed:
        if needle.search(s):
            s = regex.sub(placeholder, s)
    if rules.prefilter is not None and not rules.prefilter.search(s):
        return original if s == original else s
    kinds = rules.kinds

    def replace(m: re.Match[str]) -> str:
        kind = kinds.get(m.lastgroup or "", KEEP)
        return m.group() if kind == KEEP else numbering.placeholder(kind, m.group())

    out = rules.substitution(replace, s)
    return original if out == original else out
