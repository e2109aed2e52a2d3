"""Agent profiles, and the rule tables a run matches by, in order of precedence.

A profile is a rule table written in the rule file's own language, in force for a request
whose shape says which agent sent it (``detect``: paths as an ignore rule writes them):
Claude Code's ``metadata.user_id`` is JSON text naming a device and a session; Codex's
``client_metadata["x-codex-turn-metadata"]`` is JSON text holding the turn's start time.
Adding a profile is adding an entry to ``PROFILE_TABLES``.

``RuleSources`` (``matching.sources``) puts a run's tables together: built-in < profiles <
the rules recorded in the cassette < the user's rule file < ``--rules``. At one position of
a text a volatile rule of a later table wins; ignore and live rules of every table apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.projection import canonical_json
from otel_replay.matching.rulefile import RuleFile, parse_rules
from otel_replay.matching.rules import Profile, detect

__all__ = [
    "PROFILES",
    "PROFILE_TABLES",
    "profiles_seen",
    "recorded_places",
    "recorded_rules",
]

PROFILE_TABLES: dict[str, str] = {
    "claude-code": """\
detect = ["params.metadata.user_id.device_id"]

# metadata.user_id is JSON text: {"device_id": …, "account_uuid": …, "session_id": …}
[[ignore]]
path = "params.metadata.user_id.device_id"

[[ignore]]
path = "params.metadata.user_id.session_id"

# The billing header that opens the system prompt ends its version with a digest of the
# prompt (cc_version=2.1.332.0b8): the prompt itself is compared where it is.
[[volatile]]
kind = "cc_digest"
pattern = '\\.[0-9a-f]{3}; cc_entrypoint='

# "# Memory": <home>/.claude/projects/<working directory, non-alphanumerics as ->/memory/
[[volatile]]
kind = "cc_project"
pattern = '[/\\\\]projects[/\\\\][A-Za-z0-9_-]+[/\\\\]memory[/\\\\]'

# "# Environment": the machine, the shell, whether the directory is a repository (or a
# worktree), its directories: the list of "Label: value" lines under the heading is one
# placeholder as a whole, whichever lines one run has and the other not ...
[[volatile]]
kind = "cc_environment"
pattern = '# Environment\\n(?:You have been[^\\n]*\\n)?(?: - [A-Z][\\w ]{0,40}:[^\\n]*\\n?)+'

# ... and such a line elsewhere is one on its own
[[volatile]]
kind = "cc_environment"
pattern = '(?m)^ - (?:Is a git repository|Platform|Shell|OS Version): [^\\n]*$'

# The git status Claude Code attaches (branch, status lines, recent commits) outside a
# repository it does not: a part of the first message of its own, or a block of the
# system prompt, is left out ...
[[ignore]]
path = "messages[*].parts[*]"
pattern = '(?s)<system-reminder>\\s*As you answer[^\\n]*:\\s*# gitStatus\\n.*</system-reminder>\\s*'

[[ignore]]
path = "system[*]"
pattern = '(?s)\\s*gitStatus: This is the git status.*'

# ... and so is the same reminder inside a longer text, or the section ending the system
# prompt's last block (earlier versions): there on one side only, it is not compared
[[volatile]]
kind = "drop"
pattern = '(?s)\\s*<system-reminder>\\s*As you answer[^#]*# gitStatus\\n.*?</system-reminder>\\s*'

[[volatile]]
kind = "drop"
pattern = '(?s)\\s*gitStatus: This is the git status.*'

# A tool description that names the month
[[volatile]]
kind = "cc_month"
pattern = 'The current month is [^.\\n]*'
""",
    "codex": r"""
detect = ["params.client_metadata.x-codex-turn-metadata"]

# client_metadata["x-codex-turn-metadata"] is JSON text: the turn's start time, and in a
# git repository {"<path>": {"latest_git_commit_hash": …, "has_changes": …}} (absent elsewhere)
[[ignore]]
path = "params.client_metadata.x-codex-turn-metadata.turn_started_at_unix_ms"

[[ignore]]
path = "params.client_metadata.x-codex-turn-metadata.workspaces"

# when each input item was made (epoch seconds with a fraction)
[[ignore]]
path = "messages[*].parts[*].internal_chat_message_metadata_passthrough.create_time"

# the environment-context message: where it runs, in which shell and time zone (each
# pattern starts inside the element, as `<shell>` alone reads as a placeholder)
[[volatile]]
kind = "working_dir"
pattern = '[^<>\n]+</cwd>'

[[volatile]]
kind = "workspace_root"
pattern = '[^<>\n]+</root>'

[[volatile]]
kind = "shell"
pattern = '[^<>\n]+</shell>'

[[volatile]]
kind = "timezone"
pattern = '[^<>\n]+</timezone>'

# the primary agent is called `/root`, which is also root's home directory: named alike
# whoever runs it
[[volatile]]
kind = "agent"
pattern = '(?:`|to=|"agent_name":")/root\b'

# the heading of an AGENTS.md names its directory; the instructions below it still count
[[volatile]]
kind = "agents_md"
pattern = '# AGENTS\.md instructions for [^\n]*'

# the skill roots table names directories under CODEX_HOME
[[volatile]]
kind = "skill_root"
pattern = '`r[0-9]+` = `[^`\n]*`'

# how long a tool call took, in the text around its output
[[volatile]]
kind = "duration"
pattern = 'Wall time [0-9.]+ seconds'
""",
}
"""Each built-in profile's table, in the rule file's syntax plus ``detect``."""


def _profile(name: str, text: str) -> Profile:
    table, extra = parse_rules(text, f"profile {name}", extra=("detect",), profile=name)
    return Profile(name, tuple(extra.get("detect", ())), table.rules)


PROFILES: tuple[Profile, ...] = tuple(_profile(n, t) for n, t in PROFILE_TABLES.items())


def recorded_rules(source: Mapping[str, Any], origin: str) -> RuleFile | None:
    """The rule file recorded in a cassette's ``source.rules``, if any."""
    rules = source.get("rules")
    text = rules.get("file") if isinstance(rules, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    return parse_rules(text, origin)[0]


def recorded_places(source: Mapping[str, Any]) -> tuple[str, str] | None:
    """The working and home directories a cassette was recorded in, when it says."""
    rules = source.get("rules")
    places = rules.get("places") if isinstance(rules, dict) else None
    if not isinstance(places, dict):
        return None
    cwd, home = places.get("cwd", ""), places.get("home", "")
    return (cwd, home) if isinstance(cwd, str) and isinstance(home, str) else None


def mentions(request: CanonicalRequest, places: Iterable[str]) -> bool:
    """Whether ``request`` names one of ``places`` (the working or home directory)."""
    # as the canonical text holds them: a Windows path's backslashes escaped
    needles = [canonical_json(p)[1:-1] for p in places if len(p) > 1]
    if not needles:
        return False
    for name in ("system", "messages", "tools", "params"):
        text = canonical_json(request.component(name))
        if any(needle in text for needle in needles):
            return True
    return False


def profiles_seen(profiles: Iterable[Profile], requests: Iterable[CanonicalRequest]) -> list[str]:
    """The names of the profiles in force for any of ``requests``, in profile order."""
    table = tuple(profiles)
    seen = {detect(table, request) for request in requests}
    return [p.name for p in table if p.name in seen]
