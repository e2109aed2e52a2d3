"""The egress guard: connections from this process to model provider hosts fail.

A test that replays from a cassette must not reach a provider by another road — a client
built before the gateway's environment was set, a hard-coded base URL, a library that
ignores ``OPENAI_BASE_URL``. The guard patches the socket layer where the provider's host
name is still known, so it raises :class:`~otel_replay.core.errors.EgressBlocked` before any
name lookup or connection:

- ``socket.getaddrinfo`` and ``socket.create_connection`` (every client resolves names
  through them), ``socket.gethostbyname`` and ``gethostbyname_ex``;
- ``socket.socket.connect`` / ``connect_ex`` with a host name address;
- ``socket.socket.send`` / ``sendall``: a request line to a proxy — ``CONNECT host:443`` or
  an absolute-form ``GET http://host/...`` — names the real target even though the
  connection itself goes to the proxy (``HTTP(S)_PROXY``). This covers httpx, aiohttp,
  requests and urllib alike, sync or async, since they all write plaintext to the proxy.

A connection to a literal address fails too when a provider name resolved to that
address earlier in the process: the resolvers are watched (``watch_resolutions``, which
the guard turns on, and which a caller may turn on earlier), so a client that looked a
provider up before the guard, or an address the gateway's own threads resolved, gains
nothing by connecting by number.

Loopback and every other host are untouched. The gateway's own threads (named
``otel-replay-gateway…``) are exempt, so record and auto modes can still forward.
"""

from __future__ import annotations

import fnmatch
import ipaddress
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
    "resolved_from",
    "unwatch_resolutions",
    "watch_resolutions",
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
_resolved: dict[str, str] = {}  # address -> the provider host it was resolved from
_watched: dict[str, Any] = {}  # the resolvers as they were before the watch
_watch_by_guard = False


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


def resolved_from(address: object) -> str | None:
    """The provider host a literal address was resolved from in this process, if any."""
    name = _host_text(address)
    return _resolved.get(name.split("%", 1)[0]) if name else None


def _blocked_name(host: object) -> str | None:
    if is_provider_host(host, _patterns):
        return _host_text(host) or str(host)
    origin = resolved_from(host)
    return None if origin is None else f"{_host_text(host)} (resolved from {origin})"


def _check(host: object) -> None:
    if not _saved or _exempt():
        return
    name = _blocked_name(host)
    if name is not None:
        error = EgressBlocked(name)
        for listener in list(_listeners):
            listener(error)
        raise error


# -- the resolvers, watched -----------------------------------------------------------------


def _remember(host: object, addresses: Iterable[object]) -> None:
    if not is_provider_host(host, PROVIDER_HOSTS) and not is_provider_host(host, _patterns):
        return
    name = _host_text(host) or ""
    for address in addresses:
        text = _host_text(address)
        if not text:
            continue
        try:
            loopback = ipaddress.ip_address(text.split("%", 1)[0]).is_loopback
        except ValueError:
            continue
        if not loopback:  # the gateway itself is never refused
            _resolved[text.split("%", 1)[0]] = name


def _watched_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    found = _watched["getaddrinfo"](host, *args, **kwargs)
    _remember(host, (entry[4][0] for entry in found if entry[4]))
    return found


def _watched_gethostbyname(host: Any) -> Any:
    found = _watched["gethostbyname"](host)
    _remember(host, [found])
    return found


def _watched_gethostbyname_ex(host: Any) -> Any:
    found = _watched["gethostbyname_ex"](host)
    _remember(host, found[2])
    return found


_WATCHES: dict[str, Callable[..., Any]] = {
    "getaddrinfo": _watched_getaddrinfo,
    "gethostbyname": _watched_gethostbyname,
    "gethostbyname_ex": _watched_gethostbyname_ex,
}


def watch_resolutions() -> None:
    """Remember the addresses provider host names resolve to from now on (idempotent),
    so that the guard refuses connections made to them by number."""
    with _lock:
        _watch()


def _watch() -> None:
    if _watched:
        return
    for name, watch in _WATCHES.items():
        _watched[name] = getattr(socket, name)
        setattr(socket, name, watch)


def unwatch_resolutions() -> None:
    """Stop watching the resolvers (what was learnt is kept)."""
    with _lock:
        _unwatch()


def _unwatch() -> None:
    for name in _WATCHES:
        if name in _watched:
            setattr(socket, name, _watched.pop(name))


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


def _gethostbyname(host: Any) -> Any:
    _check(host)
    return _saved["gethostbyname"](host)


def _gethostbyname_ex(host: Any) -> Any:
    _check(host)
    return _saved["gethostbyname_ex"](host)


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
    "gethostbyname": _gethostbyname,
    "gethostbyname_ex": _gethostbyname_ex,
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
    global _patterns, _watch_by_guard
    with _lock:
        if hosts is not None:
            _patterns = tuple(h.lower() for h in hosts)
        if on_block is not None and on_block not in _listeners:
            _listeners.append(on_block)
        if _saved:
            return
        _watch_by_guard = not _watched
        _watch()
        for name, patch in _MODULE_PATCHES.items():
            _saved[name] = getattr(socket, name)
            setattr(socket, name, patch)
        for name, patch in _METHOD_PATCHES.items():
            _saved[name] = getattr(socket.socket, name)
            setattr(socket.socket, name, patch)
        _patch_httpx()


def allow_egress() -> None:
    """Remove the guard and restore the original socket functions (idempotent)."""
    global _patterns, _watch_by_guard
    with _lock:
        for name in _MODULE_PATCHES:
            if name in _saved:
                setattr(socket, name, _saved.pop(name))
        for name in _METHOD_PATCHES:
            if name in _saved:
                setattr(socket.socket, name, _saved.pop(name))
        _unpatch_httpx()
        if _watch_by_guard:
            _unwatch()
            _watch_by_guard = False
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
