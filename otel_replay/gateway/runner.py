"""Starting and stopping the gateway.

:class:`GatewayServer` (``server.py``) runs the gateway on the current event loop;
:class:`GatewayThread` runs it on an event loop thread of its own, which is what the CLI,
the Python API and the pytest plugin use: the agent may then be synchronous code, async
code on another loop, or a subprocess. The settings and the agent's variables are in
``environment.py``; this module is light to import too: asyncio, aiohttp and gRPC are
imported when a gateway starts (for the CLI's early start, on the gateway's own thread).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from otel_replay.core.errors import ConfigError
from otel_replay.gateway.environment import GatewayConfig as GatewayConfig
from otel_replay.gateway.environment import agent_environment as agent_environment
from otel_replay.gateway.environment import agent_upstreams as agent_upstreams
from otel_replay.gateway.environment import run_environment
from otel_replay.gateway.environment import upstream_bases as upstream_bases
from otel_replay.gateway.listen import Listening
from otel_replay.gateway.server import GatewayServer as GatewayServer
from otel_replay.gateway.server import open_session as open_session
from otel_replay.session.session import Session, Summary

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "GatewayConfig",
    "GatewayServer",
    "GatewayThread",
    "agent_environment",
    "agent_upstreams",
    "open_session",
    "upstream_bases",
]

_TICK = 0.005
_GRACE_TICKS = 3  # an early start builds the server after 15 ms, or at a connection


class GatewayThread:
    """A :class:`GatewayServer` on an event loop thread of its own."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="otel-replay-gateway", daemon=True)
        self.server: GatewayServer | None = None
        self.summary: Summary | None = None
        self._early: _Early | None = None  # started early: see start(early=True)

    def _new_loop(self) -> asyncio.AbstractEventLoop:
        from concurrent.futures import ThreadPoolExecutor

        from otel_replay.gateway.loop import new_loop

        loop = new_loop()
        # named threads: the egress guard lets the gateway's own name lookups through
        loop.set_default_executor(
            ThreadPoolExecutor(thread_name_prefix="otel-replay-gateway-executor")
        )
        return loop

    def _run(self) -> None:
        import asyncio

        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def _call(self, coro: Any, timeout: float | None = 60) -> Any:
        import asyncio

        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self, *, early: bool = False, ready: bool = False) -> GatewayThread:
        """Start the gateway; return once it serves. ``early``: return once the session is
        ready and the ports are bound, with ``env`` set; the event loop and the server are
        made on the gateway's thread meanwhile, and a connection made before it serves
        waits in the port's backlog. ``ready`` (with ``early``): return once the server
        serves and has done what a first request would wait for (``serve``'s line)."""
        if early:
            self._early = early_start = _Early.open(self.config)
            early_start.hurry = ready
            self._thread = threading.Thread(
                target=early_start.run, args=(self,), name="otel-replay-gateway", daemon=True
            )
            self._thread.start()
            if ready:
                try:
                    early_start.serving(self)
                except BaseException:
                    self._shutdown()
                    raise
            return self
        self._loop = self._new_loop()
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
        if self._early is not None:
            return self._early.env
        assert self.server is not None
        return self.server.env

    @property
    def session(self) -> Session:
        if self._early is not None:
            return self._early.session
        assert self.server is not None
        return self.server.session

    def use_session(self, session: Session) -> Session:
        """Point the running gateway at another session; returns the previous one. From
        any thread, the gateway's own included (a control request answered on its loop)."""
        assert self.server is not None
        server = self.server
        if threading.current_thread() is self._thread:
            return server.use_session(session)

        async def swap() -> Session:
            return server.use_session(session)

        previous: Session = self._call(swap())
        return previous

    def stop(self) -> Summary:
        if self.summary is not None:
            return self.summary
        try:
            if self._early is not None:
                self.summary = self._early.stop(self)
            elif self.server is not None:
                self.summary = self._call(self.server.stop(), timeout=120)
            else:
                self.summary = Summary(mode=self.config.mode)
        finally:
            self._shutdown()
        return self.summary

    def _shutdown(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if self._early is not None and self._early.abandoned:
            return  # the thread may still be importing the server: not worth waiting for
        self._thread.join(10)
        if not self._thread.is_alive():
            loop.close()

    def __enter__(self) -> GatewayThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Early:
    """A gateway started early: its session and ports, and the server being built."""

    def __init__(self, config: GatewayConfig, session: Session, listening: Listening) -> None:
        self.session = session
        self.listening = listening
        self.env = run_environment(config, session, listening.port, listening.grpc_port)
        self.ready = threading.Event()  # set when the server serves, or failed to
        self.ended = threading.Event()  # set when the agent has ended
        self.failure: BaseException | None = None
        self._lock = threading.Lock()
        self._claimed = False  # the server is starting on the ports: it must be stopped
        self.abandoned = False  # the run ended before: the server will not be started
        self.hurry = False  # the caller waits for the server: no grace (``serving``)

    @classmethod
    def open(cls, config: GatewayConfig) -> _Early:
        session = open_session(config)  # a bad cassette or rule file: nothing is bound
        try:
            listening = Listening.bind(config.host, config.port, config.grpc_port)
        except BaseException:
            session.discard()
            raise
        return cls(config, session, listening)

    def run(self, thread: GatewayThread) -> None:
        """The gateway's thread: make the loop and the server (the agent starts meanwhile),
        serve on the bound ports unless the run ended before, then run the loop."""
        # a moment's grace first: an agent that ends at once having sent nothing (a
        # wrapper, `true`) ends the run without the imports competing with its end
        for _ in range(0 if self.hurry else _GRACE_TICKS):
            if self.ended.wait(_TICK) or self.listening.waiting():
                break
        with self._lock:
            if self.abandoned:
                return
        import asyncio

        loop = thread._new_loop()
        asyncio.set_event_loop(loop)
        try:
            server = GatewayServer(thread.config, self.session)
            with self._lock:
                self._claimed = not self.abandoned
            if not self._claimed:
                loop.close()  # the run ended while the server was being built
                return
            loop.run_until_complete(self._serve(server))
            thread.server = server
        except BaseException as exc:
            self.failure = exc
        finally:
            thread._loop = loop
            self.ready.set()
        if thread.server is not None:
            loop.run_forever()

    def serving(self, thread: GatewayThread) -> None:
        """Wait until the server serves, primed for a first request (``GatewayServer.
        primed``); raise why it could not start."""
        if not self.ready.wait(120):
            raise ConfigError("the gateway did not start within 120 s")
        if self.failure is not None or thread.server is None:
            self.session.discard()
            raise self.failure or ConfigError("the gateway did not start")
        thread._call(thread.server.primed(), timeout=120)

    async def _serve(self, server: GatewayServer) -> None:
        try:
            await server.start(self.listening)
        except BaseException:
            self.listening.close()  # the agent's connections fail rather than wait
            await server.upstream.aclose()
            raise

    def stop(self, thread: GatewayThread) -> Summary:
        # the agent ended before the server was built, and left no connection waiting:
        # nothing can reach this run any more, so it ends without a server
        self.ended.set()
        if not self.listening.waiting():
            with self._lock:
                self.abandoned = not self._claimed
            if self.abandoned:
                self.listening.close()
                return self.session.finish()
        if not self.ready.wait(120):
            raise ConfigError("the gateway did not start within 120 s")
        if self.failure is not None or thread.server is None:
            self.session.discard()
            raise self.failure or ConfigError("the gateway did not start")
        summary: Summary = thread._call(thread.server.stop(self.listening), timeout=120)
        return summary
