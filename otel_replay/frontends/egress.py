"""The egress guard: connections from this process to model provider hosts fail.

A test that replays from a cassette must not reach a provider by another road — a client
built before the gateway's environment was set, a hard-coded base URL, a library that
ignores ``OPENAI_BASE_URL``. The guard patches the socket layer where the provider's host
name is still known, so it raises :class:`~otel_replay.core.errors.EgressBlocked` before any
name lookup or connection:

- ``socket.getaddrinfo`` and ``socket.create_connection`` (every client resolves names
  through them);
- ``socket.socket.connect`` / ``connect_ex`` with a host name address;
- ``socket.socket.send`` / ``sendall``: a request line to a proxy — ``CONNECT host:443`` or
  an absolute-form ``GET http://host/...`` — names the real target even though the
  connection itself goes to the proxy (``HTTP(S)_PROXY``). This covers httpx, aiohttp,
  requests and urllib alike, sync or async, since they all write plaintext to the proxy.

Loopback and every other host are untouched. The gateway's own threads (named
``otel-replay-gateway…``) are exempt, so record and auto modes can still forward.
"""

from __future__ import annotations

import fnmatch
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from otel_replay.core.errors import EgressBlocked
from otel_replay.providers import egress_hosts

__all__ = [
    "PROVIDER_HOSTS",
    "allow_egress",
    "block_egress",
    "egress_blocked",
    "is_blocked",
    "is_provider_host",
]

PROVIDER_HOSTS: tuple[str, ...] = egress_hosts()
"""Host patterns (``fnmatch``) of the known model provider APIs, as the provider table
declares them (the one list routing and the guard share)."""

EXEMPT_THREAD_PREFIX = "otel-replay-gateway"

_PROXY_METHODS = (b"CONNECT ", b"GET http", b"POST http", b"PUT http", b"HEAD http")

_lock = threading.Lock()
_saved: dict[str, Any] = {}
_patterns: tuple[str, ...] = PROVIDER_HOSTS
_listeners: list[Callable[[EgressBlocked], None]] = []


def _host_text(host: object) -> str | None:
    if isinstance(host, bytes | bytearray):
        host = bytes(host).decode("ascii", "replace")
    if not isinstance(host, str):
        return None
    return host.strip().strip("[]").rstrip(".").lower()


def is_provider_host(host: object, patterns: Iterable[str] = PROVIDER_HOSTS) -> bool:
    """Whether ``host`` (a name, not an address) is a known model provider API host."""
    name = _host_text(host)
    if not name:
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def is_blocked() -> bool:
    """Whether the guard is installed."""
    return bool(_saved)


def _exempt() -> bool:
    return threading.current_thread().name.startswith(EXEMPT_THREAD_PREFIX)


def _check(host: object) -> None:
    if _saved and is_provider_host(host, _patterns) and not _exempt():
        error = EgressBlocked(_host_text(host) or str(host))
        for listener in list(_listeners):
            listener(error)
        raise error


def _address_host(address: object) -> object:
    if isinstance(address, tuple) and address:
        return address[0]
    return None


def proxy_target(data: object) -> str | None:
    """The target host named by an HTTP request line sent to a proxy, if ``data`` starts
    with one: ``CONNECT host:port HTTP/1.1`` or ``METHOD http(s)://host[:port]/... HTTP/1.1``."""
    if not isinstance(data, bytes | bytearray | memoryview):
        return None
    head = bytes(data[:512])
    if not head.startswith(_PROXY_METHODS):
        return None
    line = head.split(b"\r\n", 1)[0].split(b" ")
    if len(line) < 2:
        return None
    target = line[1].decode("ascii", "replace")
    if "://" in target:
        target = target.split("://", 1)[1].split("/", 1)[0]
    target = target.rsplit("@", 1)[-1]
    if target.startswith("["):
        return target[1:].split("]", 1)[0]
    return target.rsplit(":", 1)[0] if ":" in target else target


# -- the patched functions ------------------------------------------------------------------


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    _check(host)
    return _saved["getaddrinfo"](host, *args, **kwargs)


