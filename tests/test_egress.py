"""The egress guard: provider hosts fail before any name lookup or connection, directly
and through an HTTP(S) proxy; loopback and other hosts are untouched.

No network: the real ``getaddrinfo`` and ``connect`` are replaced by recorders before the
guard is installed, so the tests see exactly what reached the resolver.
"""

from __future__ import annotations

import asyncio
import socket
import socketserver
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import aiohttp
import httpx
import pytest
import requests

from otel_replay.core.errors import EgressBlocked
from otel_replay.frontends.egress import (
    allow_egress,
    block_egress,
    egress_blocked,
    is_blocked,
    is_provider_host,
    proxy_target,
)

PROVIDERS = [
    "api.openai.com",
    "API.OpenAI.com.",
    "my-resource.openai.azure.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "us-central1-aiplatform.googleapis.com",
    "bedrock-runtime.us-east-1.amazonaws.com",
    "api.mistral.ai",
    "api.groq.com",
    "openrouter.ai",
    "api.together.xyz",
    "api.together.ai",
]
OTHERS = ["127.0.0.1", "localhost", "example.com", "openai.com.evil.test", "s3.amazonaws.com"]


@pytest.mark.parametrize("host", PROVIDERS)
def test_provider_hosts_are_known(host: str) -> None:
    assert is_provider_host(host)


@pytest.mark.parametrize("host", [*OTHERS, None, ""])
def test_other_hosts_are_not(host: str | None) -> None:
    assert not is_provider_host(host)


@pytest.mark.parametrize(
    ("line", "host"),
    [
        (b"CONNECT api.openai.com:443 HTTP/1.1\r\nHost: x\r\n\r\n", "api.openai.com"),
        (b"GET http://api.anthropic.com/v1/messages HTTP/1.1\r\n", "api.anthropic.com"),
        (b"POST http://user:pw@openrouter.ai:8080/x HTTP/1.1\r\n", "openrouter.ai"),
        (b"CONNECT [::1]:443 HTTP/1.1\r\n", "::1"),
        (b"GET /v1/models HTTP/1.1\r\nHost: api.openai.com\r\n", None),
        (b"\x16\x03\x01 tls bytes", None),
    ],
)
def test_proxy_target(line: bytes, host: str | None) -> None:
    assert proxy_target(line) == host
    assert proxy_target(memoryview(line)) == host


class Recorder:
    """Stands in for the resolver and the connect call, counting what reaches them."""

    def __init__(self) -> None:
        self.lookups: list[Any] = []
        self.real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        self.lookups.append(host)
        if host in ("127.0.0.1", "localhost"):
            return self.real_getaddrinfo(host, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "no network in tests")


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()
    monkeypatch.setattr(socket, "getaddrinfo", rec.getaddrinfo)
    with egress_blocked():
        yield rec
    assert not is_blocked()


@pytest.mark.parametrize("host", PROVIDERS)
def test_blocked_before_any_lookup(recorder: Recorder, host: str) -> None:
    with pytest.raises(EgressBlocked, match="model provider host"):
        socket.getaddrinfo(host, 443)
    with pytest.raises(EgressBlocked):
        socket.create_connection((host, 443), timeout=1)
    with socket.socket() as sock, pytest.raises(EgressBlocked):
        sock.connect((host, 443))
    with socket.socket() as sock, pytest.raises(EgressBlocked):
        sock.connect_ex((host, 443))
    assert recorder.lookups == []


def test_other_hosts_reach_the_resolver(recorder: Recorder) -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.com", 443)
    assert socket.getaddrinfo("127.0.0.1", 80)
    assert recorder.lookups == ["example.com", "127.0.0.1"]


def test_sdk_clients_fail_with_egress_blocked(recorder: Recorder) -> None:
    with httpx.Client() as client, pytest.raises(EgressBlocked):
        client.get("https://api.openai.com/v1/models")
    with pytest.raises(requests.ConnectionError, match="blocked"):
        requests.get("https://api.anthropic.com/v1/models", timeout=5)
    assert recorder.lookups == []


def test_the_gateway_threads_are_exempt(recorder: Recorder) -> None:
    errors: list[BaseException] = []

    def lookup() -> None:
        try:
            socket.getaddrinfo("api.openai.com", 443)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=lookup, name="otel-replay-gateway-executor_0")
    thread.start()
    thread.join()
    assert recorder.lookups == ["api.openai.com"]
    assert isinstance(errors[0], socket.gaierror)


def test_allow_egress_restores_the_socket_functions() -> None:
    originals = (socket.getaddrinfo, socket.create_connection, socket.socket.connect)
    seen: list[EgressBlocked] = []
    block_egress(on_block=seen.append)
    assert socket.getaddrinfo is not originals[0]
    with pytest.raises(EgressBlocked):
        socket.getaddrinfo("api.groq.com", 443)
    allow_egress()
    assert (socket.getaddrinfo, socket.create_connection, socket.socket.connect) == originals
    assert [e.host for e in seen] == ["api.groq.com"]


# -- through a proxy --------------------------------------------------------------------


class FakeProxy(socketserver.ThreadingTCPServer):
    """Records the first bytes of every connection; answers 403 and closes."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.received: list[bytes] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(5)
        try:
            data = self.request.recv(4096)
        except OSError:
            return
        if data:
            self.server.received.append(data)  # type: ignore[attr-defined]
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch, recorder: Recorder) -> Iterator[FakeProxy]:
    server = FakeProxy()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, server.url)
    monkeypatch.setenv("NO_PROXY", "")
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _caused_by_egress(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, EgressBlocked) or "blocked a connection" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def test_proxied_clients_are_blocked_before_the_connect_line(proxy: FakeProxy) -> None:
    target = "https://api.openai.com/v1/models"
    failures: list[BaseException] = []
    with httpx.Client() as client:
        try:
            client.get(target)
        except (httpx.HTTPError, EgressBlocked) as exc:
            failures.append(exc)
    try:
        requests.get(target, timeout=5)
    except requests.RequestException as exc:
        failures.append(exc)
    for url in (target, "http://api.openai.com/v1/models"):
        try:
            urllib.request.urlopen(url, timeout=5)
        except OSError as exc:
            failures.append(exc)

    async def aio() -> None:
        async with aiohttp.ClientSession(trust_env=True) as session:
            try:
                await session.get(target)
            except aiohttp.ClientError as exc:
                failures.append(exc)
        async with httpx.AsyncClient() as client:
            try:
                await client.get(target)
            except (httpx.HTTPError, EgressBlocked) as exc:
                failures.append(exc)

    asyncio.run(aio())
    assert len(failures) == 6
    assert all(_caused_by_egress(exc) for exc in failures), failures
    assert proxy.received == []


def test_other_hosts_go_through_the_proxy(proxy: FakeProxy) -> None:
    with httpx.Client() as client, pytest.raises(httpx.ProxyError):
        client.get("https://example.com/")
    assert proxy.received and proxy.received[0].startswith(b"CONNECT example.com:443 ")
