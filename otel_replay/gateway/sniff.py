"""OTLP/gRPC on the gateway's HTTP port too.

Exporters read the same variables whatever protocol they speak: an OTLP/gRPC exporter
built in code (without ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``) connects to the endpoint the
HTTP variables name. :class:`SniffingSite` is the aiohttp TCP site with two differences: a
connection that opens with the HTTP/2 client preface (gRPC) is piped to the gRPC
receiver's port, and one that opens with a TLS handshake (a client that dials only
``wss://``) is served TLS with the gateway's certificate (``local_tls.py``); every other
connection is handed, with the bytes read so far, to aiohttp's own protocol, which then
owns it as if it had accepted it (the TLS one once its handshake is done).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Coroutine
from typing import Any, cast

from aiohttp import web

from otel_replay.gateway.listen import BACKLOG, loopback

__all__ = ["PREFACE", "OnDemand", "Port", "SniffingSite", "serve_piped"]

log = logging.getLogger("otel_replay")

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What every HTTP/2 client (gRPC) sends first."""

TLS_RECORD = 0x16
"""The first byte of a TLS client's first record (its handshake)."""

_TASKS: set[asyncio.Task[None]] = set()


def _spawn(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` in the background, keeping a reference until it is done."""
    task = asyncio.get_running_loop().create_task(coro)
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


class _Back(asyncio.Protocol):
    """The gRPC receiver's side of a pipe: what it answers goes to the client."""

    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        self.client.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


Port = int | asyncio.Future[int]
"""The gRPC receiver's port, or the future of it while the receiver starts."""


class _Pipe(asyncio.Protocol):
    """The client's side: bytes go to the gRPC receiver once connected (kept until then,
    and until the receiver has started)."""

    def __init__(self, client: asyncio.Transport, port: Port, host: str) -> None:
        self.client = client
        self.pending: list[bytes] = []
        self.upstream: asyncio.Transport | None = None
        self.closed = False
        _spawn(self._connect(host, port))

    async def _connect(self, host: str, port: Port) -> None:
        loop = asyncio.get_running_loop()
        try:
            target = port if isinstance(port, int) else await asyncio.shield(port)
            transport, _ = await loop.create_connection(lambda: _Back(self.client), host, target)
        except Exception as exc:  # refused, or the receiver did not start
            log.warning("otel-replay: OTLP/gRPC on the HTTP port: %s", exc)
            self.client.close()
            return
        if self.closed:
            transport.close()
            return
        self.upstream = transport
        for chunk in self.pending:
            transport.write(chunk)
        self.pending.clear()

    def data_received(self, data: bytes) -> None:
        if self.upstream is not None:
            self.upstream.write(data)
        else:
            self.pending.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.upstream is not None:
            self.upstream.close()


class _Piped(asyncio.Protocol):
    """A connection to a port that is all gRPC: piped to the receiver from the start."""

    def __init__(self, port: Callable[[], Port], host: str) -> None:
        self.port = port
        self.host = host
        self.pipe: _Pipe | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)
        self.pipe = _Pipe(transport, self.port(), self.host)

    def data_received(self, data: bytes) -> None:
        assert self.pipe is not None
        self.pipe.data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.pipe is not None:
            self.pipe.connection_lost(exc)


async def serve_piped(sock: socket.socket, port: Callable[[], Port], host: str) -> asyncio.Server:
    """Serve the listening ``sock`` by piping each connection to ``host:port()``."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _Piped(port, host), sock=sock, backlog=BACKLOG)


class OnDemand:
    """The gRPC receiver's port, the receiver started (by ``start``) at the first gRPC
    connection: gRPC and protobuf take tens of milliseconds to load, and most agents
    export over HTTP or not at all. The connection waits for the receiver meanwhile."""

    def __init__(self, start: Callable[[], Coroutine[Any, Any, int]]) -> None:
        self._start = start
        self._port: asyncio.Future[int] | None = None
        self._starting: asyncio.Task[None] | None = None
        self.failure: str | None = None

    def port(self) -> Port:
        if self._port is None:
            self._port = asyncio.get_running_loop().create_future()
            self._starting = asyncio.get_running_loop().create_task(self._run(self._port))
        if self._port.done() and self._port.exception() is None:
            return self._port.result()
        return self._port

    async def _run(self, port: asyncio.Future[int]) -> None:
        try:
            port.set_result(await self._start())
        except Exception as exc:
            self.failure = f"the OTLP/gRPC receiver did not start ({exc}): gRPC exports refused"
            log.error("otel-replay: %s", self.failure)
            port.set_exception(ConnectionRefusedError(self.failure))

    async def settled(self) -> None:
        """Once a start under way has ended (the receiver can then be stopped)."""
        if self._starting is not None:
            await asyncio.wait([self._starting])


class _Sniffer(asyncio.Protocol):
    """Reads until the first bytes tell HTTP/2 from HTTP/1, then hands the connection on."""

    def __init__(
        self, http: Callable[[], asyncio.Protocol], grpc: Callable[[], Port | None], host: str
    ) -> None:
        self.http = http
        self.grpc = grpc
        self.host = host
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) < len(PREFACE) and PREFACE.startswith(self.buffer):
            return  # too short to tell yet
        transport, seen = self.transport, self.buffer
        assert transport is not None
        self.buffer = b""
        port = self.grpc() if seen.startswith(PREFACE) else None
        protocol: asyncio.Protocol
        if port is not None:
            protocol = _Pipe(transport, port, self.host)
            transport.set_protocol(protocol)
        elif seen[0] == TLS_RECORD:
            transport.pause_reading()  # until the handshake's protocol reads it
            _spawn(_serve_tls(transport, seen, self.http, self.host))
            return
        else:
            protocol = self.http()
            transport.set_protocol(protocol)
            protocol.connection_made(transport)
        protocol.data_received(seen)

    def eof_received(self) -> bool | None:
        return None  # closes the transport: it ended before saying anything


async def _serve_tls(
    transport: asyncio.Transport, seen: bytes, http: Callable[[], asyncio.Protocol], host: str
) -> None:
    """Serve TLS on ``transport`` (``seen``: what it has read, the handshake's start), then
    aiohttp's protocol on it; the certificate is made at the first such connection."""
    from otel_replay.gateway.local_tls import authority

    loop = asyncio.get_running_loop()
    try:
        context = await loop.run_in_executor(None, authority().server_context, host)
    except Exception as exc:  # cryptography missing or broken: say why, once per connection
        log.warning("otel-replay: cannot serve TLS on the gateway's port: %s", exc)
        transport.close()
        return
    waiting = _Handshaking()
    handshake = loop.create_task(loop.start_tls(transport, waiting, context, server_side=True))
    await asyncio.sleep(0)  # start_tls has put its protocol on the transport: give it `seen`
    tls: Any = transport.get_protocol()
    if isinstance(tls, _Sniffer):  # start_tls failed at once (the client left)
        pass
    elif hasattr(tls, "get_buffer"):  # asyncio's and uvloop's are buffered protocols
        rest = memoryview(seen)
        while rest:
            buffer = tls.get_buffer(len(rest))
            size = min(len(buffer), len(rest))
            buffer[:size] = rest[:size]
            tls.buffer_updated(size)
            rest = rest[size:]
    else:
        tls.data_received(seen)
    try:
        secure = await handshake
    except Exception as exc:  # a client that does not trust the certificate, or left
        if authority().handed_out:
            log.debug("otel-replay: a TLS handshake on the gateway's port failed: %s", exc)
        else:
            _untrusted(exc)
        transport.close()
        return
    if secure is None:  # closed meanwhile
        transport.close()
        return
    waiting.hand_to(http(), secure)


class _Handshaking(asyncio.Protocol):
    """The TLS connection's protocol until aiohttp's takes it: keeps what comes meanwhile."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.eof = False
        self.lost: tuple[Exception | None] | None = None

    def data_received(self, data: bytes) -> None:
        self.received.append(data)

    def eof_received(self) -> bool | None:
        self.eof = True
        return True  # aiohttp's protocol decides, once it has the connection

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = (exc,)

    def hand_to(self, protocol: asyncio.Protocol, transport: asyncio.Transport) -> None:
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        for data in self.received:
            protocol.data_received(data)
        if self.eof and not protocol.eof_received():
            transport.close()
        if self.lost is not None:
            protocol.connection_lost(self.lost[0])


class SniffingSite(web.TCPSite):
    """``web.TCPSite`` whose connections may also be OTLP/gRPC (sent on to the port
    ``grpc_port()`` returns, when it returns one); it serves on ``sock`` when given one
    bound already."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        grpc_port: Callable[[], Port | None],
        sock: socket.socket | None = None,
    ) -> None:
        super().__init__(runner, host, port)
        self._grpc_port = grpc_port
        self._target = loopback(host)
        self._sock = sock

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        http: Callable[[], asyncio.Protocol] = server

        def sniffer() -> _Sniffer:
            return _Sniffer(http, self._grpc_port, self._target)

        if self._sock is not None:
            self._server = await loop.create_server(sniffer, sock=self._sock, backlog=self._backlog)
        else:
            self._server = await loop.create_server(
                sniffer, self._host, self._port, backlog=self._backlog
            )
        self._bound_port = self._server.sockets[0].getsockname()[1]


_TOLD: list[bool] = []


def _untrusted(exc: BaseException) -> None:
    """Say once why a client's TLS handshake failed when no agent was told to trust the
    gateway's certificate."""
    if not _TOLD:
        _TOLD.append(True)
        log.warning(
            "otel-replay: a client dialled TLS (wss:// or https://) on the gateway's port and "
            "did not trust its certificate (%s): start the run with --tls or "
            "OTEL_REPLAY_TLS=1, which give the agent NODE_EXTRA_CA_CERTS and SSL_CERT_FILE",
            exc,
        )
