"""``otel-replay mcp-stdio NAME -- CMD…``: what an agent's MCP configuration launches in
place of a stdio MCP server.

Under a gateway (``OTEL_REPLAY_URL`` set by ``record`` / ``replay`` / ``serve``): in a run
that records (``OTEL_REPLAY_MODE`` ``record``) it starts CMD and relays the agent's
messages to it line by line and its answers back, and hands each request with its answer
to the gateway (``/mcp/NAME/recorded``), which records the tool call; in a replay it never
starts CMD: each message goes to the gateway's ``/mcp/NAME`` as Streamable HTTP, and the
answers (the JSON-RPC response, and the notifications an SSE answer carried) go back to
the agent on stdout. Outside a gateway it simply runs CMD.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from typing import IO, Any
from urllib.parse import urlsplit

from otel_replay.core import envvars as ev
from otel_replay.core.errors import ConfigError
from otel_replay.providers import mcp as wire
from otel_replay.streams import sse

__all__ = ["mcp_stdio"]

_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


class _Gateway:
    """One keep-alive connection to the gateway at ``url``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ConfigError(f"{ev.OTEL_REPLAY_URL}={url!r} is not the gateway's http:// URL")
        self._host, self._port = parts.hostname, parts.port or 80
        self._connection: http.client.HTTPConnection | None = None
        self.session_id: str | None = None

    def post(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        headers = dict(_HEADERS)
        if self.session_id:
            headers[wire.SESSION_HEADER] = self.session_id
        for attempt in (0, 1):  # a keep-alive connection the gateway closed: once more
            if self._connection is None:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=300)
            try:
                self._connection.request("POST", path, body, headers)
                answer = self._connection.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException):
                self._connection.close()
                self._connection = None
                if attempt:
                    raise
                continue
            issued = answer.getheader(wire.SESSION_HEADER)
            if issued:
                self.session_id = issued
            return answer.status, answer.getheader("content-type") or "", data
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def _write(out: IO[bytes], message: Any) -> None:
    out.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
    out.flush()


def _replay(name: str, gateway: _Gateway, source: IO[bytes], out: IO[bytes]) -> int:
    """Answer the agent's messages from the gateway, never starting the server."""
    path = wire.server_path(name)
    for line in source:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError as exc:
            _write(out, wire.error_message(None, f"otel-replay: not JSON: {exc}", -32700))
            continue
        try:
            status, kind, data = gateway.post(path, line.strip())
        except (OSError, http.client.HTTPException) as exc:
            if wire.kind(message) == "request":
                reason = f"otel-replay: the gateway cannot be reached: {exc}"
                _write(out, wire.error_message(message.get("id"), reason))
            continue
        if kind.startswith("text/event-stream"):
            for event in sse.parse_all(data):
                out.write(event.data.encode() + b"\n")
            out.flush()
        elif data.strip() and status != 202:
            out.write(data.strip() + b"\n")
            out.flush()
    return 0


class _Relay:
    """Record: the agent's lines to CMD, CMD's lines back; each answered request to the
    gateway."""

    def __init__(self, name: str, gateway: _Gateway, child: subprocess.Popen[bytes]) -> None:
        self.path = wire.server_path(name) + "/recorded"
        self.gateway = gateway
        self.child = child
        self.pending: dict[str, tuple[Any, int]] = {}
        self.lock = threading.Lock()

    def to_server(self, source: IO[bytes]) -> None:
        stdin = self.child.stdin
        assert stdin is not None
        try:
            for line in source:
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if wire.kind(message) == "request":
                    with self.lock:
                        self.pending[json.dumps(message["id"])] = (message, time.time_ns())
                stdin.write(line)
                stdin.flush()
        except (BrokenPipeError, ValueError):  # the server ended first
            pass
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def to_agent(self, out: IO[bytes]) -> None:
        stdout = self.child.stdout
        assert stdout is not None
        for line in stdout:
            out.write(line)
            out.flush()
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if wire.kind(message) != "response":
                continue
            with self.lock:
                asked = self.pending.pop(json.dumps(message.get("id")), None)
            if asked is None:
                continue
            doc = {"request": asked[0], "response": message, "start_ns": asked[1]}
            try:
                self.gateway.post(self.path, json.dumps(doc).encode())
            except (OSError, http.client.HTTPException) as exc:
                print(f"otel-replay: a tool call was not recorded: {exc}", file=sys.stderr)


def _record(name: str, gateway: _Gateway, command: list[str]) -> int:
    try:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        print(f"otel-replay: cannot run {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    relay = _Relay(name, gateway, child)
    feeding = threading.Thread(target=relay.to_server, args=(sys.stdin.buffer,), daemon=True)
    feeding.start()
    relay.to_agent(sys.stdout.buffer)
    return child.wait()


def mcp_stdio(name: str, command: list[str]) -> int:
    """The ``mcp-stdio`` command; its exit code."""
    url = os.environ.get(ev.OTEL_REPLAY_URL)
    mode = os.environ.get(ev.OTEL_REPLAY_MODE, "")
    if not url:  # not under a gateway: the server itself
        if not command:
            raise ConfigError("mcp-stdio: give the server command after --")
        return subprocess.call(command)
    gateway = _Gateway(url)
    try:
        if mode == "record":
            if not command:
                raise ConfigError("mcp-stdio: give the server command after --")
            return _record(name, gateway, command)
        return _replay(name, gateway, sys.stdin.buffer, sys.stdout.buffer)
    finally:
        gateway.close()
