"""The normaliser engine: one table of rules (``matching.rules``) applied to a canonical
request, so that two runs of the same agent compare equal.

With the built-in table, provider ids (``chatcmpl-…``, ``msg_…``, ``call_…``, ``toolu_…``,
...), UUIDs, ISO-8601 and prose dates, epoch times near now (integers too) and email
addresses become placeholders numbered per kind by first occurrence across the whole
request: ``<id:1>``, ``<uuid:1>``, ``<time:2>``, ``<email:1>``; the working and home
directories become ``<cwd>`` and ``<home>``. A string goes through a rule file's patterns
(RE2) first, then the fixed placeholders, then one regular expression holding every other
volatile rule. The same value gets the same placeholder everywhere in the request, so a
tool-call id in an assistant message and in the tool result that answers it stay paired.
The numbering lives in a ``Numbering`` passed through every step, one per request.

Ignore rules drop what they name first; then components are traversed in ``COMPONENTS``
order and dict keys in sorted order, so the numbering does not depend on the key order of
the source (a provider body or a span). ``endpoint`` and ``model`` keep their text — a
model name such as ``gpt-4o-2024-08-06`` carries a date that is not volatile — except that
each goes through the mapping the engine is given (the provider surfaces' own view of which
operation an endpoint stands for, and of what names the same model: a Bedrock inference
profile's ARN or geography does not). Integral floats become ints (``1.0`` → ``1``),
since a span attribute stores a request's ``1`` as a double. Dicts come out with their
keys sorted (matching compares canonical JSON, so order carries no meaning).

Strings that hold no volatile value are remembered per rule set (memoisation of
``substitute`` keyed by the string): short ones ("role", "user", a tool's name) are most
strings of a request, and long ones (a system prompt, earlier turns) come back in every
later request of an agent run. A long string that does hold volatile values (a coding
agent's instructions name its directory and the date) is remembered as a ``Template``:
filled with each request's numbering, it gives what substituting afresh gives (up to a
budget of characters); list items, and runs of them, likewise (``runs``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from otel_replay.core.exchange import COMPONENTS, JSON, CanonicalRequest
from otel_replay.matching.alternation import alternation
from otel_replay.matching.ignore import Predicate, Step, dropper, parse_path
from otel_replay.matching.linear import check_linear, compile_linear, full_text
from otel_replay.matching.numbering import Numbering, Template
from otel_replay.matching.rules import (
    BUILTIN_RULES,
    KEEP,
    IgnoreRule,
    LiveRule,
    Profile,
    Rule,
    Subject,
    VolatileRule,
    current_places,
    detect,
    place_rules,
)
from otel_replay.matching.runs import ItemRuns

__all__ = [
    "Normalizer",
    "Numbering",
    "RuleSet",
    "current_places",
    "normalize",
    "normalize_text",
    "normalize_value",
    "substitute",
]

STABLE_MAX_LENGTH = 64
STABLE_MAX_SIZE = 16384
STABLE_LONG_MAX_CHARS = 4_000_000
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_MAX_SETS = 256


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
        self.runs = ItemRuns(self.walk)

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
        """``substitute`` remembered: strings it leaves alone, and for long strings with
        volatile values, the result with its placeholders left open (``Template``)."""
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
        out = substitute(self, s, numbering)
        if out is s and len(self.stable) < STABLE_MAX_SIZE:
            self.stable.add(s)
        return out

    def items(self, value: JSON, numbering: Numbering) -> JSON:
        """``walk`` of a component, its items and runs of them remembered (``runs``)."""
        if type(value) is not list:
            return self.walk(value, numbering)
        return self.runs.walk(value, numbering)

    def walk(self, value: JSON, numbering: Numbering) -> JSON:
        kind = type(value)
        if kind is str:
            return self.text(value, numbering)
        if kind is dict:
            try:
                keys = sorted(value)
            except TypeError:
                keys = sorted(value, key=str)
            text = self.text
            return {
                (text(k, numbering) if type(k) is str else k): self.walk(value[k], numbering)
                for k in keys
            }
        if kind is list:
            return [self.walk(v, numbering) for v in value]
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

    out = rules.regex.sub(replace, s)
    return original if out == original else out


def _check(rule: Rule) -> None:
    """Refuses a rule that cannot apply, when the table is given rather than at match time."""
    if isinstance(rule, LiveRule):
        return
    if isinstance(rule, IgnoreRule):
        steps = parse_path(rule.path)
        if steps[0].key not in COMPONENTS:
            raise ValueError(
                f"the path {rule.path!r} must start with one of {', '.join(COMPONENTS)}"
            )
        if rule.pattern is not None:
            check_linear(rule.pattern)
        return
    if not _KIND.fullmatch(rule.kind):
        raise ValueError(f"a volatile rule's kind must be a word, not {rule.kind!r}")
    if rule.linear:
        check_linear(rule.pattern)
        return
    try:
        re.compile(rule.pattern)
    except re.error as exc:
        raise ValueError(f"the {rule.kind} pattern {rule.pattern!r} is not valid: {exc}") from None


def _same(endpoint: str) -> str:
    return endpoint


def _as_named(endpoint: str, model: str | None) -> str | None:
    return model


class Normalizer:
    """Applies a table of rules to canonical requests.

    ``endpoint`` maps an endpoint to the one matching compares (default: unchanged),
    ``model`` a request's endpoint and model to the model it compares (default: the model);
    ``provider`` names the provider an endpoint belongs to, for rules scoped by provider
    (default: unknown, so such rules never apply); ``profile`` is the agent profile in
    force, else the first of ``profiles`` whose shape the request has. ``places`` adds the
    caller's working and home directories, read when a request is normalised (or the
    ``(cwd, home)`` given, for requests recorded elsewhere). Rule sets are compiled once
    per distinct set of rules in force.
    """

    def __init__(
        self,
        rules: Sequence[Rule] = BUILTIN_RULES,
        *,
        endpoint: Callable[[str], str] = _same,
        model: Callable[[str, str | None], str | None] = _as_named,
        provider: Callable[[str], str | None] | None = None,
        profile: str | None = None,
        profiles: Sequence[Profile] = (),
        places: bool | tuple[str, str] = True,
    ) -> None:
        self.rules = tuple(rules)
        self.endpoint = endpoint
        self.model = model
        self.provider = provider
        self.profile = profile
        self.profiles = tuple(profiles)
        self.places = places
        for rule in self.rules:
            _check(rule)
        self.live = tuple(rule for rule in self.rules if isinstance(rule, LiveRule))
        self._sets: dict[tuple[object, ...], RuleSet] = {}
        self._chosen: dict[Subject, tuple[int, ...]] = {}  # the rules in force, per subject

    def subject(self, request: CanonicalRequest, endpoint: str) -> Subject:
        provider = self.provider(request.endpoint) if self.provider is not None else None
        profile = self.profile or detect(self.profiles, request)
        return Subject(provider, request.model, endpoint, profile)

    def rule_set(self, subject: Subject) -> RuleSet:
        """The compiled rules whose scope covers ``subject``."""
        chosen = self._chosen.get(subject)
        if chosen is None:
            chosen = tuple(i for i, r in enumerate(self.rules) if r.scope.applies(subject))
            if len(self._chosen) >= _MAX_SETS:
                self._chosen.clear()
            self._chosen[subject] = chosen
        given = self.places
        places = given if isinstance(given, tuple) else current_places() if given else ("", "")
        found = self._sets.get((chosen, places))
        if found is None:
            picked = [self.rules[i] for i in chosen]
            volatile = [r for r in picked if isinstance(r, VolatileRule)]
            volatile += place_rules(*places)
            ignore = [r for r in picked if isinstance(r, IgnoreRule)]
            if len(self._sets) >= _MAX_SETS:
                self._sets.clear()
            found = self._sets[(chosen, places)] = RuleSet(volatile, ignore)
        return found

    def with_places(self, cwd: str, home: str) -> Normalizer:
        """The same rules and compiled rule sets (keyed by places too: recordings made here
        share the live requests' memo), with another process's directories."""
        other = Normalizer(
            self.rules,
            endpoint=self.endpoint,
            model=self.model,
            provider=self.provider,
            profile=self.profile,
            profiles=self.profiles,
            places=(cwd, home),
        )
        other._sets, other._chosen = self._sets, self._chosen
        return other

    def default_set(self) -> RuleSet:
        """The rules that apply whatever the request (no scope)."""
        return self.rule_set(Subject(profile=self.profile))

    def is_live(self, request: CanonicalRequest) -> bool:
        """Whether a ``live`` rule covers ``request``: in ``auto`` mode it always goes to
        the provider, recorded or not."""
        if not self.live:
            return False
        subject = self.subject(request, self.endpoint(request.endpoint))
        return any(rule.scope.applies(subject) for rule in self.live)

    def normalize(self, request: CanonicalRequest) -> CanonicalRequest:
        """The request without what the ignore rules name, and with volatile values
        replaced by placeholders numbered by first occurrence across ``system``,
        ``messages``, ``tools`` and ``params``, in that order."""
        endpoint = self.endpoint(request.endpoint)
        rules = self.rule_set(self.subject(request, endpoint))
        parts = {
            "system": request.system,
            "messages": request.messages,
            "tools": request.tools,
            "params": request.params,
            "model": self.model(request.endpoint, request.model),
            "endpoint": endpoint,
        }
        for (steps, when), drop in zip(rules.ignore, rules.droppers, strict=True):
            name = steps[0].key
            if name not in parts:
                continue
            if len(steps) > 1:
                parts[name] = drop(parts[name])
            elif when is None or when(parts[name]):
                parts[name] = None
        numbering = Numbering()
        system = rules.items(parts["system"], numbering)
        messages = rules.items(parts["messages"], numbering)
        tools = rules.items(parts["tools"], numbering)
        params = rules.walk(parts["params"], numbering)
        return dataclasses.replace(
            request,
            endpoint=parts["endpoint"] if isinstance(parts["endpoint"], str) else "",
            model=parts["model"],
            system=system,
            messages=messages,
            tools=tools,
            params=params if isinstance(params, dict) else {},
        )

    def value(self, value: JSON, numbering: Numbering | None = None) -> JSON:
        """One JSON value under the unscoped rules (a fresh numbering unless given)."""
        return self.default_set().walk(value, numbering or Numbering())

    def text(self, s: str, numbering: Numbering | None = None) -> str:
        """One string under the unscoped rules (a fresh numbering unless given)."""
        return self.default_set().text(s, numbering or Numbering())


DEFAULT = Normalizer()
"""The built-in table with endpoints unchanged; shared, so its memo serves every caller."""


def normalize(request: CanonicalRequest) -> CanonicalRequest:
    """``DEFAULT.normalize``."""
    return DEFAULT.normalize(request)


def normalize_value(value: JSON) -> JSON:
    """One JSON value normalised on its own (numbering starts afresh)."""
    return DEFAULT.value(value)


def normalize_text(s: str) -> str:
    """One string normalised on its own (numbering starts afresh)."""
    return DEFAULT.text(s)
