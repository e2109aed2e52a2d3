"""A fork's calls as the gateway carries them out (see ``session.fork``).

Before the fork point a call is decided as in strict mode (``decide``); from it on,
:func:`decide_live` sends it live under the auto mode's key rule, and :func:`going_live`
readies it: the body sent upstream names the fork's model in place of the agent's, and
the exchange recorded keeps the agent's request with the provenance of the answer.
"""

from __future__ import annotations

import json

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import JSON
from otel_replay.core.jsontext import strict_loads
from otel_replay.gateway.call import Call
from otel_replay.gateway.decide import Decision, OwnKeys, lowered
from otel_replay.session.fork import Fork

__all__ = ["decide_live", "going_live", "live_call", "with_model"]


def decide_live(number: int, *, own_key: bool) -> Decision:
    """The decision for call ``number``, at or past the fork point: forwarded when it
    carries exactly the gateway's own key for its upstream (as an auto-mode miss is),
    else a miss saying what it lacks."""
    if own_key:
        return Decision("forward")
    miss = ReplayMiss(
        f"call {number} is past the fork point and goes live only with the key in "
        "otel-replay's own environment (the provider's API key variable)"
    )
    return Decision("miss", miss=miss)


def live_call(call: Call, fork: Fork, own_keys: OwnKeys) -> Decision:
    """The decision for ``call``, past the fork point (its ``number`` set), readied to
    go live when it goes; a miss when the fork's model has no place in its body."""
    own = own_keys.offered(call.upstream, lowered(call.request.headers))
    decision = decide_live(call.number, own_key=own)
    if decision.action == "forward" and not going_live(call, fork, call.number):
        reason = f"call {call.number}'s body names no model to send {fork.model} in place of"
        return Decision("miss", miss=ReplayMiss(reason))
    return decision


def going_live(call: Call, fork: Fork, number: int) -> bool:
    """Ready ``call`` (number ``number``) to go live: sent with the fork's model, its
    exchange carrying the provenance of the answer. False when the fork has a model and
    the call's body is not a JSON object naming one to replace (a call without a body,
    listing models, goes as it came)."""
    body: JSON = None
    if call.raw:  # a call without a body (a list of models) goes as it came
        try:
            body = strict_loads(call.raw)
        except ValueError:  # not JSON: nowhere to put a model, else sent as it came
            body = None
        if fork.model is not None:
            if not isinstance(body, dict) or "model" not in body:
                return False
            call.sent = with_model(body, fork.model)
    asked = body.get("model") if isinstance(body, dict) else None
    call.provenance = fork.live_provenance(number, asked)
    return True


def with_model(body: dict[str, object], model: str) -> bytes:
    """``body`` as JSON bytes, naming ``model``."""
    return json.dumps({**body, "model": model}, separators=(",", ":")).encode()
