"""The OpenAI Realtime API (``/v1/realtime``, a WebSocket) as model calls: one call per
``response.create``, its answer the server events up to ``response.done``.

A Realtime session keeps its state on the server: the ``session.update`` settings and the
conversation's items. A recorded call's body therefore holds that state as it stood when
the response was asked for, in the form the gateway writes::

    {"model": "gpt-realtime",                  # the connection's ?model=
     "session": {...},                         # every session.update merged in order
     "input": [item, ...],                     # conversation.item.create items, and
                                               # the output items of earlier responses
     "response": {...},                        # response.create's own settings
     "client_events": [frame, ...],            # this call's client frames, as sent
     "served": [n, ...]}                       # server frames before each of them

The canonical request reads the settings and conversation like a Responses API request:
``session.instructions`` (or the response's own) are the system prompt, the items the
messages, ``session.tools`` the tools, and the other settings the params (``client_events``
and ``served`` are the transport's and never compared).
"""

from __future__ import annotations

from typing import Any

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
from otel_replay.providers import openai_request as req
from otel_replay.providers.parts import as_dict, as_list, dumps, event_payloads

__all__ = ["REALTIME_PATH", "body_from_events", "canonical", "events_from_body"]

REALTIME_PATH = "/v1/realtime"
_SETTINGS_NOT_PARAMS = frozenset({"model", "instructions", "tools", "type"})
_RESPONSE_NOT_PARAMS = frozenset({"instructions", "tools"})


def canonical(endpoint: str, body: JSON) -> CanonicalRequest:
    """The canonical request of a recorded Realtime response (the body above)."""
    data = as_dict(body)
    session = as_dict(data.get("session"))
    response = as_dict(data.get("response"))
    model = data.get("model") or session.get("model")
    instructions = response.get("instructions", session.get("instructions"))
    tools = response.get("tools", session.get("tools"))
    params: dict[str, Any] = {}
    settings = {k: v for k, v in session.items() if k not in _SETTINGS_NOT_PARAMS}
    if settings:
        params["session"] = settings
    asked = {k: v for k, v in response.items() if k not in _RESPONSE_NOT_PARAMS}
    if asked:
        params["response"] = asked
    return CanonicalRequest(
        endpoint,
        model if isinstance(model, str) else None,
        req.instructions_parts(instructions),
        req.responses_input(data.get("input") or []),
        req.responses_tools({"tools": tools}) if tools else None,
        params,
    )


def body_from_events(events: list[SSEEvent]) -> JSON:
    """The response ``response.done`` carries (the whole answer), or None."""
    for payload in reversed(event_payloads(events)):
        if isinstance(payload, dict) and payload.get("type") == "response.done":
            return payload.get("response")
    return None


def events_from_body(body: JSON) -> list[SSEEvent]:
    """A response as the server sends it: ``response.created``, each output text as one
    ``response.output_text.delta`` and its ``.done``, then ``response.done``."""
    data = as_dict(body)
    rid = data.get("id")
    frames: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**data, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(as_list(data.get("output"))):
        for part, block in enumerate(as_list(as_dict(item).get("content"))):
            text = as_dict(block).get("text")
            if not isinstance(text, str):
                continue
            where = {"response_id": rid, "item_id": as_dict(item).get("id")}
            where |= {"output_index": index, "content_index": part}
            frames.append({"type": "response.output_text.delta", **where, "delta": text})
            frames.append({"type": "response.output_text.done", **where, "text": text})
    frames.append({"type": "response.done", "response": body})
    return [SSEEvent(data=dumps(f), event=str(f["type"])) for f in frames]
