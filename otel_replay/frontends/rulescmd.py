"""``otel-replay rules show [PROFILE]``: the rules in force, in the rule file's syntax."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from otel_replay.cassette.model import load
from otel_replay.core.errors import ConfigError
from otel_replay.frontends.rulefiles import rule_sources
from otel_replay.matching.profiles import recorded_rules
from otel_replay.matching.rulefile import to_toml
from otel_replay.matching.rules import BUILTIN_RULES, KEEP, place_rules


def rules_text(profile: str | None, cassette: Path | None, given: Path | None) -> str:
    """Built-in rules, the agent profiles (or only ``profile``), the rules recorded in
    ``cassette`` and the user's rule files, each under a comment naming its origin."""
    sources = rule_sources(cassette, given)
    if cassette is not None and cassette.exists():
        recorded = recorded_rules(load(cassette).source, f"{cassette}: source.rules")
        sources = sources.with_recorded(recorded)
    profiles = [p for p in sources.agent_profiles() if profile is None or p.name == profile]
    if profile is not None and not profiles:
        known = ", ".join(p.name for p in sources.agent_profiles())
        raise ConfigError(f"no agent profile {profile!r} (known: {known})")
    builtin = [r for r in BUILTIN_RULES if getattr(r, "kind", None) != KEEP]
    places = place_rules(os.getcwd(), os.path.expanduser("~"))
    sections = [
        "# built-in (Python regular expressions; <cwd> and <home> are this process's)\n\n"
        + to_toml([*builtin, *places])
    ]
    for found in profiles:
        detect = ", ".join(f'"{path}"' for path in found.detect)
        head = f"# profile {found.name}: in force for requests with {detect}\n\n"
        sections.append(head + to_toml(found.rules))
    for file in sources.files:
        sections.append(f"# {file.origin}\n\n" + (to_toml(file.rules) or "# (no rules)\n"))
    return "\n".join(sections)


def show_rules(profile: str | None, cassette: Path | None, given: Path | None) -> int:
    sys.stdout.write(rules_text(profile, cassette, given))
    return 0
