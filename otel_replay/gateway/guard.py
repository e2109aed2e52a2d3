"""Who may talk to the gateway: loopback is not a boundary by itself.

A web page open in the developer's browser can reach a loopback port, either directly
(a cross-origin ``fetch``) or by DNS rebinding (its own name re-pointed at 127.0.0.1, so the
browser sends ``Host: evil.example``). The gateway therefore answers only requests that
name it as the agent does — its loopback name, or the host it was told to bind, with its
port — and refuses anything a browser page sends: an ``Origin`` that is not loopback, and
every CORS preflight (``OPTIONS``). Refusals are one-line JSON errors, answered before any
route runs, so they are never forwarded, recorded or counted as model calls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from otel_replay.core.errors import root_cause

__all__ = ["MAX_BODY", "Guard", "Handler", "host_guard", "read_body", "refuse_body"]

log = logging.getLogger("otel_replay.gateway")

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Guard = Callable[[Handler], Handler]


def _split_host(value: str) -> tuple[str, int | None] | None:
    """(name, port) of a ``Host`` value such as ``127.0.0.1:8080`` or ``[::1]:8080``;
    None when it is not one."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:]
    else:
        name, _, port_text = value.partition(":")
    if not port_text:
        return name, None
    if not port_text.isdigit():
        return None
    return name, int(port_text)


def _origin_is_loopback(origin: str) -> bool:
    parts = urlsplit(origin.strip())
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_NAMES


def _refuse(status: int, message: str, request: web.Request) -> web.Response:
    log.warning("otel-replay: refused %s %s: %s", request.method, request.path, message)
    response = web.json_response(
        {"error": {"message": f"otel-replay: {message}", "type": "forbidden"}},
        status=status,
        headers={"x-should-retry": "false"},
    )
    response.force_close()  # the body, if any, is not read
    return response


def host_guard(bind_host: str) -> Guard:
    """What wraps each of the gateway's route handlers so that it refuses requests not
    addressed to the gateway itself (a wrapper rather than an aiohttp middleware: the
    middleware chain cost every request more than the checks do).

    Allowed ``Host`` names: the loopback names, ``bind_host``, and the address the
    connection arrived on; the port must be the one it arrived on.
    """
    allowed = LOOPBACK_NAMES | {bind_host.strip("[]").lower()}
    verdicts: dict[tuple[str, Any], bool] = {}  # (Host, local address): addressed here

    def refusal(request: web.Request) -> web.Response | None:
        if request.method == "OPTIONS":
            return _refuse(405, "OPTIONS (a browser's CORS preflight) is not answered", request)
        origin = request.headers.get("Origin")
        if origin is not None and not _origin_is_loopback(origin):
            return _refuse(403, f"requests from web pages are refused (Origin {origin!r})", request)
        host = request.headers.get("Host")
        if host is None or not _addressed_here(request, host, allowed, verdicts):
            return _refuse(
                403,
                f"Host {host!r} is not this gateway; use the URL it printed "
                "(127.0.0.1 or localhost with its port)",
                request,
            )
        return None

    def guard(handler: Handler) -> Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            refused = refusal(request)
            return refused if refused is not None else await handler(request)

        return guarded

    return guard


_VERDICTS_REMEMBERED = 64
"""(Host, local address) pairs whose verdict is remembered at most: an agent sends the
same few, so the check of every later request is one lookup."""


def _addressed_here(
    request: web.Request,
    host: str,
    allowed: frozenset[str],
    verdicts: dict[tuple[str, Any], bool],
) -> bool:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    key = (host, sockname)
    verdict = verdicts.get(key)
    if verdict is None:
        verdict = _host_is_local(host, sockname, allowed)
        if len(verdicts) >= _VERDICTS_REMEMBERED:
            verdicts.clear()
        verdicts[key] = verdict
    return verdict


def _host_is_local(host: str, sockname: Any, allowed: frozenset[str]) -> bool:
    """Whether ``host`` names ``allowed`` or the local address ``sockname`` (as
    ``transport.get_extra_info`` gives it), with its port."""
    parsed = _split_host(host)
    if parsed is None:
        return False
    name, port = parsed
    local_name, local_port = (str(sockname[0]), int(sockname[1])) if sockname else ("", None)
    if name not in allowed and name != local_name.lower():
        return False
    return local_port is None or (port if port is not None else 80) == local_port


def refuse_body(request: web.Request, status: int, message: str) -> web.Response:
    """A refusal of a body that was not read to its end: nothing more is drained after the
    answer, and the connection closes."""
    log.warning("otel-replay: %s %s: %s", request.method, request.path, message)
    request.content.feed_eof()
    response = web.json_response(
        {"error": {"message": f"otel-replay: {message}"}},
        status=status,
        headers={"Connection": "close"},
    )
    response.force_close()
    return response


MAX_BODY = 1024**3
"""The largest request body the gateway reads (413 past it)."""


async def read_body(request: web.Request, seconds: float) -> bytes | web.Response:
    """The request's body, or the refusal of one that is unreadable (400), too large
    (413) or that does not end within ``seconds`` (408). A body already received in full
    is read without a timer."""
    try:
        if request.content.is_eof():  # nothing left to wait for
            return await _read_all(request.content)
        async with asyncio.timeout(seconds):
            return await _read_all(request.content)
    except web.RequestPayloadError as exc:  # e.g. a corrupt compressed body
        return refuse_body(request, 400, f"unreadable request body: {root_cause(exc)}")
    except TimeoutError:  # a body that never ends must not hold its connection
        return refuse_body(request, 408, f"request body not received within {seconds:g} s")


async def _read_all(content: Any) -> bytes:
    """What ``request.read()`` gives, copied once: a coding agent's body is hundreds of
    kilobytes each turn, which aiohttp's own read copies twice more (into a growing
    buffer, then out of it)."""
    blocks: list[bytes] = []
    size = 0
    while True:
        block = await content.readany()
        if not block:
            break
        size += len(block)
        if size > MAX_BODY:
            raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=size)
        blocks.append(block)
    return blocks[0] if len(blocks) == 1 else b"".join(blocks)
