"""The rule file: matching rules users can read and change, in TOML.

::

    [[ignore]]                       # a field that never counts
    path = "params.metadata.user_id"
    provider = "anthropic"           # optional scope: provider, model, endpoint, profile

    [[ignore]]                       # only the values whose text matches in full (RE2)
    path = "messages[*].parts[*]"
    pattern = "(?s)<system-reminder>\\n# gitStatus.*"

    [[volatile]]                     # matches become numbered placeholders, <order:1>
    kind = "order"
    pattern = "ORD-[0-9]{6}"         # RE2 syntax; numbers = true also replaces integers

    [[volatile]]                     # kind "drop": matches are left out (there or not)
    kind = "drop"
    pattern = "(?s)\\s*<footer>.*</footer>"

    [[live]]                         # always answered by the provider in auto mode
    model = "gpt-4o-realtime*"

    [[live]]                         # an MCP tool (or, without tool, a whole server):
    server = "tickets"               # always the real server, in every mode
    tool = "create_*"

The same tables may sit under ``[tool.otel-replay]`` in ``pyproject.toml``. ``parse_rules``
turns the text into rule rows; anything it cannot use is a ``RuleFileError`` whose message
is one line naming the file, the line and the rule. ``to_toml`` writes rows back in the
same syntax.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import COMPONENTS
from otel_replay.matching.ignore import parse_path
from otel_replay.matching.linear import PatternError, check_linear
from otel_replay.matching.rules import (
    KEEP,
    MCP_PROVIDER,
    IgnoreRule,
    LiveRule,
    Rule,
    Scope,
    VolatileRule,
)

__all__ = [
    "SCOPE_KEYS",
    "TOOL_KEYS",
    "RuleFile",
    "RuleFileError",
    "parse_rules",
    "to_toml",
]

SCOPE_KEYS = ("provider", "model", "endpoint", "profile")
TOOL_KEYS = ("server", "tool")
"""A ``live`` rule's MCP scope: the server (``--mcp NAME=URL``) and the tool, fnmatch
patterns; as a scope, provider ``mcp``, endpoint ``/mcp/SERVER``, model TOOL."""
_KEYS = {
    "ignore": ("path", "pattern", *SCOPE_KEYS),
    "volatile": ("kind", "pattern", "numbers", *SCOPE_KEYS),
    "live": (*SCOPE_KEYS, *TOOL_KEYS),
}
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_AT_LINE = re.compile(r"\s*\(at line (\d+), column \d+\)$")


class RuleFileError(ConfigError):
    """A rule file that cannot be used: ``file:line: [[kind]] #n: what``."""

    def __init__(self, origin: str, line: int, what: str, rule: str = "") -> None:
        self.origin, self.line, self.rule = origin, line, rule
        super().__init__(f"{origin}:{line}: {rule + ': ' if rule else ''}{what}")


@dataclass(frozen=True, slots=True)
class RuleFile:
    """The rows of one rule file (``origin`` names it in messages), and its text."""

    origin: str
    text: str
    rules: tuple[Rule, ...]


def parse_rules(
    text: str,
    origin: str,
    *,
    table: Sequence[str] = (),
    extra: Sequence[str] = (),
    profile: str | None = None,
) -> tuple[RuleFile, dict[str, Any]]:
    """The rows of a rule file's ``text`` (below ``table``, e.g. ``("tool", "otel-replay")``
    in ``pyproject.toml``), and the values of the ``extra`` top-level keys it may hold.
    ``profile`` scopes every row to that agent profile."""
    try:
        document: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _AT_LINE.search(message)
        line = int(found.group(1)) if found else 1
        raise RuleFileError(origin, line, f"not valid TOML: {_AT_LINE.sub('', message)}") from None
    data: Any = document
    for name in table:
        data = data.get(name, {}) if isinstance(data, dict) else {}
    locate = _Locator(text, ".".join(table))
    if not isinstance(data, dict):
        raise RuleFileError(origin, 1, f"[{'.'.join(table)}] must be a table")
    for key in data:
        if key not in _KEYS and key not in extra:
            allowed = ", ".join([*_KEYS, *extra])
            what = f"unknown key {key!r} (expected {allowed})"
            raise RuleFileError(origin, locate.key(key), what)
    rules: list[Rule] = []
    for section, read in (("ignore", _ignore), ("volatile", _volatile), ("live", _live)):
        entries = data.get(section, [])
        if not isinstance(entries, list):
            what = f"{section} must be an array of tables ([[{section}]])"
            raise RuleFileError(origin, locate.key(section), what)
        for n, entry in enumerate(entries, 1):
            label = f"[[{section}]] #{n}"
            try:
                if not isinstance(entry, dict):
                    raise _Bad(None, "must be a table")
                _known(entry, _KEYS[section])
                rules.append(read(entry, _scope(entry, profile)))
            except _Bad as bad:
                line = locate.entry(section, n, bad.key)
                raise RuleFileError(origin, line, bad.what, label) from None
    return RuleFile(origin, text, tuple(rules)), {k: data[k] for k in extra if k in data}


class _Bad(Exception):
    def __init__(self, key: str | None, what: str) -> None:
        super().__init__(what)
        self.key, self.what = key, what


def _known(entry: Mapping[str, Any], keys: Sequence[str]) -> None:
    for key in entry:
        if key not in keys:
            raise _Bad(key, f"unknown key {key!r} (expected {', '.join(keys)})")


