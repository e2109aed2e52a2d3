"""In process, without a socket: :class:`ReplayTransport` and :class:`AsyncReplayTransport`,
HTTP transports for ``httpx2`` (the current ``openai`` and ``anthropic`` SDKs) and ``httpx``
(earlier SDKs, other clients) that answer from a cassette in the caller's own process.

::

    with ReplayTransport("cassettes/triage.json", mode="strict") as t:
        client = openai.OpenAI(api_key="sk-test", http_client=httpx2.Client(transport=t))
        run_agent(client)
    t.summary

Each request is handed to the gateway's engine through its socketless door
(``gateway/inprocess.py``): the provider told by host and path, then the same decision,
matching, rules, redaction, recording, misses and summary as the gateway's. A live call
(``record``; ``auto`` with the caller's key) goes through a real transport of the request's
own library; strict mode opens none. Neither library is imported until a request comes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Self

from otel_replay.core.errors import ConfigError
from otel_replay.frontends import transport_io as io
from otel_replay.session.session import MODES, Session, Summary, default_mode

if TYPE_CHECKING:
    from otel_replay.gateway.inprocess import Answer, Door, Live

__all__ = ["AsyncReplayTransport", "ReplayTransport"]

PathLike = str | os.PathLike[str]


class _Run:
    """The run a transport answers in: a cassette's own (opened at the first request or
    the block's start, finished as the block ends), or a block's, borrowed."""

    def __init__(
        self,
        cassette: PathLike | None,
        *,
        mode: str | None,
        traces: PathLike | None,
        report: PathLike | None,
        timing: str,
        rules: PathLike | None,
        upstreams: Mapping[str, str],
        session: Session | None,
        gateway: str = "",
    ) -> None:
        mode = mode or (session.mode if session is not None else default_mode())
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if timing not in ("fast", "recorded"):
            raise ConfigError(f"unknown timing {timing!r}; use fast or recorded")
        if cassette is None and session is None:
            raise ConfigError("a replay transport needs a cassette")
        self.mode = mode
        self.cassette = None if cassette is None else Path(cassette)
        self.traces = traces
        self.report = report
        self.timing = timing
        self.rules = rules
        self.upstreams = {name: url for name, url in upstreams.items() if url}
        self.session = session
        self.gateway = gateway  # a block's gateway URL: requests to it are the block's too
        self.borrowed = session is not None
        self.summary: Summary | None = None
        self._door: Door | None = None

    def door(self) -> Door:
        door = self._door
        if door is None:
            door = self._door = self._open()
        return door

    def _open(self) -> Door:
        if self.summary is not None:
            raise ConfigError("this replay transport's run has ended; make a new one")
        from otel_replay.gateway.engine import Engine
        from otel_replay.gateway.inprocess import Door

        if self.session is None:
            from otel_replay.frontends.rulefiles import rule_sources
            from otel_replay.gateway.environment import GatewayConfig
            from otel_replay.gateway.server import open_session

            assert self.cassette is not None
            config = GatewayConfig(
                mode=self.mode,
                cassette=self.cassette,
                traces=None if self.traces is None else Path(self.traces),
                report=None if self.report is None else Path(self.report),
                upstreams=self.upstreams,
                environ=dict(os.environ),
                rules=rule_sources(self.cassette, None if self.rules is None else Path(self.rules)),
            )
            self.session = open_session(config)
        engine = Engine(self.session)
        return Door(engine, timing=self.timing, upstreams=self.upstreams, gateway=self.gateway)

    def finish(self) -> Summary | None:
        """End the run (its own only): the cassette written as the mode says, the summary
        made; the first strict miss raised as ``ReplayMiss``."""
        if self.borrowed or self.summary is not None:
            return self.summary
        from otel_replay.frontends.outcome import raise_for_misses

        self.door()  # a block that sent nothing still ends as a run: its summary
        assert self.session is not None
        self.summary = self.session.finish()
        raise_for_misses(self.summary)
        return self.summary

    def answer(self, request: Any, body: bytes) -> Answer | Live:
        from otel_replay.gateway.inprocess import InRequest

        url = request.url
        port = f":{url.port}" if url.port is not None else ""
        origin = f"{url.scheme}://{url.host}{port}"
        target = url.raw_path.decode("ascii")
        incoming = InRequest.of(request.method, target, request.headers.multi_items())
        return self.door().handle(incoming, origin, url.host, body)


class _Transport:
    """What both transports share: the run, entered and left as a block."""

    def __init__(
        self,
        cassette: PathLike | None = None,
        *,
        mode: str | None = None,
        traces: PathLike | None = None,
        report: PathLike | None = None,
        timing: str = "fast",
        rules: PathLike | None = None,
        upstreams: Mapping[str, str] | None = None,
        forward: Any = None,
    ) -> None:
        run = _Run(
            cassette,
            mode=mode,
            traces=traces,
            report=report,
            timing=timing,
            rules=rules,
            upstreams=upstreams or {},
            session=None,
        )
        self._start(run, forward)

    def _start(self, run: _Run, forward: Any = None) -> None:
        self._run = run
        self._forward = forward  # a transport of the client's library to send live calls by
        self._forwarders: dict[str, Any] = {}
        self._depth = 0

    @classmethod
    def _joining(
        cls, session: Session, upstreams: Mapping[str, str], timing: str, gateway: str
    ) -> Self:
        """A transport answering in a block's run (``run.transport``): the block's
        session, whose end is the block's; requests to its gateway's URL are its too."""
        transport = cls.__new__(cls)
        run = _Run(
            None,
            mode=None,
            traces=None,
            report=None,
            timing=timing,
            rules=None,
            upstreams=upstreams,
            session=session,
            gateway=gateway,
        )
        transport._start(run)
        return transport

    @property
    def mode(self) -> str:
        """The run's mode: ``strict``, ``auto``, ``record`` or ``off``."""
        return self._run.mode

    @property
    def summary(self) -> Summary | None:
        """The run's summary, once it ended (its own run; a block's handle has a block's)."""
        return self._run.summary

    def _forwarder(self, m: ModuleType, kind: str) -> Any:
        if self._forward is not None:
            return self._forward
        found = self._forwarders.get(m.__name__)
        if found is None:
            found = self._forwarders[m.__name__] = getattr(m, kind)()
        return found

    def _enter(self) -> None:
        if self._depth == 0 and self._run.mode != "off":
            self._run.door()  # a bad cassette or rule file fails here, before the agent runs
        self._depth += 1

    def _leave(self) -> bool:
        """Whether the outermost block was left (the client's own ``with`` nests in it)."""
        self._depth = max(0, self._depth - 1)
        return self._depth == 0


