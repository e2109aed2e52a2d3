"""The gateway's settings and the environment it gives the agent.

Light to import (no aiohttp, no gRPC): the CLI computes the agent's variables from ports
it has bound itself, starts the agent, and only then builds the gateway.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay import providers
from otel_replay.core import envvars as ev
from otel_replay.gateway.limits import Limits
from otel_replay.matching.sources import DEFAULT_SOURCES, RuleSources
from otel_replay.providers import mcp, vertex
from otel_replay.providers.named import KNOWN, NAMED_PREFIX, named_prefix
from otel_replay.providers.spec import PLACEHOLDER_REGION

if TYPE_CHECKING:
    from otel_replay.gateway.control import Control
    from otel_replay.gateway.upstream import Upstream
    from otel_replay.session.fork import ForkPlan
    from otel_replay.session.session import Session

__all__ = [
    "VARIABLE_READERS",
    "GatewayConfig",
    "agent_environment",
    "agent_upstreams",
    "gateway_url",
    "run_environment",
    "upstream_bases",
]

log = logging.getLogger("otel_replay.gateway")

_BASE_READERS: dict[str, str] = {
    ev.OPENAI_BASE_URL: "the openai SDK (Python, TypeScript) and what is built on it: "
    "openai-agents, pydantic-ai, litellm, LangChain, Codex",
    ev.OPENAI_API_BASE: "langchain-openai (before OPENAI_BASE_URL), litellm (after it), "
    "older OpenAI clients",
    ev.ANTHROPIC_BASE_URL: "the anthropic SDK (Python, TypeScript) and what is built on it: "
    "pydantic-ai, LangChain; Claude Code, litellm",
    ev.ANTHROPIC_API_BASE: "litellm (before ANTHROPIC_BASE_URL)",
    ev.AZURE_OPENAI_ENDPOINT: "the openai SDK's AzureOpenAI, pydantic-ai's Azure provider",
    ev.AZURE_API_BASE: "litellm's azure/ models",
    ev.GOOGLE_GEMINI_BASE_URL: "google-genai (the Gemini API), Gemini CLI",
    ev.GEMINI_API_BASE: "litellm's gemini/ models",
    ev.GOOGLE_VERTEX_BASE_URL: "google-genai with vertexai=True",
    ev.ANTHROPIC_VERTEX_BASE_URL: "the anthropic SDK's AnthropicVertex, Claude Code on Vertex AI",
    ev.AWS_ENDPOINT_URL_BEDROCK_RUNTIME: "boto3 / botocore (bedrock-runtime)",
    ev.ANTHROPIC_BEDROCK_BASE_URL: "the anthropic SDK's AnthropicBedrock, Claude Code on Bedrock",
    ev.AWS_BEDROCK_RUNTIME_ENDPOINT: "litellm's bedrock/ models",
}
_OTHER_READERS: dict[str, str] = {
    ev.OTLP_ENDPOINT: "OpenTelemetry SDKs' OTLP exporters (every signal)",
    ev.OTLP_PROTOCOL: "OpenTelemetry SDKs' OTLP exporters (every signal)",
    ev.OTLP_INSECURE: "OpenTelemetry SDKs' OTLP/gRPC exporters (every signal)",
    ev.OTLP_TRACES_ENDPOINT: "OpenTelemetry SDKs' OTLP span exporters",
    ev.OTLP_TRACES_PROTOCOL: "OpenTelemetry SDKs' OTLP span exporters",
    ev.OTLP_TRACES_INSECURE: "OpenTelemetry SDKs' OTLP/gRPC span exporters",
    ev.OTLP_LOGS_ENDPOINT: "OpenTelemetry SDKs' OTLP log exporters, Claude Code's and "
    "Codex's telemetry",
    ev.OTLP_LOGS_PROTOCOL: "OpenTelemetry SDKs' OTLP log exporters",
    ev.OTLP_LOGS_INSECURE: "OpenTelemetry SDKs' OTLP/gRPC log exporters",
    ev.OTLP_METRICS_ENDPOINT: "OpenTelemetry SDKs' OTLP metric exporters",
    ev.OTLP_METRICS_PROTOCOL: "OpenTelemetry SDKs' OTLP metric exporters",
    ev.OTLP_METRICS_INSECURE: "OpenTelemetry SDKs' OTLP/gRPC metric exporters",
    ev.OTEL_REPLAY_URL: "otel-replay's own tools run by the agent (mcp-stdio), and the "
    "agent's tests, to tell they run under the gateway",
    ev.OTEL_REPLAY_MODE: "the agent's tests, to tell the mode",
    ev.OTEL_REPLAY_TOOLS: "the hooks of the agent's own tools (replay, or live)",
    "PYTHONPATH": "Python, to load the sitecustomize that hooks the agent's own tools (the "
    "caller's path after it; --tools replay)",
    ev.OTEL_REPLAY_GRPC_PORT: "the agent's tests, to reach the OTLP/gRPC receiver",
    ev.OPENAI_API_KEY: "the openai SDK (replay only, a placeholder when the caller has none)",
    ev.ANTHROPIC_API_KEY: "the anthropic SDK, Claude Code (replay only, a placeholder)",
    ev.AZURE_OPENAI_API_KEY: "the openai SDK's AzureOpenAI (replay only, a placeholder)",
    ev.GEMINI_API_KEY: "google-genai, Gemini CLI (replay only, a placeholder)",
    ev.AWS_ACCESS_KEY_ID: "boto3 / botocore, to sign (replay only, a placeholder)",
    ev.AWS_SECRET_ACCESS_KEY: "boto3 / botocore, to sign (replay only, a placeholder)",
    ev.AWS_DEFAULT_REGION: "boto3 / botocore (strict replay, when the caller sets no region)",
    ev.GOOGLE_APPLICATION_CREDENTIALS: "google-auth for Vertex AI clients (replay only: "
    "placeholder credentials whose tokens the gateway mints)",
    ev.ANTHROPIC_VERTEX_PROJECT_ID: "AnthropicVertex, Claude Code on Vertex AI (when unset)",
    ev.CLOUD_ML_REGION: "AnthropicVertex, Claude Code on Vertex AI (when unset)",
    ev.CLAUDE_CODE_SKIP_VERTEX_AUTH: "Claude Code on Vertex AI",
    ev.CLAUDE_CODE_SKIP_BEDROCK_AUTH: "Claude Code on Bedrock (strict replay)",
}
_NAMED_READERS: dict[str, str] = {
    variable: f"OpenAI-compatible clients of {name} (when --upstream names it)"
    for name in KNOWN
    for variable in (f"{name.upper()}_BASE_URL", f"{name.upper()}_API_KEY")
}
VARIABLE_READERS: dict[str, str] = {**_BASE_READERS, **_OTHER_READERS, **_NAMED_READERS}
"""Every variable the agent's environment may hold (``agent_environment``), with the
clients that read it: a named OpenAI-compatible host's under its name (``GROQ_BASE_URL``;
another name's likewise). The environment reference of the docs is made from it."""


