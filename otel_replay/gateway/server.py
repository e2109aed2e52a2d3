"""Serving the gateway on the running event loop: :class:`GatewayServer` binds its ports
(or serves on ports bound before), starts the receivers, and at the stop finishes the
session. ``runner.GatewayThread`` runs one on a thread of its own. Light to import:
asyncio, aiohttp and gRPC are imported when a server starts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ConfigError
from otel_replay.gateway.environment import (
    GatewayConfig,
    ahead_upstreams,
    forget_placeholder_credentials,
    gateway_url,
    run_environment,
    upstream_bases,
)
from otel_replay.gateway.listen import Listening, loopback
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session, Summary

if TYPE_CHECKING:
    import asyncio

    from aiohttp import web

    from otel_replay.gateway.sniff import OnDemand, Port
    from otel_replay.otlp.grpc import GrpcReceiver

__all__ = ["GatewayServer", "open_session"]

log = logging.getLogger("otel_replay.gateway")

_DRAIN_TICKS = 1_000  # at most ~1 s for connections waiting at the end to be accepted


def open_session(config: GatewayConfig) -> Session:
    """The session a gateway with ``config`` runs: the cassette loaded and indexed."""
    # secrets of this process and of the caller's environment, when one is handed in
    secrets_from = None if config.environ is None else {**os.environ, **config.environ}
    fork = config.fork
    return Session(
        mode=config.mode,
        cassette=config.cassette,
        traces=config.traces,
        command=config.command,
        upstreams=config.named_upstreams(),
        report=config.report,
        redactor=Redactor.from_environment(secrets_from),
        rules=config.rules,
        fork=fork and fork.given_to(config.named_upstreams(), config.caller_environ()),
        tools=config.tools,
    )


class GatewayServer:
    """The gateway bound to its ports on the running event loop."""

    def __init__(self, config: GatewayConfig, session: Session | None = None) -> None:
        from otel_replay.gateway.app import Gateway
        from otel_replay.gateway.upstream import HttpUpstream

        self.config = config
        self.caller_env = config.caller_environ()
        self.upstream = config.upstream or HttpUpstream(
            upstream_bases(config, self.caller_env), environ=self.caller_env
        )
        self.gateway = Gateway(
            session or open_session(config),
            self.upstream,
            keys=self.caller_env,
            timing=config.timing,
            bind_host=config.host,
            limits=config.limits,
            mcp=config.mcp,
            control=config.control,
        )
        self._runner: web.AppRunner | None = None
        self._grpc: GrpcReceiver | None = None
        self._piped: asyncio.Server | None = None  # the gRPC port, when bound before
        self._grpc_target: int | None = None  # where gRPC on the HTTP port is piped
        self._on_demand: OnDemand | None = None  # the receiver, started when first needed
        self._warming: asyncio.Future[None] | None = None  # the span encoder, loading
        self._ahead: asyncio.Future[None] | None = None  # connections opened to the upstreams
        self._matching: asyncio.Future[None] | None = None  # the live rules, applied ahead
        self.port = 0
        self.grpc_port: int | None = None
        self.env: dict[str, str] = {}

    @property
    def session(self) -> Session:
        return self.gateway.session

    def _grpc_port(self) -> Port | None:
        return self._grpc_target if self._on_demand is None else self._on_demand.port()

    def use_session(self, session: Session) -> Session:
        """Point the running gateway (both receivers included) at another session, between
        requests, made ready for its first request; returns the previous one. Call on the
        gateway's loop.

        The session is made ready on the loop's next turn, before it reads any request
        (the loop runs what is scheduled before it polls the sockets again): whoever asked
        for the switch (a control request) is answered first, and its agent's first call
        then finds the session ready as a warm one."""
        import asyncio

        previous = self.gateway.session
        self.gateway.session = session
        if session is not previous:
            asyncio.get_running_loop().call_soon(self._made_ready, session)
        return previous

    def _made_ready(self, session: Session) -> None:
        if self.gateway.session is session:  # not switched again meanwhile
            self.gateway.prime(session)
            self._match_ahead(session)

    def _match_ahead(self, session: Session) -> None:
        """``session.warming`` on the loop, a step at a time between the calls served."""
        import asyncio

        if self._matching is not None:
            self._matching.cancel()
        self._matching = asyncio.ensure_future(_steps(session.warming()))

    @property
    def url(self) -> str:
        return gateway_url(self.config.host, self.port)

    async def _start_grpc(self, host: str, port: int) -> int:
        from otel_replay.core.lazy import import_meanwhile

        await import_meanwhile("otel_replay.otlp.grpc")  # gRPC, protobuf: HTTP serves meanwhile
        from otel_replay.otlp.grpc import GrpcReceiver

        self._grpc = GrpcReceiver(lambda: self.gateway.session.store)
        self._grpc_target = await self._grpc.start(host, port)
        return self._grpc_target

    async def start(self, listening: Listening | None = None) -> None:
        """Bind the configured ports and serve; or serve on ``listening``, ports bound
        before (connections made meanwhile wait in their backlogs until now)."""
        try:
            await self._start(listening)
        except BaseException:
            await self._close()
            raise

    async def _start(self, listening: Listening | None) -> None:
        import asyncio

        from aiohttp import web

        from otel_replay.gateway.sniff import OnDemand, SniffingSite, serve_piped

        if listening is not None and listening.grpc is not None:
            # the receiver starts at the first gRPC connection, on either port
            internal = loopback(self.config.host)
            self._on_demand = OnDemand(lambda: self._start_grpc(internal, 0))
            self._piped = await serve_piped(listening.grpc, self._on_demand.port, internal)
            self.grpc_port = listening.grpc_port
        self._runner = web.AppRunner(
            self.gateway.app(),
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        # gRPC exporters that were not told to use the gRPC port are served on this one too
        sock = None if listening is None else listening.http
        site = SniffingSite(
            self._runner, self.config.host, self.config.port, self._grpc_port, sock=sock
        )
        try:
            await site.start()
        except OSError as exc:
            where = f"{self.config.host}:{self.config.port}"
            raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
        server: Any = site._server
        self.port = server.sockets[0].getsockname()[1]
        # what the first call would load in its handler (the span encoder, protobuf) and
        # what deriving the cassette at the stop would (the build pipeline, the readers)
        later = [
            *(("otel_replay.spans.encode",) if self.session.writes_spans else ()),
            *(("otel_replay.pipeline.build",) if self.session.records else ()),
        ]
        if later:
            self._warming = asyncio.ensure_future(self._warm(later))
        connect_ahead = getattr(self.upstream, "connect_ahead", None)  # a test's may have none
        if self.session.records and connect_ahead is not None:
            names = ahead_upstreams(self.config, self.caller_env)
            self._ahead = asyncio.ensure_future(connect_ahead(names))
        self._match_ahead(self.session)
        if listening is None and self.config.grpc_port is not None:
            self.grpc_port = await self._start_grpc(self.config.host, self.config.grpc_port)
        self.env = run_environment(self.config, self.session, self.port, self.grpc_port)
        from otel_replay.gateway import own_tools

        own_tools.serving(self.url, lambda: self.gateway.session)  # hooks here ask directly

    async def primed(self) -> None:
        """Once what the start does ahead that a first request would wait for is done: the
        live rules' work on the recordings (``_match_ahead``), a first connection served.
        The index and the body reader are built with the gateway; what a recording run
        loads meanwhile (the span encoder) and its connections ahead are not waited for:
        its first call waits for the provider anyway."""
        import asyncio

        if self._matching is not None and not self._matching.done():
            await asyncio.wait([self._matching])
        await self._first_connection()

    async def _first_connection(self) -> None:
        """A connection made to the HTTP port and a connectivity probe (``GET /``, never
        recorded or counted) answered on it: the caller's first connection then takes a
        path run once already (the sniffing site, aiohttp's protocol, the host guard, an
        answer's body written).
        A failure is only logged: the caller's own connection will say what is wrong."""
        import asyncio

        host = loopback(self.config.host)
        try:
            reader, writer = await asyncio.open_connection(host, self.port)
            netloc = gateway_url(host, self.port).removeprefix("http://")
            writer.write(f"GET / HTTP/1.1\r\nHost: {netloc}\r\nConnection: close\r\n\r\n".encode())
            await asyncio.wait_for(reader.read(), 10)  # until the gateway closes it
            writer.close()
            await writer.wait_closed()
        except (TimeoutError, OSError):
            log.debug("the gateway's first connection to itself failed", exc_info=True)

    async def _warm(self, later: list[str]) -> None:
        """Load ``later`` and, when recording, build the automaton of the first call's
        check for pieces, on a worker thread while the gateway serves."""
        import asyncio

        from otel_replay.core.lazy import import_meanwhile

        await import_meanwhile(*later)
        if self.session.records:
            from otel_replay.spans import pieces

            await asyncio.get_running_loop().run_in_executor(None, pieces.warm)

    async def _close(self) -> None:
        import asyncio

        if self.port:
            from otel_replay.gateway import own_tools

            own_tools.unserving(self.url)
        if self._warming is not None:  # a failed load is logged with the task, not raised
            await asyncio.wait([self._warming])
        for aside in (self._ahead, self._matching):  # a host slow to answer, a long cassette
            if aside is not None and not aside.done():
                aside.cancel()
                await asyncio.wait([aside])
        if self._on_demand is not None:
            await self._on_demand.settled()
        if self._grpc is not None:
            await self._grpc.stop()
        if self._piped is not None:
            self._piped.close()
        if self._runner is not None:
            await self._runner.cleanup()
            forget_placeholder_credentials(self.url)

    async def stop(self, waiting: Listening | None = None) -> Summary:
        """Stop serving and finish the session. ``waiting``: the ports bound before; a
        connection still in their backlogs (the agent ended before the gateway served it)
        is accepted and served first."""
        import asyncio

        if waiting is not None and waiting.waiting():
            for _ in range(_DRAIN_TICKS):
                await asyncio.sleep(0.001)
                if not waiting.waiting():
                    break
            for _ in range(3):  # accepted: let their requests be read before shutting down
                await asyncio.sleep(0)
        await self._close()
        await self.upstream.aclose()
        summary = self.session.finish()
        if self._on_demand is not None and self._on_demand.failure is not None:
            summary.write_errors.append(self._on_demand.failure)
        return summary


async def _steps(steps: Iterator[None]) -> None:
    """Runs ``steps``, letting the loop serve between two. A fault is only logged: the
    call that meets the same recording raises it where it is answered."""
    import asyncio

    try:
        for _ in steps:
            await asyncio.sleep(0)
    except Exception:
        log.debug("applying the live rules ahead failed", exc_info=True)