class ReplayTransport(_Transport):
    """An ``httpx2`` / ``httpx`` transport answering from ``cassette`` in this process.

    ``mode``: ``strict`` (a miss is answered with the provider's error, and leaving the
    block raises :class:`~otel_replay.core.errors.ReplayMiss`), ``auto``, ``record`` or
    ``off``; default ``strict`` when ``CI`` is set, else ``auto``. ``upstreams``: base URLs
    by upstream name (``{"openai": URL}``) that live calls go to instead of the request's
    own host. ``traces``, ``report``, ``timing``, ``rules``: as for ``replay``.
    ``forward``: the transport live calls are sent through (default: the request's
    library's ``HTTPTransport``, made at the first live call). The run ends when the
    ``with`` block ends (or at ``close()`` outside one): the cassette written, ``summary``
    set."""

    def __enter__(self) -> ReplayTransport:
        self._enter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._leave():
            self._end(failed=exc[0] is not None)

    def close(self) -> None:
        if self._depth == 0:
            self._end(failed=False)

    def _end(self, *, failed: bool) -> None:
        for forwarder in self._forwarders.values():
            forwarder.close()
        self._forwarders.clear()
        if self._run.mode != "off":
            try:
                self._run.finish()
            except Exception:
                if not failed:
                    raise

    def handle_request(self, request: Any) -> Any:
        m = io.library(request)
        if self._run.mode == "off":
            return self._forwarder(m, "HTTPTransport").handle_request(request)
        answer = self._run.answer(request, request.read())
        from otel_replay.gateway.inprocess import Live

        if isinstance(answer, Live):
            return self._send(m, answer, request)
        if answer.fault in ("reset", "timeout"):
            raise io.fault(m, answer.fault, request)
        if answer.events is None:
            return io.response(m, answer)
        return io.response(m, answer, io.Played(m, answer, request))

    def _send(self, m: ModuleType, live: Live, request: Any) -> Any:
        with contextlib.ExitStack() as forwarding:  # the run's end waits for the recording
            forwarding.enter_context(live.call.session.forwarding())
            forwarder = self._forwarder(m, "HTTPTransport")
            try:
                upstream = forwarder.handle_request(io.outgoing(m, live, request))
            except m.TransportError as exc:
                live.failed(io.kind(m, exc))
                raise
            status, headers = upstream.status_code, dict(upstream.headers)
            if live.is_stream(headers.get("content-type", "")):
                recording = live.streaming(status, headers)
                stream = io.Relayed(m, upstream, recording, forwarding.pop_all())
                return io.response(m, io.passed(status, headers), stream)
            try:
                data = upstream.read()
            except m.TransportError as exc:
                live.failed(io.kind(m, exc))
                raise
            finally:
                upstream.close()
            return io.response(m, live.answered(status, headers, data))


