"""``why --suggest``: the narrowest rule that turns a miss into a hit, or why none should.

Every place where the live request differs from the nearest recording (both normalised,
going into JSON carried as text) is classified: a field of ``params`` becomes an ``ignore``
rule for exactly that path; a value in the conversation that looks generated (long, mixing
letters and digits, or long hex) becomes a ``volatile`` rule for values of its shape;
anything else — prompt text, a tool's schema, a message, the model or the endpoint — is
content that should count, and no rule is proposed. Rules are scoped to the provider and
model of the request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

from otel_replay.core.exchange import COMPONENT_LABELS, COMPONENTS, JSON
from otel_replay.matching.matcher import MatchMiss
from otel_replay.matching.projection import canonical_json, compare
from otel_replay.matching.rulefile import to_toml
from otel_replay.matching.rules import IgnoreRule, Rule, Scope, VolatileRule

__all__ = ["Suggestion", "generated_pattern", "looks_generated", "suggest"]

_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_-]")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_SEPARATOR = re.compile(r"[-_]")
_MISSING = object()


@dataclass(slots=True)
class Suggestion:
    """The rules proposed (empty when none should be), what each would also hide, and
    why no rule is proposed for the rest."""

    rules: list[Rule] = field(default_factory=list)
    hides: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def toml(self) -> str:
        return to_toml(self.rules)


def looks_generated(token: str) -> bool:
    """A value no person typed: 12+ characters with 3+ digits and 3+ letters, or 16+ hex
    digits. An order number or a word does not qualify."""
    digits = sum(c.isdigit() for c in token)
    letters = sum(c.isalpha() for c in token)
    if len(token) >= 12 and digits >= 3 and letters >= 3:
        return True
    return len(token) >= 16 and _HEX.fullmatch(token) is not None and letters > 0


def generated_pattern(before: str, after: str) -> str:
    """An RE2 pattern for values shaped like both tokens: their common prefix up to a
    separator, then a character class and a length."""
    common = 0
    while common < min(len(before), len(after)) and before[common] == after[common]:
        common += 1
    cut = max((m.end() for m in _SEPARATOR.finditer(before[:common])), default=0)
    prefix, tails = before[:cut], (before[cut:], after[cut:])
    joined = "".join(tails)
    if re.fullmatch(r"[0-9a-f]+", joined):
        chars = "[0-9a-f]"
    elif re.fullmatch(r"[0-9A-F]+", joined):
        chars = "[0-9A-F]"
    elif re.fullmatch(r"[A-Za-z0-9]+", joined):
        chars = "[A-Za-z0-9]"
    else:
        chars = "[A-Za-z0-9_-]"
    low, high = min(map(len, tails)), max(map(len, tails))
    count = f"{{{low}}}" if low == high else f"{{{low},{high}}}"
    return r"\b" + re.escape(prefix) + chars + count + r"\b"


def suggest(miss: MatchMiss, provider: str | None) -> Suggestion:
    """What would turn ``miss`` into a hit."""
    recorded, live = miss.compared
    scope = Scope(provider=provider, model=_literal(live.model))
    out = Suggestion()
    for name in COMPONENTS:
        compared = compare(recorded, live, name)
        if not compared.recorded or compared.equal:
            continue
        for path, was, now in _leaves(compared.was, compared.now, (name,)):
            _classify(out, name, path, was, now, scope)
    return out


def _classify(
    out: Suggestion, name: str, path: tuple[str, ...], was: object, now: object, scope: Scope
) -> None:
    shown = _render(path)
    if name == "params" and len(path) > 1:
        rule: Rule = IgnoreRule(shown, scope)
        if rule not in out.rules:
            out.rules.append(rule)
            out.hides.append(
                f"ignore {shown}: also hides any other value of this field in "
                f"{_where(scope)} (recorded {_short(was)}, now {_short(now)})"
            )
        return
    if isinstance(was, str) and isinstance(now, str) and name not in ("model", "endpoint"):
        tokens = _differing_tokens(was, now)
        if tokens is not None and all(looks_generated(t) for t in tokens):
            pattern = generated_pattern(*tokens)
            volatile = VolatileRule("token", pattern, scope, linear=True)
            if volatile not in out.rules:
                out.rules.append(volatile)
                out.hides.append(
                    f"volatile {pattern}: also hides a change between any two values of "
                    f"this shape anywhere in {_where(scope)} ({tokens[0]} → {tokens[1]})"
                )
            return
    out.refused.append(
        f"{COMPONENT_LABELS[name]} differs at {shown} ({_short(was)} → {_short(now)}): "
        "content that should count; no rule proposed (re-record if the change is intended)"
    )


def _leaves(
    a: object, b: object, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], object, object]]:
    """Where ``a`` and ``b`` differ, going into JSON carried as text."""
    a, b = _parsed(a), _parsed(b)
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            yield from _leaves(a.get(key, _MISSING), b.get(key, _MISSING), (*path, str(key)))
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _leaves(x, y, (*path, f"[{i}]"))
        return
    if a is _MISSING or b is _MISSING or canonical_json(_json(a)) != canonical_json(_json(b)):
        yield path, a, b


def _json(value: object) -> JSON:
    return None if value is _MISSING else cast(JSON, value)


def _parsed(value: object) -> object:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _differing_tokens(was: str, now: str) -> tuple[str, str] | None:
    """The whole tokens (letters, digits, ``-``, ``_``) around the one place the texts differ."""
    start = 0
    while start < min(len(was), len(now)) and was[start] == now[start]:
        start += 1
    end = 0
    while end < min(len(was), len(now)) - start and was[-1 - end] == now[-1 - end]:
        end += 1
    while start > 0 and _TOKEN_CHAR.match(was[start - 1]):
        start -= 1
    while end > 0 and _TOKEN_CHAR.match(was[len(was) - end]):
        end -= 1
    tokens = (was[start : len(was) - end], now[start : len(now) - end])
    if not all(tokens) or not all(all(_TOKEN_CHAR.match(c) for c in t) for t in tokens):
        return None
    return tokens


def _render(path: tuple[str, ...]) -> str:
    text = path[0]
    for step in path[1:]:
        text += step if step.startswith("[") else "." + re.sub(r"[.\[\]]", "?", step)
    return text


def _literal(pattern: str | None) -> str | None:
    return None if pattern is None else re.sub(r"([*?\[])", r"[\1]", pattern)


def _where(scope: Scope) -> str:
    parts = [f"{k} {v}" for k in ("provider", "model") if (v := getattr(scope, k))]
    return "every request" + (" of " + ", ".join(parts) if parts else "")


def _short(value: object, limit: int = 60) -> str:
    text = "(absent)" if value is _MISSING else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
