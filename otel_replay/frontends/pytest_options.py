"""The pytest plugin's command-line options and ini value (``--otel-replay…``), read once
a run (:class:`PluginOptions`), and what they and a test's ``otel_replay`` marker decide
for a block: its cassette and its mode. The telemetry options are ``pytest_telemetry``'s.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otel_replay.core import envvars as ev
from otel_replay.core.errors import ConfigError
from otel_replay.frontends import pytest_telemetry
from otel_replay.providers import PROVIDERS
from otel_replay.providers.mcp import parse_server
from otel_replay.providers.named import parse_upstream
from otel_replay.session.modes import MODES, default_mode

__all__ = ["PluginOptions", "add_options"]


def add_options(parser: pytest.Parser) -> None:
    """Declare the plugin's options (in its group) and its ini value."""
    group = parser.getgroup("otel-replay", "otel-replay: record and replay model calls")
    group.addoption(
        "--otel-replay",
        dest="otel_replay_mode",
        choices=MODES,
        default=None,
        help="mode for every block, overriding markers (default: strict when CI is set, else auto)",
    )
    group.addoption(
        "--otel-replay-strict",
        dest="otel_replay_strict",
        action="store_true",
        default=False,
        help="a test an auto-mode miss leaves not evaluated (no provider key to go live "
        f"with) fails instead of being skipped (also {ev.OTEL_REPLAY_STRICT}=1)",
    )
    group.addoption(
        "--otel-replay-changed",
        dest="otel_replay_changed",
        nargs="?",
        const="HEAD",
        default=None,
        metavar="REF",
        help="run only the tests whose cassettes differ from git REF (default: the working "
        "tree against HEAD), by the map the last runs wrote to .otel-replay/tests.json; "
        "a test the map does not know runs. Write it --otel-replay-changed=REF",
    )
    group.addoption(
        "--otel-replay-egress",
        dest="otel_replay_egress",
        choices=("block", "allow"),
        default="allow",
        help="block: connections to model provider hosts fail the test",
    )
    group.addoption(
        "--otel-replay-unused",
        dest="otel_replay_unused",
        choices=("warn", "error"),
        default="warn",
        help="what a recording no test of the run used is (default: warn)",
    )
    group.addoption(
        "--otel-replay-report",
        dest="otel_replay_report",
        metavar="FILE",
        default=None,
        help="write a report of every block and every cassette written "
        "(.json, .html or .md by extension)",
    )
    pytest_telemetry.add_options(group)
    for row in PROVIDERS:
        if row.option_help is not None:
            group.addoption(
                f"--otel-replay-upstream-{row.name}",
                dest=f"otel_replay_{row.name}",
                metavar="URL",
                help=row.option_help,
            )
    group.addoption(
        "--otel-replay-upstream",
        action="append",
        default=[],
        type=parse_upstream,
        metavar="NAME=URL",
        help="an OpenAI-compatible upstream, at /u/NAME/v1 (NAME_BASE_URL); repeatable",
    )
    group.addoption(
        "--otel-replay-mcp",
        action="append",
        default=[],
        type=parse_server,
        metavar="NAME=URL",
        help="an MCP server (Streamable HTTP), at /mcp/NAME (OTEL_REPLAY_MCP_<NAME>_URL); "
        "repeatable",
    )
    group.addoption(
        "--otel-replay-tools",
        choices=("replay", "live"),
        default="replay",
        help="the agent's own tools (pydantic-ai, openai-agents, LangChain, "
        "@otel_replay.tool): recorded and replayed (default), or run live",
    )
    parser.addini(
        "otel_replay_cassette_dir",
        "folder beside the test file where bare cassette names live",
        default="cassettes",
    )


@dataclass(frozen=True, slots=True)
class PluginOptions:
    """The options as given: ``forced_mode`` overrides every block's; ``upstreams`` and
    ``mcp`` are by name; ``cassette_dir`` is where bare cassette names live, beside the
    test file; ``egress``: connections to model provider hosts are blocked."""

    forced_mode: str | None
    unused: str
    report: str | None
    upstreams: dict[str, str | None]
    mcp: dict[str, str]
    cassette_dir: str
    egress: bool
    tools: str = "replay"
    strict: bool = False
    changed: str | None = None

    @classmethod
    def read(cls, config: pytest.Config) -> PluginOptions:
        upstreams: dict[str, str | None] = {
            row.name: config.getoption(f"otel_replay_{row.name}")
            for row in PROVIDERS
            if row.option_help is not None
        }
        upstreams.update(config.getoption("otel_replay_upstream"))
        return cls(
            forced_mode=config.getoption("otel_replay_mode"),
            unused=config.getoption("otel_replay_unused"),
            report=config.getoption("otel_replay_report"),
            upstreams=upstreams,
            mcp=dict(config.getoption("otel_replay_mcp")),
            cassette_dir=str(config.getini("otel_replay_cassette_dir") or "cassettes"),
            egress=config.getoption("otel_replay_egress") == "block",
            tools=config.getoption("otel_replay_tools"),
            strict=bool(config.getoption("otel_replay_strict")) or _strict_env(),
            changed=config.getoption("otel_replay_changed"),
        )

    def cassette_for(self, item: Any, name: str | os.PathLike[str] | None) -> Path:
        """The cassette of a block of ``item``: ``name`` (or the marker's ``cassette=``,
        else the test's name) in the cassette folder beside the test file; a path as given."""
        marker = item.get_closest_marker("otel_replay")
        if name is None and marker is not None:
            name = marker.kwargs.get("cassette")
        if name is None:
            name = _safe_name(item.name)
        text = os.fspath(name)
        if text.endswith(".json") or os.path.isabs(text):
            return Path(text)  # a path is used as given
        # a name lives in the cassette folder beside the test file, and stays there
        folder = (Path(item.path).parent / self.cassette_dir).resolve()
        path = (folder / f"{text}.json").resolve()
        if not path.is_relative_to(folder):
            raise ConfigError(
                f"cassette name {text!r} escapes the cassette folder {folder}; "
                "use a name inside it, or a path ending in .json"
            )
        return path

    def mode_for(self, item: Any, mode: str | None) -> str:
        """The mode of a block of ``item``: the option's, else the block's, else the
        marker's, else the default (strict when CI is set, else auto)."""
        marker = item.get_closest_marker("otel_replay")
        chosen = (
            self.forced_mode
            or mode
            or (marker.kwargs.get("mode") if marker is not None else None)
            or default_mode()
        )
        if chosen not in MODES:
            raise ConfigError(f"unknown otel-replay mode {chosen!r}; use one of {', '.join(MODES)}")
        return str(chosen)


def _strict_env() -> bool:
    """Whether ``OTEL_REPLAY_STRICT`` asks for strict outcomes (``1``, ``true``, ``yes``)."""
    return os.environ.get(ev.OTEL_REPLAY_STRICT, "").strip().lower() in ("1", "true", "yes")


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "cassette"