class AsyncReplayTransport(_Transport):
    """:class:`ReplayTransport` for ``httpx2.AsyncClient`` / ``httpx.AsyncClient``; used
    in ``async with`` (or ``with``) as the block."""

    async def __aenter__(self) -> AsyncReplayTransport:
        self._enter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._leave():
            await self._end(failed=exc[0] is not None)

    def __enter__(self) -> AsyncReplayTransport:
        self._enter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._leave():
            self._end_now(failed=exc[0] is not None)

    async def aclose(self) -> None:
        if self._depth == 0:
            await self._end(failed=False)

    async def _end(self, *, failed: bool) -> None:
        for forwarder in self._forwarders.values():
            await forwarder.aclose()
        self._forwarders.clear()
        self._end_now(failed=failed)

    def _end_now(self, *, failed: bool) -> None:
        if self._run.mode != "off":
            try:
                self._run.finish()
            except Exception:
                if not failed:
                    raise

    async def handle_async_request(self, request: Any) -> Any:
        m = io.library(request)
        if self._run.mode == "off":
            forwarder = self._forwarder(m, "AsyncHTTPTransport")
            return await forwarder.handle_async_request(request)
        answer = self._run.answer(request, await request.aread())
        from otel_replay.gateway.inprocess import Live

        if isinstance(answer, Live):
            return await self._send(m, answer, request)
        if answer.fault in ("reset", "timeout"):
            raise io.fault(m, answer.fault, request)
        if answer.events is None:
            return io.response(m, answer)
        return io.response(m, answer, io.AsyncPlayed(m, answer, request))

    async def _send(self, m: ModuleType, live: Live, request: Any) -> Any:
        with contextlib.ExitStack() as forwarding:  # the run's end waits for the recording
            forwarding.enter_context(live.call.session.forwarding())
            forwarder = self._forwarder(m, "AsyncHTTPTransport")
            try:
                upstream = await forwarder.handle_async_request(io.outgoing(m, live, request))
            except m.TransportError as exc:
                live.failed(io.kind(m, exc))
                raise
            status, headers = upstream.status_code, dict(upstream.headers)
            if live.is_stream(headers.get("content-type", "")):
                recording = live.streaming(status, headers)
                stream = io.AsyncRelayed(m, upstream, recording, forwarding.pop_all())
                return io.response(m, io.passed(status, headers), stream)
            try:
                data = await upstream.aread()
            except m.TransportError as exc:
                live.failed(io.kind(m, exc))
                raise
            finally:
                await upstream.aclose()
            return io.response(m, live.answered(status, headers, data))