@dataclass(slots=True)
class GatewayConfig:
    mode: str
    cassette: Path | None = None
    traces: Path | None = None
    upstream_openai: str | None = None
    upstream_anthropic: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    grpc_port: int | None = 0  # None: no gRPC receiver
    timing: str = "fast"
    report: Path | None = None
    command: list[str] = field(default_factory=list)
    upstream: Upstream | None = None  # a test may hand in its own
    environ: Mapping[str, str] | None = None  # the caller's environment (default os.environ)
    upstream_azure: str | None = None  # Azure OpenAI resource endpoint
    upstreams: Mapping[str, str | None] = field(default_factory=dict)
    """Base URLs by upstream name (``PROVIDERS``); ``upstream_NAME`` fields are the same."""
    rules: RuleSources = DEFAULT_SOURCES  # the rule files and profiles matching uses
    limits: Limits = field(default_factory=Limits)  # on bodies, upstream answers, nesting
    fork: ForkPlan | None = None  # replay up to a call, live from it (``session.fork``)
    mcp: Mapping[str, str] = field(default_factory=dict)
    """MCP servers by name (``--mcp NAME=URL``), served at ``/mcp/NAME``."""
    tools: str = "replay"
    """The agent's own tools (``--tools``): ``replay`` (recorded, then replayed) or ``live``."""
    control: Control | None = None
    """The control route (``control``): ``serve``'s ``use`` line over HTTP, with a token."""

    def named_upstreams(self) -> dict[str, str]:
        """The base URLs the caller named, by upstream."""
        named = {
            row.name: getattr(self, f"upstream_{row.name}", None) for row in providers.PROVIDERS
        }
        named.update(self.upstreams)
        return {name: url for name, url in named.items() if url}

    def caller_environ(self) -> Mapping[str, str]:
        """The caller's environment: the one handed in, else this process's."""
        return os.environ if self.environ is None else self.environ


