"""Finding the user's rule file: ``--rules FILE``; else ``otel-replay.toml`` in the current
directory, else beside the cassette, else ``[tool.otel-replay]`` in the current directory's
``pyproject.toml``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay.core.errors import ConfigError
from otel_replay.matching.sources import PYPROJECT_TABLE, RuleSources

if TYPE_CHECKING:
    from otel_replay.matching.rulefile import RuleFile

__all__ = ["RULE_FILE", "find_rule_file", "read_rule_file", "rule_sources"]

RULE_FILE = "otel-replay.toml"


def _shown(path: Path) -> str:
    """The path as messages name it: relative to the current directory when below it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


def read_rule_file(path: Path) -> RuleFile | None:
    """The rules of ``path`` (a ``pyproject.toml`` holds them under ``[tool.otel-replay]``;
    None when it has no such table). The rule parser is imported when there are rules."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{_shown(path)}: cannot read the rule file: {exc}") from None
    if path.name == "pyproject.toml":
        import tomllib

        try:
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            tool = {PYPROJECT_TABLE[1]: None}  # parse_rules names the line
        if not isinstance(tool, dict) or PYPROJECT_TABLE[1] not in tool:
            return None
    from otel_replay.matching.rulefile import parse_rules

    table = PYPROJECT_TABLE if path.name == "pyproject.toml" else ()
    return parse_rules(text, _shown(path), table=table)[0]


def find_rule_file(cassette: Path | None, cwd: Path | None = None) -> RuleFile | None:
    """The rule file in force without ``--rules``, if any."""
    here = Path.cwd() if cwd is None else cwd
    candidates = [here / RULE_FILE]
    if cassette is not None:
        candidates.append(cassette.parent / RULE_FILE)
    for candidate in candidates:
        if candidate.is_file():
            return read_rule_file(candidate)
    pyproject = here / "pyproject.toml"
    return read_rule_file(pyproject) if pyproject.is_file() else None


def rule_sources(
    cassette: Path | None, given: str | os.PathLike[str] | None = None, cwd: Path | None = None
) -> RuleSources:
    """The rule files a run uses: the one found, then ``given`` (``--rules``) above it."""
    files: list[RuleFile] = []
    found = find_rule_file(cassette, cwd)
    if found is not None:
        files.append(found)
    if given is not None:
        path = Path(given)
        if not path.is_file():
            raise ConfigError(f"{path}: no such rule file")
        explicit = read_rule_file(path)
        if explicit is not None:
            files.append(explicit)
    return RuleSources(tuple(files))
