"""The road from a tool call in the agent's process to the gateway of the run.

A run gives its agent ``OTEL_REPLAY_URL`` (the gateway) and ``OTEL_REPLAY_TOOLS``
(``replay`` unless ``--tools live``). A gateway running in this very process (the Python
API, the pytest plugin) is asked directly, by a function call; one in another process
(``otel-replay record / replay -- CMD``) over HTTP on loopback, one keep-alive connection
per thread, as ``mcp-stdio`` asks it.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any
from urllib.parse import urlsplit

import orjson

from otel_replay.core import envvars as ev
from otel_replay.core.errors import OtelReplayError

__all__ = ["Road", "ToolRoadError", "road"]


class ToolRoadError(OtelReplayError):
    """The gateway of the run could not be asked about a tool call."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(
            f"otel-replay: cannot ask the gateway at {url} about a tool call: {detail}"
        )


class Road:
    """Asks the gateway at ``url`` what to do with a tool call, and tells it how one ended."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._here = threading.local()

    def ask(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``gateway.own_tools.answer_call`` for ``doc``."""
        from otel_replay.gateway import own_tools

        session = own_tools.local(self.url)
        if session is not None:
            return own_tools.answer_call(session(), doc)
        answer = self._post(own_tools.CALL_PATH, doc)
        return answer if isinstance(answer, dict) else {}

    def tell(self, doc: dict[str, Any]) -> None:
        """``gateway.own_tools.record_call`` for ``doc``."""
        from otel_replay.gateway import own_tools

        session = own_tools.local(self.url)
        if session is not None:
            own_tools.record_call(session(), doc)
            return
        self._post(own_tools.RECORDED_PATH, doc)

    def _post(self, path: str, doc: dict[str, Any]) -> Any:
        try:
            body = orjson.dumps(doc)
        except TypeError:  # an integer past 64 bits: the standard library writes it
            body = json.dumps(doc, ensure_ascii=False).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        message = head.encode() + body
        for attempt in (0, 1):  # a keep-alive connection the gateway closed: once more
            line = getattr(self._here, "line", None)
            try:
                if line is None:
                    line = self._here.line = _Line(self._host, self._port)
                status, data = line.exchange(message)
            except (OSError, ValueError) as exc:  # refused, reset, or no HTTP answer
                if line is not None:
                    line.close()
                self._here.line = None
                if attempt:
                    raise ToolRoadError(self.url, str(exc)) from exc
                continue
            if status >= 300:
                raise ToolRoadError(self.url, f"HTTP {status}: {data[:200]!r}")
            return orjson.loads(data) if data else None
        raise AssertionError("unreachable")


class _Line:
    """One keep-alive HTTP/1.1 connection to the gateway: a request in one write, its
    answer read by its length (the gateway's answers here always state one). Leaner than
    ``http.client`` on the path every replayed tool call of a child takes."""

    def __init__(self, host: str, port: int) -> None:
        import socket

        self._sock = socket.create_connection((host, port), timeout=300)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    def exchange(self, message: bytes) -> tuple[int, bytes]:
        self._sock.sendall(message)
        while b"\r\n\r\n" not in self._buffer:
            self._read()
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise OSError(f"not an HTTP answer: {lines[0][:80]!r}")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip() or 0)
        while len(rest) < length:
            self._buffer = rest
            self._read()
            rest = self._buffer
        self._buffer = rest[length:]
        return int(parts[1]), rest[:length]

    def _read(self) -> None:
        block = self._sock.recv(65536)
        if not block:
            raise OSError("the gateway closed the connection")
        self._buffer += block

    def close(self) -> None:
        self._sock.close()


_ROADS: dict[str, Road] = {}
_LOCK = threading.Lock()


def road() -> Road | None:
    """The road to this run's gateway, or None outside a run, in mode ``off`` or with
    ``--tools live`` (the tool then simply runs)."""
    url = os.environ.get(ev.OTEL_REPLAY_URL)
    if not url or os.environ.get(ev.OTEL_REPLAY_TOOLS, "replay") == "live":
        return None
    if os.environ.get(ev.OTEL_REPLAY_MODE) == "off":  # telemetry only (a test suite's)
        return None
    found = _ROADS.get(url)
    if found is None:
        with _LOCK:
            found = _ROADS.setdefault(url, Road(url))
    return found
