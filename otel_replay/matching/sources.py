"""The rule tables a run matches by, as a run is given them (:class:`RuleSources`), and
the places its place rules name (``current_places``).

Light to import: the built-in rules and the agent profiles are parsed, and their patterns
compiled, when a run first matches (``matching.session_rules``), not when a gateway starts.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_replay.core.exchange import CanonicalRequest
    from otel_replay.matching.rulefile import RuleFile
    from otel_replay.matching.rules import Profile, Rule

__all__ = ["DEFAULT_SOURCES", "PYPROJECT_TABLE", "RuleSources", "current_places"]

PYPROJECT_TABLE = ("tool", "otel-replay")
"""Where a ``pyproject.toml`` holds a rule file."""


def current_places() -> tuple[str, str]:
    """The working and home directories of this process, "" when unknown."""
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    home = os.path.expanduser("~")
    return cwd, "" if home == "~" else home


@dataclass(frozen=True, slots=True)
class RuleSources:
    """The tables a run matches by: ``files`` in rising precedence (recorded in the
    cassette, the user's file, ``--rules``) on top of the built-in rules and ``profiles``
    (None: the built-in agent profiles, ``profiles.PROFILES``)."""

    files: tuple[RuleFile, ...] = ()
    profiles: tuple[Profile, ...] | None = None

    def agent_profiles(self) -> tuple[Profile, ...]:
        """The agent profiles in force."""
        if self.profiles is not None:
            return self.profiles
        from otel_replay.matching.profiles import PROFILES

        return PROFILES

    def table(self) -> tuple[Rule, ...]:
        """Every row, lowest precedence first."""
        from otel_replay.matching.rules import BUILTIN_RULES

        rows: list[Rule] = [*BUILTIN_RULES]
        for profile in self.agent_profiles():
            rows.extend(profile.rules)
        for file in self.files:
            rows.extend(file.rules)
        return tuple(rows)

    def with_recorded(self, recorded: RuleFile | None) -> RuleSources:
        """These sources with a cassette's recorded rules below the files already here."""
        if recorded is None:
            return self
        return RuleSources((recorded, *self.files), self.profiles)

    def user_rules(self) -> tuple[Rule, ...]:
        return tuple(rule for file in self.files for rule in file.rules)

    def recorded_form(
        self,
        requests: Sequence[CanonicalRequest],
        places: tuple[str, str] = ("", ""),
        mentioned: bool | None = None,
    ) -> dict[str, Any] | None:
        """What a cassette records of these rules (``source.rules``): the profiles in force
        for its requests, the rule files' rows as one TOML text, and the working and home
        directories (``places``) when a request mentions one (``mentioned``, when the
        caller already knows); None when none of these."""
        from otel_replay.matching.profiles import mentions, profiles_seen
        from otel_replay.matching.rulefile import to_toml

        seen = profiles_seen(self.agent_profiles(), requests)
        rows = self.user_rules()
        if mentioned is None:
            mentioned = any(mentions(request, places) for request in requests)
        if not seen and not rows and not mentioned:
            return None
        form: dict[str, Any] = {"profiles": seen}
        if rows:
            form["file"] = to_toml(rows)
        if mentioned:
            form["places"] = {"cwd": places[0], "home": places[1]}
        return form


DEFAULT_SOURCES = RuleSources()
"""No rule file: the built-in rules and the agent profiles."""
