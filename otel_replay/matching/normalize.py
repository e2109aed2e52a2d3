"""The normaliser engine: one table of rules (``matching.rules``) applied to a canonical
request, so that two runs of the same agent compare equal.

With the built-in table, provider ids (``chatcmpl-…``, ``msg_…``, ``call_…``, ``toolu_…``,
...), UUIDs, ISO-8601 and prose dates, epoch times near now (integers too) and email
addresses become placeholders numbered per kind by first occurrence across the whole
request: ``<id:1>``, ``<uuid:1>``, ``<time:2>``, ``<email:1>``; the working and home
directories become ``<cwd>`` and ``<home>``. The same value gets the same placeholder
everywhere in the request, so a tool-call id in an assistant message and in the tool
result that answers it stay paired. The numbering lives in a ``Numbering`` passed through
every step, one per request.

Ignore rules drop what they name first; then components are traversed in ``COMPONENTS``
order and dict keys in sorted order, so the numbering does not depend on the key order of
the source (a provider body or a span). ``endpoint`` and ``model`` keep their text — a
model name such as ``gpt-4o-2024-08-06`` carries a date that is not volatile — except that
each goes through the mapping the engine is given (the provider surfaces' own view of which
operation an endpoint stands for, and of what names the same model: a Bedrock inference
profile's ARN or geography does not). Integral floats become ints (``1.0`` → ``1``),
since a span attribute stores a request's ``1`` as a double. Dicts come out with their
keys sorted (matching compares canonical JSON, so order carries no meaning).

The rules in force for a request are compiled once per distinct set of them: a
``RuleSet`` (``ruleset.py``) walks a value and remembers what it substitutes in strings.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from otel_replay.core.exchange import COMPONENTS, JSON, CanonicalRequest
from otel_replay.matching.ignore import parse_path
from otel_replay.matching.linear import check_linear
from otel_replay.matching.numbering import Numbering
from otel_replay.matching.rules import (
    BUILTIN_RULES,
    IgnoreRule,
    LiveRule,
    Profile,
    Rule,
    Subject,
    VolatileRule,
    detect,
    place_rules,
)
from otel_replay.matching.ruleset import RuleSet
from otel_replay.matching.sources import current_places

__all__ = [
    "Normalizer",
    "Numbering",
    "current_places",
    "normalize",
    "normalize_text",
    "normalize_value",
]

_KIND = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_MAX_SETS = 256


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

    def item_rules(
        self, request: CanonicalRequest
    ) -> tuple[RuleSet, tuple[Callable[[JSON], JSON], ...]] | None:
        """The rules ``normalize`` applies to ``request``'s messages one by one: the rule
        set in force and the ignore rules' droppers for messages, each dropping within
        every message alike (``messages[*]...``). None when a rule treats the list as a
        whole (drops it, or names an index) or a profile is told by its messages: then a
        message is not normalised on its own."""
        if not self.profile and any(
            parse_path(path)[0].key == "messages"
            for profile in self.profiles
            for path in profile.detect
        ):
            return None
        rules = self.rule_set(self.subject(request, self.endpoint(request.endpoint)))
        droppers = []
        for (steps, _), drop in zip(rules.ignore, rules.droppers, strict=True):
            if steps[0].key != "messages":
                continue
            if len(steps) < 3 or not steps[1].any_index:
                return None
            droppers.append(drop)
        return rules, tuple(droppers)

    def normalize(
        self, request: CanonicalRequest, numbering: Numbering | None = None
    ) -> CanonicalRequest:
        """The request without what the ignore rules name, and with volatile values
        replaced by placeholders numbered by first occurrence across ``system``,
        ``messages``, ``tools`` and ``params``, in that order (``numbering``, when given,
        starts empty and is left holding every value numbered)."""
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
        numbering = Numbering() if numbering is None else numbering
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
