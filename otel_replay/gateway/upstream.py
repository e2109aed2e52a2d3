"""The upstream seam: ``await upstream.send(request) -> response``.

The gateway never talks to a provider directly; it hands an :class:`UpstreamRequest` to
an object with one ``send`` method. :class:`HttpUpstream` is the real one (aiohttp);
a test can hand in any object with the same method, the way httpx's MockTransport works.

Transport faults come back as :class:`~otel_replay.core.errors.UpstreamError` with ``kind``
``"timeout"``, ``"reset"`` (before any response) or ``"reset_mid_stream"`` (raised from
the body iterator), so the gateway can give the agent the same kind of failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from otel_replay import providers
from otel_replay.core import envvars as ev
from otel_replay.core.errors import ConfigError, UpstreamError
from otel_replay.gateway.sigv4 import AwsSigner, NoAwsCredentials

log = logging.getLogger("otel_replay.gateway")

# Headers that describe one hop, not the message; never forwarded either way.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
    }
)


class NoUpstream(ConfigError):
    """A live call for an upstream nobody named (one without a public endpoint, such as
    Azure OpenAI's per-resource one), or that cannot be made (no AWS credentials to sign
    it with); the message says what to set."""

    def __init__(self, upstream: str, hint: str | None = None) -> None:
        self.upstream = upstream
        row = providers.spec(upstream)
        if hint is None and row is not None:
            hint = row.missing_base()
        elif hint is None:
            hint = f"no {upstream} upstream to forward to: pass --upstream {upstream}=URL"
        super().__init__(hint)


@dataclass(slots=True)
class UpstreamRequest:
    provider: str  # the upstream's name in ``PROVIDERS``: "openai", "azure", ...
    method: str
    path: str  # as the gateway received it less its mount's strip, e.g. /v1/chat/completions
    query: str
    headers: Mapping[str, str]
    body: bytes
    sent: asyncio.Future[None] | None = None
    """Done once the body is written, where the upstream tells (``send_meanwhile``)."""


@dataclass(slots=True)
class UpstreamResponse:
    status: int
    headers: CIMultiDict[str]
    chunks: AsyncIterator[bytes]
    close: object = field(default=None)


class Upstream(Protocol):
    async def send(self, request: UpstreamRequest) -> UpstreamResponse: ...

    async def aclose(self) -> None: ...


_HANDOFF_STEPS = 3  # loop turns let run: for a request with no body to go, between slices of work
_SLICE = 0.0005
"""Seconds of work beside a call between two looks at the loop: an answer that comes in
meanwhile waits about that long (and one step) to be passed on."""
_FAULT = "work meanwhile failed; it is done again later"


def take_steps(steps: Iterator[object], seconds: float = _SLICE) -> bool | asyncio.Future[Any]:
    """Take ``steps`` of the work the gateway does beside a call for about ``seconds``:
    True when that time is up with steps left, False once none is left. A step that
    yields a future is waiting on it (a module loading on a worker thread): it is
    returned, for the caller to await or to leave (the step looks again when next
    taken). A fault in a step ends them and is only logged (whoever needs their result
    does it again)."""
    deadline = time.perf_counter() + seconds
    try:
        for step in steps:
            if isinstance(step, asyncio.Future):
                return step
            if time.perf_counter() >= deadline:
                return True
    except Exception:
        log.debug(_FAULT, exc_info=True)
    return False


async def send_meanwhile(
    upstream: Upstream, request: UpstreamRequest, work: Callable[[], Iterable[object]] | None
) -> UpstreamResponse:
    """``upstream.send(request)``, taking ``work``'s steps once the request is on its way:
    the gateway's own work on a call overlaps the provider's instead of adding to it. The
    loop runs between slices of steps, and the steps still left once the answer is in
    are left to whoever needs their result, so a long piece of work (a new coding-agent
    request, redacted on a run's first call) never holds a stream's first event."""
    if work is None:
        return await upstream.send(request)
    sent = request.sent = asyncio.get_running_loop().create_future() if request.body else None
    sending = asyncio.ensure_future(upstream.send(request))
    try:
        await _on_its_way(sending, sent)
        await _beside(sending, work)
        return await sending
    except BaseException:  # cancelled before the answer came: the send goes too
        if not sending.done():
            sending.cancel()
        elif not sending.cancelled() and sending.exception() is None:
            close = getattr(sending.result().close, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
        raise


async def _on_its_way(
    sending: asyncio.Future[UpstreamResponse], sent: asyncio.Future[None] | None
) -> None:
    """Until the request's body is written (a new connection made first, if need be) or
    the send is over, so the work does not slow the request's way out; a few loop turns
    for a request with no body."""
    if sent is None:
        for _ in range(_HANDOFF_STEPS):
            await asyncio.sleep(0)
            if sending.done():
                return
        return
    sending.add_done_callback(functools.partial(_settle, sent))
    await sent


def _settle(sent: asyncio.Future[None], _: object = None) -> None:
    if not sent.done():
        sent.set_result(None)


async def _beside(
    sending: asyncio.Future[UpstreamResponse], work: Callable[[], Iterable[object]]
) -> None:
    """``work``'s steps until they end or ``sending`` is done, the loop let run every
    ``_SLICE``."""
    try:
        steps = iter(work())
    except Exception:
        log.debug(_FAULT, exc_info=True)
        return
    while (left := take_steps(steps)) is not False:
        if left is not True:  # a step waits: the loop serves meanwhile
            await asyncio.wait((left, sending), return_when=asyncio.FIRST_COMPLETED)
            if sending.done():
                return
            continue
        for _ in range(_HANDOFF_STEPS):
            await asyncio.sleep(0)
            if sending.done():
                return


def provider_url(base: str, provider: str, path: str) -> str:
    """Join an upstream's base URL and a gateway path, as its declaration says: an OpenAI
    base ending in ``/v1`` meets a path starting with ``/v1``; an Azure base given as
    ``.../openai`` or ``.../openai/v1`` is taken back to the resource."""
    row = providers.upstream_spec(provider)
    return row.join(base, path) if row is not None else base.rstrip("/") + path


class HttpUpstream:
    """Forwards to the real providers over aiohttp, streaming the body through."""

    def __init__(
        self,
        bases: Mapping[str, str],
        *,
        connect_timeout: float = 30.0,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.bases = dict(bases)
        self._signer = AwsSigner(os.environ if environ is None else environ)
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout)
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            # no cookie jar: a cookie a provider sets goes to the agent, and only what the
            # agent sends goes upstream (a jar would add it to every later call)
            self._session = aiohttp.ClientSession(
                timeout=self._timeout, auto_decompress=True, cookie_jar=aiohttp.DummyCookieJar()
            )
        return self._session

    def _proxy(self, base: str) -> str | None:
        """The ``HTTP(S)_PROXY`` for an upstream, honouring ``NO_PROXY``: looked up once per
        base (aiohttp's ``trust_env`` would look it up on every request)."""
        if base not in self._proxies:
            parts = urlsplit(base)
            host = parts.hostname or ""
            proxy = None if proxy_bypass(host) else getproxies().get(parts.scheme)
            self._proxies[base] = proxy
        return self._proxies[base]

    def _sign(
        self, service: str, request: UpstreamRequest, base: str
    ) -> tuple[str, dict[str, str]]:
        """The URL and headers of a request re-signed for AWS (SigV4): the region the agent
        signed for fills the base URL's ``{region}``."""
        region = self._signer.region(request.headers)
        if region is None:
            raise NoUpstream(
                request.provider,
                f"no AWS region to sign the live call for: set {ev.AWS_DEFAULT_REGION} "
                "before starting otel-replay",
            )
        url = self._url(base.replace("{region}", region), request)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            signed = self._signer.sign(service, region, request.method, url, headers, request.body)
        except NoAwsCredentials as exc:
            raise NoUpstream(request.provider, str(exc)) from exc
        return url, signed

    @staticmethod
    def _url(base: str, request: UpstreamRequest) -> str:
        url = provider_url(base, request.provider, request.path)
        return f"{url}?{request.query}" if request.query else url

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        row = providers.upstream_spec(request.provider)
        base = self.bases.get(request.provider) or (row.default_base if row else None)
        if row is not None and row.regional is not None and base == row.default_base:
            base = row.regional(request.path)  # the public host serving the path's location
        if not base:
            raise NoUpstream(request.provider)
        target: str | URL
        if row is not None and row.signing_name:
            url, headers = self._sign(row.signing_name, request, base)
            target = URL(url, encoded=True)  # sent exactly as signed
        else:
            target = url = self._url(base, request)
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            response = await self._client().request(
                request.method,
                target,
                headers=headers,
                data=_Body(request.body, request.sent) if request.sent else request.body or None,
                proxy=self._proxy(base),
            )
        except TimeoutError as exc:
            raise UpstreamError(url, "timeout", str(exc)) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamError(url, "reset", str(exc) or type(exc).__name__) from exc
        return UpstreamResponse(
            status=response.status,
            headers=CIMultiDict(response.headers),
            chunks=_iterate(response, url),
            close=response,
        )

    async def websocket(
        self, request: UpstreamRequest, protocols: tuple[str, ...] = ()
    ) -> aiohttp.ClientWebSocketResponse:
        """A WebSocket to ``request``'s upstream at its path (the upgrade's own headers
        are aiohttp's; raises ``aiohttp.WSServerHandshakeError`` with the status of an
        upstream that refuses it, ``NoUpstream`` when there is none)."""
        row = providers.upstream_spec(request.provider)
        base = self.bases.get(request.provider) or (row.default_base if row else None)
        if row is not None and row.regional is not None and base == row.default_base:
            base = row.regional(request.path)
        if not base or (row is not None and row.signing_name):
            raise NoUpstream(request.provider)
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in HOP_BY_HOP and not k.lower().startswith("sec-websocket-")
        }
        return await self._client().ws_connect(
            self._url(base, request),
            headers=headers,
            protocols=protocols,
            compress=15,
            max_msg_size=0,
            autoping=True,
            proxy=self._proxy(base),
        )

    async def connect_ahead(self, names: Iterable[str]) -> None:
        """Open a connection to the host of each of the upstreams ``names`` (its TCP and TLS
        handshakes) and leave it in the pool, where the first call to it finds it: that
        call then waits for none of it. An upstream signed per region or reached through
        a proxy is left to its first call, and a host that cannot be reached is only
        logged (its call fails on its own, as it would have)."""
        origins: dict[tuple[str, str | None, int | None], URL] = {}
        for name in names:
            base = self.bases.get(name)
            row = providers.upstream_spec(name)
            if not base or "{" in base or (row is not None and row.signing_name):
                continue
            if self._proxy(base) is None:
                url = URL(base)
                origins.setdefault((url.scheme, url.host, url.port), url.origin())
        if origins:
            client = self._client()
            await asyncio.gather(*(self._connect(client, url) for url in origins.values()))

    async def _connect(self, client: aiohttp.ClientSession, url: URL) -> None:
        connector = client.connector
        if connector is None:  # closed meanwhile: the gateway is stopping
            return
        try:
            # the key the pool files it under is the one a call to this origin looks up
            request = aiohttp.ClientRequest(
                "POST", url, loop=asyncio.get_running_loop(), session=client
            )
            connection = await connector.connect(request, [], self._timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # its first call meets the same fault
            log.debug("no connection ahead to %s: %s", url, exc)
            return
        connection.release()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class _Body(aiohttp.payload.BytesPayload):
    """A request body that marks ``sent`` once it is written."""

    def __init__(self, value: bytes, sent: asyncio.Future[None]) -> None:
        super().__init__(value)
        self._sent = sent

    async def write_with_length(
        self, writer: aiohttp.abc.AbstractStreamWriter, content_length: int | None
    ) -> None:
        await super().write_with_length(writer, content_length)
        _settle(self._sent)

    async def write(self, writer: aiohttp.abc.AbstractStreamWriter) -> None:  # aiohttp < 3.12
        await super().write(writer)
        _settle(self._sent)


async def _iterate(response: aiohttp.ClientResponse, url: str) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.content.iter_any():
            yield chunk
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, OSError) as exc:
        raise UpstreamError(url, "reset_mid_stream", str(exc)) from exc
    except TimeoutError as exc:
        raise UpstreamError(url, "timeout", str(exc)) from exc
    finally:
        response.release()
