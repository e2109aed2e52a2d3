"""The aiohttp writers the gateway answers with: a recorded body, the upstream's headers
passed through, a dropped connection."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import cast

from aiohttp import web
from multidict import CIMultiDict

from otel_replay.core.exchange import JSON, Response
from otel_replay.core.memo import IdentityMemo
from otel_replay.gateway.upstream import HOP_BY_HOP
from otel_replay.providers.base import Provider

__all__ = [
    "abort",
    "as_recorded",
    "body_response",
    "deliver",
    "not_saved",
    "passthrough",
    "prime_answers",
    "replayed_headers",
    "served",
]


def passthrough(headers: CIMultiDict[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in HOP_BY_HOP)


def body_response(status: int, headers: dict[str, str], body: JSON) -> web.Response:
    """A recorded body: JSON as JSON; text (not JSON) as recorded, with its content type."""
    if body is None:
        return web.Response(status=status, headers=headers)
    if isinstance(body, str):
        headers.setdefault("content-type", "text/plain; charset=utf-8")
        return web.Response(status=status, headers=headers, body=body.encode())
    headers["content-type"] = "application/json"
    return web.Response(status=status, headers=headers, body=_encoded(body))


async def deliver(answer: web.StreamResponse, request: web.Request) -> None:
    """Send ``answer`` now, when the handler has more to do once the agent has it; an
    answer sent already, or to a connection that is gone, is left as it is."""
    transport = request.transport
    if answer.prepared or transport is None or transport.is_closing():
        return
    with contextlib.suppress(ConnectionResetError):
        await answer.prepare(request)
        await answer.write_eof()


def replayed_headers(response: Response) -> dict[str, str]:
    """The headers a replayed ``response`` is answered with."""
    headers = dict(response.headers)
    headers["x-otel-replay"] = "replayed"
    return headers


def as_recorded(response: Response, stream: bool) -> web.Response | None:
    """The answer replaying ``response`` when it is played back exactly as recorded: a
    plain answer (no events, no fault) to a call that does not ask for a stream; None
    when it changes form or replays a fault."""
    if stream or response.events is not None or response.fault is not None:
        return None
    return body_response(response.status, replayed_headers(response), response.body)


def _compact(body: JSON) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


_ANSWERS_BUDGET = 64 * 1024 * 1024
_encoded: IdentityMemo[JSON, bytes] = IdentityMemo(
    _compact, limit=_ANSWERS_BUDGET, weigh=len, budget=_ANSWERS_BUDGET
)
"""A recorded body's bytes, made once per recording however often it replays: bounded by
their bytes alone, so a cassette of many short answers keeps every one (a bound by count
would start afresh every few thousand, and encode each answer again as it replays)."""


def prime_answers(bodies: Iterable[JSON]) -> None:
    """Encodes recorded JSON answers before the first request (within the memo's budget),
    so replaying one costs no encoding."""
    made = 0
    for body in bodies:
        if isinstance(body, dict | list):
            made += len(_encoded(body))
            if made >= _ANSWERS_BUDGET // 2:
                return


def served(request: object) -> web.Request:
    """The aiohttp request a gateway call came in as (``Call.request``, typed as any
    door's request by the engine)."""
    return cast(web.Request, request)


def abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()


def not_saved(provider: Provider, why: str) -> web.Response:
    """A live call whose answer could not be (or will not be) saved: a 507 in the
    provider's error format, which the SDKs do not retry."""
    body = provider.error_body(507, f"otel-replay: {why}", "otel_replay_write_failed")
    return web.json_response(body, status=507, headers={"x-should-retry": "false"})
