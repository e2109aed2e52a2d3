"""Keeping calls from the wrong provider: each is forwarded with only its upstream's
credential headers (``providers.forwarded_headers``), and some are refused outright: one
holding the key of a provider with another API (``providers.placement.misplaced``) and a model call
no provider's API claims (``unplaced``), answered with status 421, and a live call with
no upstream to go to (502). None is forwarded; each is counted as a miss in the session
(so the run fails even when the agent swallows the error) and answered in the provider's
own error format with ``x-should-retry: false``."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aiohttp import web

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import JSON
from otel_replay.gateway.call import Call, Incoming
from otel_replay.gateway.upstream import NoUpstream
from otel_replay.providers import vertex
from otel_replay.providers.base import Provider
from otel_replay.providers.placement import Placements, unplaced
from otel_replay.providers.spec import ProviderSpec
from otel_replay.session.session import Session

__all__ = [
    "MISDIRECTED",
    "answer_miss",
    "refuse_misplaced",
    "refuse_unplaced",
    "refuse_unroutable",
    "refused",
    "why_misplaced",
]

log = logging.getLogger("otel_replay.gateway")

MISDIRECTED = 421
"""The status of a request refused because it would reach the wrong provider."""


def refused(session: Session, provider: Provider, path: str, body: JSON, why: str) -> web.Response:
    """A request refused for ``why``: counted as a miss, answered 421."""
    log.warning("otel-replay: %s", why)
    session.missed(ReplayMiss(why), provider.name, path, body)
    error = provider.error_body(MISDIRECTED, f"otel-replay: {why}", "otel_replay_misdirected")
    return web.json_response(error, status=MISDIRECTED, headers={"x-should-retry": "false"})


_PLACEMENTS = Placements()


def refuse_misplaced(call: Call) -> web.Response | None:
    """The refusal of a call about to be forwarded with a credential that is not its
    upstream's; None when it may go."""
    why = why_misplaced(call.route.spec, call.request)
    if why is None:
        return None
    return refused(call.session, call.provider, call.path, call.body, why)


def why_misplaced(spec: ProviderSpec, request: Incoming) -> str | None:
    """Why ``request`` must not be forwarded to ``spec``'s upstream (a credential of
    another provider's), or None."""
    # a key in the query (Gemini's ``?key=``) is forwarded with it: looked at the same way,
    # every value of a repeated one
    query_key = ", ".join(request.query.getall("key", ())) if request.query_string else ""
    why = _PLACEMENTS.misplaced(spec, request.headers, query_key)
    return None if why is None else f"not forwarded to {spec.title}: {why}"


def refuse_unplaced(
    session: Session, request: Incoming, headers: Mapping[str, str]
) -> web.Response | None:
    """The refusal of a request no mount claims that carries a provider's credential, or
    that google-genai sent to the bare base URL; None for a stray that is no model call
    (a health check)."""
    why = vertex.unaddressed(request.method, request.path, headers)
    if why is not None:
        return refused(session, providers.get(vertex.GEMINI_API), request.path, None, why)
    why = unplaced(request.method, request.path, headers)
    if why is None:
        return None
    # no API claims it: the answer is in the format of the API the agent most likely
    # speaks (OpenAI's, which most clients read)
    return refused(session, providers.get(providers.PROVIDERS[0].api), request.path, None, why)


def refuse_unroutable(call: Call, exc: NoUpstream) -> web.Response:
    """A live call with no upstream to go to: the agent is told what to set, and the
    run counts it as a miss (nothing is recorded, since no provider answered), so it
    cannot pass unnoticed when the agent swallows the error."""
    log.warning("otel-replay: %s", exc)
    call.session.missed(ReplayMiss(str(exc)), call.provider.name, call.path, call.body)
    body = call.provider.error_body(502, f"otel-replay: {exc}", "otel_replay_no_upstream")
    return web.json_response(body, status=502, headers={"x-should-retry": "false"})


def answer_miss(call: Call, miss: ReplayMiss, *, keyless: bool = False) -> web.Response:
    """A replay miss: counted in the session (with where it happened; ``keyless``: an
    auto-mode miss that could not go live for want of the provider's key) and answered 400
    in the provider's own error format, marked so SDKs do not retry it."""
    place = (call.trace_id, call.parent_span_id, call.start_ns)
    call.session.missed(
        miss,
        call.provider.name,
        call.path,
        call.body,
        request=call.canonical,
        place=place,
        keyless=keyless,
    )
    log.info("%s", miss)
    body = call.provider.error_body(400, str(miss), "replay_miss")
    return web.json_response(
        body, status=400, headers={"x-should-retry": "false", "x-otel-replay": "miss"}
    )
