"""HTTP to a tracing backend, with the standard library: the one place a source's
requests are made and the transport's failures become one-line ``SourceError``\\ s.

Every request carries the headers of ``OTEL_REPLAY_FROM_HEADERS`` (``k=v,k2=v2``, the
syntax of ``OTEL_EXPORTER_OTLP_HEADERS``: values percent-decoded) beside the backend's
own. An answer is handed back unread, so a long one is read as it arrives.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any
from urllib.parse import unquote, urlencode

from otel_replay.core import envvars
from otel_replay.core.errors import ConfigError, SourceError
from otel_replay.sources.where import Where

__all__ = ["Backend", "basic_auth", "extra_headers"]

TIMEOUT = 300.0  # seconds without a byte from the backend (a long query's first rows)
_BODY_SHOWN = 300


def extra_headers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers ``OTEL_REPLAY_FROM_HEADERS`` asks for."""
    env = os.environ if environ is None else environ
    text = env.get(envvars.OTEL_REPLAY_FROM_HEADERS, "")
    headers: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(
                f"{envvars.OTEL_REPLAY_FROM_HEADERS}: {item.strip()!r} is not key=value"
            )
        headers[unquote(key.strip())] = unquote(value.strip())
    return headers


def basic_auth(user: str, password: str) -> str:
    """An ``Authorization`` header value for HTTP basic authentication."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class _Stay(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: the credentials go only where the address says."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_Stay)


class Backend:
    """Requests to one backend. ``credentials`` names the variables that carry its
    credentials, for the error when they are refused."""

    def __init__(self, where: Where, headers: Mapping[str, str], credentials: str) -> None:
        self.where = where
        self.headers = {**headers, **extra_headers()}
        self.credentials = credentials

    def fail(self, problem: str) -> SourceError:
        return SourceError(self.where.name, problem)

    def open(
        self,
        path: str,
        params: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        *,
        body: bytes | None = None,
        accept: str = "application/json",
        headers: Mapping[str, str] | None = None,
        missing: str | None = None,
    ) -> IO[bytes] | None:
        """The answer to ``GET`` (or ``POST`` of ``body``) ``path?params``, unread. A 404
        is ``None`` when ``missing`` is None, else the error ``missing``."""
        url = self.where.base + path + (f"?{urlencode(params)}" if params else "")
        request = urllib.request.Request(
            url,
            data=body,
            headers={"Accept": accept, **self.headers, **(headers or {})},
            method="POST" if body is not None else "GET",
        )
        try:
            answer: IO[bytes] = _OPENER.open(request, timeout=TIMEOUT)
        except urllib.error.HTTPError as exc:
            with exc:
                text = _shown(exc)
            if exc.code == 404 and missing is None:
                return None
            if 300 <= exc.code < 400:
                target = exc.headers.get("Location") or "elsewhere"
                problem = f"HTTP {exc.code}: redirected to {target}; give that address"
                raise self.fail(problem) from None
            raise self._refused(exc.code, text, missing) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise self.fail(f"unreachable ({_reason(exc)})") from None
        return answer

    def read(self, answer: IO[bytes]) -> bytes:
        """All of an answer, then closed."""
        try:
            with answer:
                return answer.read()
        except (OSError, http.client.HTTPException) as exc:
            raise self.fail(f"the answer broke off ({_reason(exc)})") from None

    def lines(self, answer: IO[bytes]) -> Iterator[bytes]:
        """An answer line by line as it arrives, then closed."""
        try:
            with answer:
                yield from answer
        except (OSError, http.client.HTTPException) as exc:
            raise self.fail(f"the answer broke off ({_reason(exc)})") from None

    def refuses(self, code: int, text: str) -> bool:
        """Whether an error answer says the credentials were refused."""
        del text
        return code in (401, 403)

    def _refused(self, code: int, text: str, missing: str | None) -> SourceError:
        if self.refuses(code, text):
            return self.fail(
                f"refused the credentials (HTTP {code}{': ' + text if text else ''}); "
                f"set {self.credentials}"
            )
        if code == 404 and missing is not None:
            return self.fail(missing)
        return self.fail(f"HTTP {code}" + (f": {text}" if text else ""))


def _shown(exc: urllib.error.HTTPError) -> str:
    """The first line of an error's body, short."""
    try:
        text = exc.read(4096).decode("utf-8", "replace").strip()
    except (OSError, http.client.HTTPException):
        return ""
    line = text.splitlines()[0] if text else ""
    return line[:_BODY_SHOWN] + ("…" if len(line) > _BODY_SHOWN else "")


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, socket.timeout | TimeoutError):
        return f"no answer in {TIMEOUT:.0f} s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    return str(getattr(reason, "strerror", None) or reason)
