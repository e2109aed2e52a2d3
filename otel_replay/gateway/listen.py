"""The gateway's ports, bound before the gateway is built.

The CLI binds the ports, gives the agent their addresses and starts it, and only then
builds the aiohttp app (importing aiohttp is most of the gateway's start-up) while the
agent starts. A connection the agent makes meanwhile waits in the port's listen backlog
and is served once the app serves on that same socket. The gRPC port's connections are
piped to the gRPC receiver, which listens on a loopback port of its own.
"""

from __future__ import annotations

import select
import socket
from dataclasses import dataclass

from otel_replay.core.errors import ConfigError

__all__ = ["BACKLOG", "Listening", "loopback"]

BACKLOG = 128  # aiohttp's own default


def loopback(host: str) -> str:
    """The address the gateway reaches itself at when it listens on ``host``."""
    return {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: a free port), as asyncio binds one."""
    where = f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
    sock.setblocking(False)
    return sock


@dataclass(slots=True)
class Listening:
    """The HTTP port and, unless there is no gRPC receiver, the gRPC port."""

    http: socket.socket
    grpc: socket.socket | None

    @classmethod
    def bind(cls, host: str, port: int, grpc_port: int | None) -> Listening:
        http = _listen(host, port)
        try:
            grpc = None if grpc_port is None else _listen(host, grpc_port)
        except ConfigError:
            http.close()
            raise
        return cls(http, grpc)

    @property
    def port(self) -> int:
        port: int = self.http.getsockname()[1]
        return port

    @property
    def grpc_port(self) -> int | None:
        return None if self.grpc is None else int(self.grpc.getsockname()[1])

    def sockets(self) -> list[socket.socket]:
        return [s for s in (self.http, self.grpc) if s is not None and s.fileno() != -1]

    def waiting(self) -> bool:
        """Whether a connection waits in a backlog, not accepted yet."""
        sockets = self.sockets()
        return bool(sockets) and bool(select.select(sockets, [], [], 0)[0])

    def close(self) -> None:
        """Stop listening: a connection made after this is refused, not left waiting."""
        for sock in self.sockets():
            sock.close()