def _create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
    _check(_address_host(address))
    return _saved["create_connection"](address, *args, **kwargs)


def _connect(self: socket.socket, address: Any) -> Any:
    _check(_address_host(address))
    return _saved["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> Any:
    _check(_address_host(address))
    return _saved["connect_ex"](self, address)


def _send(self: socket.socket, data: Any, *args: Any) -> Any:
    _check(proxy_target(data))
    return _saved["send"](self, data, *args)


def _sendall(self: socket.socket, data: Any, *args: Any) -> Any:
    _check(proxy_target(data))
    return _saved["sendall"](self, data, *args)


_MODULE_PATCHES: dict[str, Callable[..., Any]] = {
    "getaddrinfo": _getaddrinfo,
    "create_connection": _create_connection,
}
_METHOD_PATCHES: dict[str, Callable[..., Any]] = {
    "connect": _connect,
    "connect_ex": _connect_ex,
    "send": _send,
    "sendall": _sendall,
}


def _httpx_send(self: Any, request: Any) -> Any:
    _check(request.url.host)
    return _saved["httpx_send"](self, request)


async def _httpx_send_async(self: Any, request: Any) -> Any:
    _check(request.url.host)
    return await _saved["httpx_send_async"](self, request)


def _patch_httpx() -> None:
    """httpcore treats a failed write of the request head as the server hanging up, which
    would hide the guard's error behind a proxy; so httpx's transports check the URL."""
    try:
        import httpx
    except ImportError:
        return
    _saved["httpx_send"] = httpx.HTTPTransport.handle_request
    _saved["httpx_send_async"] = httpx.AsyncHTTPTransport.handle_async_request
    httpx.HTTPTransport.handle_request = _httpx_send  # type: ignore[method-assign]
    httpx.AsyncHTTPTransport.handle_async_request = _httpx_send_async  # type: ignore[method-assign]


def _unpatch_httpx() -> None:
    if "httpx_send" not in _saved:
        return
    import httpx

    httpx.HTTPTransport.handle_request = _saved.pop("httpx_send")  # type: ignore[method-assign]
    httpx.AsyncHTTPTransport.handle_async_request = _saved.pop(  # type: ignore[method-assign]
        "httpx_send_async"
    )


def block_egress(
    hosts: Iterable[str] | None = None,
    *,
    on_block: Callable[[EgressBlocked], None] | None = None,
) -> None:
    """Install the guard (idempotent). ``hosts`` replaces the provider host patterns;
    ``on_block`` is called with each error before it is raised (the pytest plugin uses it
    to fail a test even when the agent swallowed the error)."""
    global _patterns
    with _lock:
        if hosts is not None:
            _patterns = tuple(h.lower() for h in hosts)
        if on_block is not None and on_block not in _listeners:
            _listeners.append(on_block)
        if _saved:
            return
        for name, patch in _MODULE_PATCHES.items():
            _saved[name] = getattr(socket, name)
            setattr(socket, name, patch)
        for name, patch in _METHOD_PATCHES.items():
            _saved[name] = getattr(socket.socket, name)
            setattr(socket.socket, name, patch)
        _patch_httpx()


def allow_egress() -> None:
    """Remove the guard and restore the original socket functions (idempotent)."""
    global _patterns
    with _lock:
        for name in _MODULE_PATCHES:
            if name in _saved:
                setattr(socket, name, _saved.pop(name))
        for name in _METHOD_PATCHES:
            if name in _saved:
                setattr(socket.socket, name, _saved.pop(name))
        _unpatch_httpx()
        _patterns = PROVIDER_HOSTS
        _listeners.clear()


@contextmanager
def egress_blocked(
    hosts: Iterable[str] | None = None,
    *,
    on_block: Callable[[EgressBlocked], None] | None = None,
) -> Iterator[None]:
    """Block provider egress for the ``with`` block; restores the previous state after."""
    was_blocked = is_blocked()
    block_egress(hosts, on_block=on_block)
    try:
        yield
    finally:
        if not was_blocked:
            allow_egress()
        elif on_block is not None and on_block in _listeners:
            _listeners.remove(on_block)
