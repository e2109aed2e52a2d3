"""A Responses API conversation chained by ids: a request's ``previous_response_id``
names the stored response it continues, and every answer carries its response's ``id``
(the body's, or a stream's ``response.created`` and ``response.completed`` events', the
WebSocket mode's frames being those events). ``matching.chain`` holds a replayed
continuation to the recording it continues by them."""

from __future__ import annotations

from otel_replay.core.exchange import CanonicalRequest, Exchange
from otel_replay.providers.parts import as_dict, loads_or_none

__all__ = ["CONTINUES", "continued", "response_id"]

CONTINUES = "previous_response_id"
"""The request field naming the response a request continues."""

_HEAD_EVENTS = 3
"""The events a stream's response id is looked for in (``response.created`` is first)."""


def continued(request: CanonicalRequest) -> str | None:
    """The id of the response ``request`` continues, or None."""
    params = request.params
    found = params.get(CONTINUES) if isinstance(params, dict) else None
    return found if isinstance(found, str) and found else None


def response_id(exchange: Exchange) -> str | None:
    """The id of the Responses API response ``exchange`` answered with, or None (another
    operation, or an answer without one: an error)."""
    if exchange.provider != "openai" or exchange.operation != "responses":
        return None
    response = exchange.response
    if response.events is None:
        found = as_dict(response.body).get("id")
        return found if isinstance(found, str) else None
    for event in response.events[:_HEAD_EVENTS]:
        found = as_dict(as_dict(loads_or_none(event.data)).get("response")).get("id")
        if isinstance(found, str):
            return found
    return None
