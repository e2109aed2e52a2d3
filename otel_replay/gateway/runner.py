"""Starting and stopping the gateway, and the environment it gives the agent.

:class:`GatewayServer` runs the gateway on the current event loop; :class:`GatewayThread`
runs it on an event loop thread of its own, which is what the CLI, the Python API and the
pytest plugin use: the agent may then be synchronous code, async code on another loop, or
a subprocess.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from otel_replay import providers
from otel_replay.core import envvars as ev
from otel_replay.core.errors import ConfigError
from otel_replay.gateway.app import Gateway
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.sniff import SniffingSite
from otel_replay.gateway.upstream import HttpUpstream, Upstream
from otel_replay.matching.profiles import RuleSources
from otel_replay.matching.session_rules import DEFAULT_SOURCES
from otel_replay.otlp.grpc import GrpcReceiver
from otel_replay.providers.named import NAMED_PREFIX, named_prefix
from otel_replay.providers.spec import PLACEHOLDER_REGION
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session, Summary


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

    def named_upstreams(self) -> dict[str, str]:
        """The base URLs the caller named, by upstream."""
        named = {
            row.name: getattr(self, f"upstream_{row.name}", None) for row in providers.PROVIDERS
        }
        named.update(self.upstreams)
        return {name: url for name, url in named.items() if url}


def upstream_bases(config: GatewayConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """Each upstream's base URL: the one named, else the caller's own (the variable its
    SDK reads), else its public endpoint. An upstream without one (Azure OpenAI's endpoint
    is per resource) is there only when named."""
    named = config.named_upstreams()
    bases: dict[str, str] = {}
    for row in providers.PROVIDERS:
        base = named.get(row.name) or environ.get(row.base_env) or row.default_base
        if base:
            bases[row.name] = base
    for name, url in named.items():
        bases.setdefault(name, url)
    return bases


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
    env = {row.base_env: url + row.agent_path for row in rows}
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
            if not any(caller.get(name) for name in row.credential_env):
                env.update(dict.fromkeys(row.placeholder_env, ev.PLACEHOLDER_KEY))
    for row in rows if mode == "strict" else ():
        if row.region_env and not any(caller.get(name) for name in row.region_env):
            env[row.region_env[0]] = PLACEHOLDER_REGION
    return env


def agent_upstreams(named: Iterable[str], session: Session) -> list[str]:
    """The upstreams the agent is given a variable for: those named, and every named
    upstream the cassette's recordings went to (so a replay needs no ``--upstream``)."""
    recorded = (named_prefix(r.endpoint) for r in session.recordings.requests())
    names = (prefix[len(NAMED_PREFIX) :] for prefix in recorded if prefix)
    return list(dict.fromkeys([*named, *names]))


class GatewayServer:
    """The gateway bound to its ports on the running event loop."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.caller_env: Mapping[str, str] = (
            os.environ if config.environ is None else config.environ
        )
        # secrets of this process and of the caller's environment, when one is handed in
        secrets_from = None if config.environ is None else {**os.environ, **config.environ}
        session = Session(
            mode=config.mode,
            cassette=config.cassette,
            traces=config.traces,
            command=config.command,
            report=config.report,
            redactor=Redactor.from_environment(secrets_from),
            rules=config.rules,
        )
        self.upstream = config.upstream or HttpUpstream(
            upstream_bases(config, self.caller_env), environ=self.caller_env
        )
        self.gateway = Gateway(
            session,
            self.upstream,
            keys=self.caller_env,
            timing=config.timing,
            bind_host=config.host,
            limits=config.limits,
        )
        self._runner: web.AppRunner | None = None
        self._grpc: GrpcReceiver | None = None
        self.port = 0
        self.grpc_port: int | None = None
        self.env: dict[str, str] = {}

    @property
    def session(self) -> Session:
        return self.gateway.session

    def _grpc_port(self) -> int | None:
        return self.grpc_port

    def use_session(self, session: Session) -> Session:
        """Point the running gateway (both receivers included) at another session, between
        requests; returns the previous one. Call on the gateway's loop."""
        previous = self.gateway.session
        self.gateway.session = session
        return previous

    @property
    def url(self) -> str:
        host = self.config.host if ":" not in self.config.host else f"[{self.config.host}]"
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        self._runner = web.AppRunner(
            self.gateway.app(),
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        # gRPC exporters that were not told to use the gRPC port are served on this one too
        site = SniffingSite(self._runner, self.config.host, self.config.port, self._grpc_port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            where = f"{self.config.host}:{self.config.port}"
            raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
        server: Any = site._server
        self.port = server.sockets[0].getsockname()[1]
        if self.config.grpc_port is not None:
            self._grpc = GrpcReceiver(lambda: self.gateway.session.store)
            try:
                self.grpc_port = await self._grpc.start(self.config.host, self.config.grpc_port)
            except ConfigError:
                await self._runner.cleanup()
                raise
        self.env = agent_environment(
            self.url,
            self.grpc_port,
            self.config.mode,
            self.caller_env,
            named=agent_upstreams(self.config.named_upstreams(), self.session),
        )

    async def stop(self) -> Summary:
        if self._grpc is not None:
            await self._grpc.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.upstream.aclose()
        return self.session.finish()


class GatewayThread:
    """A :class:`GatewayServer` on an event loop thread of its own."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="otel-replay-gateway", daemon=True)
        self.server: GatewayServer | None = None
        self.summary: Summary | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        # named threads: the egress guard lets the gateway's own name lookups through
        self._loop.set_default_executor(
            ThreadPoolExecutor(thread_name_prefix="otel-replay-gateway-executor")
        )
        self._loop.run_forever()

    def _call(self, coro: Any, timeout: float | None = 60) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout)

    def start(self) -> GatewayThread:
        self._thread.start()

        async def make() -> GatewayServer:
            server = GatewayServer(self.config)
            try:
                await server.start()
            except BaseException:
                await server.upstream.aclose()
                server.session.discard()
                raise
            return server

        try:
            self.server = self._call(make())
        except BaseException:
            self._shutdown()
            raise
        return self

    @property
    def env(self) -> dict[str, str]:
        assert self.server is not None
        return self.server.env

    @property
    def session(self) -> Session:
        assert self.server is not None
        return self.server.session

    def use_session(self, session: Session) -> Session:
        """Point the running gateway at another session; returns the previous one."""
        assert self.server is not None
        server = self.server

        async def swap() -> Session:
            return server.use_session(session)

        previous: Session = self._call(swap())
        return previous

    def stop(self) -> Summary:
        if self.summary is not None:
            return self.summary
        try:
            if self.server is not None:
                self.summary = self._call(self.server.stop(), timeout=120)
            else:
                self.summary = Summary(mode=self.config.mode)
        finally:
            self._shutdown()
        return self.summary

    def _shutdown(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> GatewayThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
