"""The coding-agent CLIs ``record`` / ``replay`` know by name: the upstream each calls, and
the options that point one reading no base-URL variable at the gateway.

Most agents reach the gateway through the variables of the provider table
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, …). A coding-agent CLI that ignores them
gets the same URL as a command-line option instead, put in front of its own arguments by
:func:`agent_command` when ``record`` / ``replay`` start it. The option overrides the
setting for that run only: the agent's own configuration files (``CODEX_HOME``) are read
as usual and never written. The upstream an agent calls is where a recording gateway
opens a connection while the agent starts (``upstream.HttpUpstream.connect_ahead``).

The MCP servers the gateway serves (``--mcp NAME=URL``, ``OTEL_REPLAY_MCP_<NAME>_URL``)
reach an agent CLI the same way: Claude Code in ``--mcp-config`` (a JSON string, after the
agent's own arguments: the option takes several values), Codex as
``-c mcp_servers.NAME.url="…"``; their own MCP configuration files are not rewritten.

Adding such an agent is adding a row to ``AGENTS``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PureWindowsPath

from otel_replay.core import envvars as ev

__all__ = ["AGENTS", "AgentSpec", "agent_command", "agent_for", "mcp_servers"]


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent CLI: the names its executable goes by (without an extension such as
    ``.js`` or ``.exe``), the upstream (a ``PROVIDERS`` name) its model calls go to, and
    per option, the setting and the variable of the agent's environment whose value it
    takes (``-c openai_base_url="…"``); none for an agent reading the variables."""

    name: str
    executables: tuple[str, ...]
    upstream: str
    flag: str = ""
    settings: tuple[tuple[str, str], ...] = ()
    mcp: str = ""
    """How it takes MCP servers: ``mcp-config`` (Claude Code's ``--mcp-config`` JSON) or
    ``setting`` (``mcp_servers.NAME.url`` through ``flag``); none when empty."""

    def options(self, env: Mapping[str, str]) -> list[str]:
        """The options giving the agent the gateway's addresses in ``env``."""
        options: list[str] = []
        for setting, variable in self.settings:
            if env.get(variable):
                options += [self.flag, f"{setting}={json.dumps(env[variable])}"]
        if self.mcp == "setting":
            for name, url in mcp_servers(env).items():
                options += [self.flag, f"mcp_servers.{name}.url={json.dumps(url)}"]
        return options

    def trailing(self, env: Mapping[str, str]) -> list[str]:
        """The options that go after the agent's own arguments."""
        servers = mcp_servers(env)
        if self.mcp != "mcp-config" or not servers:
            return []
        config = {name: {"type": "http", "url": url} for name, url in servers.items()}
        return ["--mcp-config", json.dumps({"mcpServers": config}, separators=(",", ":"))]


def mcp_servers(env: Mapping[str, str]) -> dict[str, str]:
    """The MCP servers the gateway serves, by name: from ``OTEL_REPLAY_MCP_<NAME>_URL``,
    whose URL ends in ``/mcp/NAME`` (NAME as given)."""
    found: dict[str, str] = {}
    for key, url in sorted(env.items()):
        if key.startswith(ev.OTEL_REPLAY_MCP_PREFIX) and key.endswith("_URL") and "/mcp/" in url:
            found[url.rsplit("/mcp/", 1)[1]] = url
    return found


AGENTS: tuple[AgentSpec, ...] = (
    # Claude Code reads ANTHROPIC_BASE_URL
    AgentSpec(name="claude-code", executables=("claude",), upstream="anthropic", mcp="mcp-config"),
    # Codex reads no OPENAI_BASE_URL; its built-in provider takes `openai_base_url` (a
    # TOML value, so quoted), given on the command line before the subcommand.
    AgentSpec(
        name="codex",
        executables=("codex",),
        upstream="openai",
        flag="-c",
        settings=(("openai_base_url", ev.OPENAI_BASE_URL),),
        mcp="setting",
    ),
)


def agent_for(command: Sequence[str]) -> AgentSpec | None:
    """The agent ``command`` starts, when it is one of ``AGENTS``."""
    if not command:
        return None
    name = PureWindowsPath(command[0]).name.lower()  # either separator
    stem = name.split(".", 1)[0]
    return next((agent for agent in AGENTS if stem in agent.executables), None)


def agent_command(command: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``command`` with the options its agent needs to reach the gateway whose variables
    are ``env``; unchanged for any other command."""
    agent = agent_for(command)
    if agent is None:
        return list(command)
    return [command[0], *agent.options(env), *command[1:], *agent.trailing(env)]