def _text(entry: Mapping[str, Any], key: str, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if value is None:
        raise _Bad(None, f"missing {key!r}")
    if not isinstance(value, str) or not value:
        raise _Bad(key, f"{key} must be a non-empty string")
    return value


def _scope(entry: Mapping[str, Any], profile: str | None) -> Scope:
    given = {key: _text(entry, key, required=False) for key in SCOPE_KEYS}
    if profile is not None:
        if given["profile"] not in (None, profile):
            raise _Bad("profile", f"a rule of the {profile} profile cannot name another")
        given["profile"] = profile
    return Scope(**given)


def _ignore(entry: Mapping[str, Any], scope: Scope) -> Rule:
    path = _text(entry, "path")
    assert path is not None
    try:
        steps = parse_path(path)
    except ValueError as exc:
        raise _Bad("path", str(exc)) from None
    if steps[0].key not in COMPONENTS:
        raise _Bad(
            "path", f"path {json.dumps(path)} must start with one of {', '.join(COMPONENTS)}"
        )
    pattern = _text(entry, "pattern", required=False)
    if pattern is not None:
        try:
            check_linear(pattern)
        except PatternError as exc:
            what = f"pattern {json.dumps(pattern)} does not compile: {exc}"
            raise _Bad("pattern", what) from None
    return IgnoreRule(path, scope, pattern)


def _volatile(entry: Mapping[str, Any], scope: Scope) -> Rule:
    kind, pattern = _text(entry, "kind"), _text(entry, "pattern")
    assert kind is not None and pattern is not None
    if not _KIND.fullmatch(kind) or kind == KEEP:
        raise _Bad("kind", f"kind {json.dumps(kind)} must be a word (letters, digits, _)")
    try:
        check_linear(pattern)
    except PatternError as exc:
        raise _Bad("pattern", f"pattern {json.dumps(pattern)} does not compile: {exc}") from None
    if check_linear(pattern).search("") is not None:
        raise _Bad("pattern", f"pattern {json.dumps(pattern)} matches the empty string")
    numbers = entry.get("numbers", False)
    if not isinstance(numbers, bool):
        raise _Bad("numbers", "numbers must be true or false")
    return VolatileRule(kind, pattern, scope, numbers=numbers, linear=True)


def _live(entry: Mapping[str, Any], scope: Scope) -> Rule:
    server, tool = _text(entry, "server", False), _text(entry, "tool", False)
    if server is not None or tool is not None:
        taken = next((k for k in ("provider", "model", "endpoint") if k in entry), None)
        if taken is not None:
            raise _Bad(taken, f"{taken} does not go with server and tool (an MCP call's scope)")
        endpoint = "/mcp/" + (server or "*")
        scope = dataclasses.replace(scope, provider=MCP_PROVIDER, endpoint=endpoint, model=tool)
    if scope == Scope():
        raise _Bad(None, f"needs at least one of {', '.join((*SCOPE_KEYS, *TOOL_KEYS))}")
    return LiveRule(scope)


class _Locator:
    """Line numbers of keys and of the n-th ``[[section]]`` in a file's text."""

    def __init__(self, text: str, prefix: str) -> None:
        self.lines = text.splitlines()
        # each table name bare or quoted: [[tool.otel-replay.ignore]], [[tool."otel-replay".ignore]]
        names = [name for name in prefix.split(".") if name]
        self.prefix = "".join(rf'"?{re.escape(name)}"?\s*\.\s*' for name in names)

    def key(self, key: str) -> int:
        pattern = re.compile(rf"\s*(?:\[+\s*{self.prefix}{re.escape(key)}\b|{re.escape(key)}\s*=)")
        return next((i for i, line in enumerate(self.lines, 1) if pattern.match(line)), 1)

    def entry(self, section: str, n: int, key: str | None) -> int:
        header = re.compile(rf"\s*\[\[\s*{self.prefix}{re.escape(section)}\s*\]\]")
        starts = [i for i, line in enumerate(self.lines) if header.match(line)]
        if len(starts) < n:
            return self.key(section)
        start = starts[n - 1]
        if key is not None:
            assign = re.compile(rf"\s*{re.escape(key)}\s*=")
            for i in range(start + 1, len(self.lines)):
                if self.lines[i].lstrip().startswith("["):
                    break
                if assign.match(self.lines[i]):
                    return i + 1
        return start + 1


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _tool_scope(rule: LiveRule) -> list[tuple[str, str | None]]:
    """A tool rule's scope as the rule file writes it (``server``, ``tool``), in place of
    the provider, endpoint and model it stands for; nothing for another rule."""
    endpoint = rule.scope.endpoint or ""
    if not rule.for_tools or not endpoint.startswith("/mcp/"):
        return []
    server = endpoint.removeprefix("/mcp/")
    shown = [("provider", None), ("endpoint", None), ("model", None)]
    return [*shown, ("server", None if server == "*" else server), ("tool", rule.scope.model)]


def to_toml(rules: Iterable[Rule], *, scope_profile: bool = True) -> str:
    """Rows in the rule file's own syntax (``scope_profile=False`` leaves out the profile
    scope, as a profile's own table does)."""
    blocks: list[str] = []
    for rule in rules:
        if isinstance(rule, IgnoreRule):
            lines = ["[[ignore]]", f"path = {_string(rule.path)}"]
            if rule.pattern is not None:
                lines.append(f"pattern = {_string(rule.pattern)}")
        elif isinstance(rule, VolatileRule):
            lines = ["[[volatile]]", f"kind = {_string(rule.kind)}"]
            lines.append(f"pattern = {_string(rule.pattern)}")
            if rule.numbers:
                lines.append("numbers = true")
        else:
            lines = ["[[live]]"]
        scope = dict(_tool_scope(rule) if isinstance(rule, LiveRule) else ())
        for key in SCOPE_KEYS:
            value = getattr(rule.scope, key)
            if key in scope:
                continue
            if value is not None and (scope_profile or key != "profile"):
                lines.append(f"{key} = {_string(value)}")
        lines.extend(f"{key} = {_string(value)}" for key, value in scope.items() if value)
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