def upstream_bases(config: GatewayConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """Each upstream's base URL: the one named, else the caller's own (the variable its
    SDK reads), else its public endpoint. An upstream without one (Azure OpenAI's endpoint
    is per resource) is there only when named."""
    named = config.named_upstreams()
    bases: dict[str, str] = {}
    for row in providers.PROVIDERS:
        own = (environ.get(name) for name in row.base_envs())
        base = named.get(row.name) or next((url for url in own if url), row.default_base)
        if base:
            bases[row.name] = base
    for name, url in named.items():
        bases.setdefault(name, url)
    return bases


def ahead_upstreams(config: GatewayConfig, environ: Mapping[str, str]) -> list[str]:
    """The upstreams a recording run points at before any call: those named, those whose
    base the caller's environment sets, and the one a coding-agent CLI it runs calls
    (``agents.AGENTS``). The others may never be called, so nothing is opened to them."""
    from otel_replay.gateway.agents import agent_for

    names = list(config.named_upstreams())
    for row in providers.PROVIDERS:
        if any(environ.get(name) for name in row.base_envs()):
            names.append(row.name)
    agent = agent_for(config.command)
    if agent is not None:
        names.append(agent.upstream)
    return list(dict.fromkeys(names))


def agent_environment(
    url: str,
    grpc_port: int | None,
    mode: str,
    caller: Mapping[str, str],
    named: Iterable[str] = (),
) -> dict[str, str]:
    """The variables that point an unmodified agent at the gateway.

    OTLP goes to the HTTP receiver unless the caller's settings ask for gRPC, in which
    case the endpoints name the gRPC port. Each ``named`` upstream that is not a row of
    ``PROVIDERS`` (an OpenAI-compatible host) is ``NAME_BASE_URL``
    (``http://gateway/u/NAME/v1``).
    """
    hosts = [name for name in named if providers.spec(name) is None]
    rows = [*providers.PROVIDERS, *(providers.named_upstream(name) for name in hosts)]
    env = {name: url + row.agent_path for row in rows for name in row.base_envs()}
    env[ev.OTEL_REPLAY_URL] = url
    env[ev.OTEL_REPLAY_MODE] = mode
    host = url.rsplit(":", 1)[0]  # http://127.0.0.1 or http://[::1]
    grpc_url = f"{host}:{grpc_port}" if grpc_port else None
    if grpc_port:
        env[ev.OTEL_REPLAY_GRPC_PORT] = str(grpc_port)
    general = caller.get(ev.OTLP_PROTOCOL, "http/protobuf")
    signals = (
        ("traces", ev.OTLP_TRACES_ENDPOINT, ev.OTLP_TRACES_PROTOCOL, ev.OTLP_TRACES_INSECURE),
        ("logs", ev.OTLP_LOGS_ENDPOINT, ev.OTLP_LOGS_PROTOCOL, ev.OTLP_LOGS_INSECURE),
        ("metrics", ev.OTLP_METRICS_ENDPOINT, ev.OTLP_METRICS_PROTOCOL, ev.OTLP_METRICS_INSECURE),
    )
    if general == "grpc" and grpc_url:
        env[ev.OTLP_ENDPOINT] = grpc_url
        env[ev.OTLP_INSECURE] = "true"
    else:
        env[ev.OTLP_ENDPOINT] = url
        env[ev.OTLP_PROTOCOL] = general if general != "grpc" else "http/protobuf"
    for signal, endpoint_var, protocol_var, insecure_var in signals:
        protocol = caller.get(protocol_var, general)
        if protocol == "grpc" and grpc_url:
            env[endpoint_var] = grpc_url
            env[protocol_var] = "grpc"
            env[insecure_var] = "true"
        else:
            env[endpoint_var] = f"{url}/v1/{signal}"
            env[protocol_var] = protocol if protocol != "grpc" else "http/protobuf"
    if mode in ("strict", "auto"):
        # official SDKs refuse to start without a key; replay needs none (and a caller
        # holding any key of a provider keeps it: a placeholder beside it could win)
        for row in rows:
            if any(caller.get(name) for name in row.credential_env):
                continue
            env.update(dict.fromkeys(row.placeholder_env, ev.PLACEHOLDER_KEY))
            minted = row.minted_credentials and ev.GOOGLE_APPLICATION_CREDENTIALS not in env
            if minted and (mode == "strict" or not _gcloud_login(caller)):
                placeholder = _placeholder_credentials(url)
                if placeholder is not None:
                    env[ev.GOOGLE_APPLICATION_CREDENTIALS] = placeholder
    for row in rows if mode == "strict" else ():
        if row.region_env and not any(caller.get(name) for name in row.region_env):
            env[row.region_env[0]] = PLACEHOLDER_REGION
    for row in rows:
        if row.agent_defaults is not None:
            env.update(row.agent_defaults(caller, mode))
    return env


def _gcloud_login(caller: Mapping[str, str]) -> bool:
    """Whether the caller has Application Default Credentials from ``gcloud auth
    application-default login`` (auto mode keeps them for the calls it records)."""
    config = caller.get(ev.CLOUDSDK_CONFIG) or os.path.join(
        caller.get("HOME") or os.path.expanduser("~"), ".config", "gcloud"
    )
    return os.path.isfile(os.path.join(config, "application_default_credentials.json"))


def _placeholder_path(url: str) -> Path:
    """Where the placeholder credentials of the gateway at ``url`` are written: a file per
    gateway address in a directory of the user's own under the temporary directory."""
    if hasattr(os, "getuid"):
        owner = str(os.getuid())
    else:  # Windows
        import getpass

        owner = getpass.getuser()
    where = Path(tempfile.gettempdir()) / f"otel-replay-{owner}"
    name = "google-credentials-" + url.partition("://")[2].replace(":", "-").strip("[]/")
    return where / f"{name}.json"


def forget_placeholder_credentials(url: str) -> None:
    """Remove the placeholder credentials of the gateway at ``url`` (when it stops): its
    token endpoint is gone with it, so the file could only mislead a later agent."""
    with contextlib.suppress(OSError):
        _placeholder_path(url).unlink(missing_ok=True)


def _placeholder_credentials(url: str) -> str | None:
    """The path of Application Default Credentials whose tokens the gateway at ``url``
    mints (:func:`~otel_replay.providers.vertex.placeholder_credentials`), holding no
    secret; removed when the gateway stops. None, said in the log, when it cannot be
    written."""
    path = _placeholder_path(url)
    where = path.parent
    text = json.dumps(vertex.placeholder_credentials(url, str(path)), indent=2)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if path.read_text(encoding="utf-8") == text + "\n":  # a serve's next block's
            return str(path)
    staged = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        where.mkdir(mode=0o700, exist_ok=True)
        staged.write_text(text + "\n", encoding="utf-8")
        os.replace(staged, path)
    except OSError as exc:
        log.warning(
            "otel-replay: could not write placeholder Google credentials (%s): an agent on "
            "Vertex AI needs credentials of its own to replay (%s)",
            exc,
            ev.GOOGLE_APPLICATION_CREDENTIALS,
        )
        return None
    return str(path)


def agent_upstreams(named: Iterable[str], session: Session) -> list[str]:
    """The upstreams the agent is given a variable for: those named, and every named
    upstream the cassette's recordings went to (so a replay needs no ``--upstream``)."""
    recorded = (named_prefix(r.endpoint) for r in session.recordings.requests())
    names = (prefix[len(NAMED_PREFIX) :] for prefix in recorded if prefix)
    return list(dict.fromkeys([*named, *names]))


def gateway_url(host: str, port: int) -> str:
    """The gateway's base URL when it listens on ``host:port``."""
    return f"http://{host if ':' not in host else f'[{host}]'}:{port}"


def run_environment(
    config: GatewayConfig, session: Session, port: int, grpc_port: int | None
) -> dict[str, str]:
    """The agent's variables for a gateway with ``config`` running ``session`` on ``port``
    (and ``grpc_port``)."""
    url = gateway_url(config.host, port)
    env = agent_environment(
        url,
        grpc_port,
        config.mode,
        config.caller_environ(),
        named=agent_upstreams(config.named_upstreams(), session),
    )
    env.update(mcp_environment(url, [*config.mcp, *session.tools.servers]))
    env.update(tools_environment(config.tools, config.caller_environ()))
    return env


SITE = Path(__file__).resolve().parent.parent / "hooks" / "site"
"""The folder of the ``sitecustomize`` that hooks a Python agent's own tools."""


def tools_environment(setting: str, caller: Mapping[str, str]) -> dict[str, str]:
    """``OTEL_REPLAY_TOOLS`` and, when the agent's own tools are replayed, ``PYTHONPATH``
    with the ``sitecustomize`` that hooks them in a Python agent (before the caller's
    path: the caller's own ``sitecustomize`` is run by ours)."""
    env = {ev.OTEL_REPLAY_TOOLS: setting}
    if setting == "replay":
        path = caller.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([str(SITE), *([path] if path else [])])
    return env


def mcp_environment(url: str, servers: Iterable[str]) -> dict[str, str]:
    """``OTEL_REPLAY_MCP_<NAME>_URL`` for each MCP server, given or recorded: where the
    gateway at ``url`` serves it."""
    return {mcp.env_name(name): url + mcp.server_path(name) for name in dict.fromkeys(servers)}
