"""The Gemini Live API (``BidiGenerateContent`` over a WebSocket, ``client.aio.live`` in
``google-genai``) as model calls: one call per turn the client completes
(``clientContent`` with ``turnComplete``, or a ``toolResponse``), its answer the server
messages up to ``serverContent.turnComplete``.

The session's state is the ``setup`` message and the turns so far; a recorded call's body
holds it as it stood when the turn was asked for::

    {"setup": {"model": "models/...", "generationConfig": ..., "systemInstruction": ...,
               "tools": ...},
     "contents": [content, ...],        # the client's turns and the model's answers
     "client_events": [message, ...],   # this call's client messages, as sent
     "served": [n, ...]}                # server messages before each of them

It is read like a ``generateContent`` request of the same contents, system instruction,
tools and generation settings (``client_events`` and ``served`` are never compared).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
from otel_replay.providers import gemini_request as req
from otel_replay.providers.parts import as_dict, as_list, dumps, event_payloads

__all__ = [
    "body_from_events",
    "canonical",
    "events_from_body",
    "is_live_path",
    "on_vertex",
    "turn_parts",
]

_LIVE_PATH = re.compile(
    r"/ws/google\.(?:ai\.generativelanguage|cloud\.aiplatform)\.(v1|v1alpha|v1beta|v1beta1)\."
    r"(?:GenerativeService\.|LlmBidiService/)BidiGenerateContent(?:Constrained)?"
)
_SETUP_NOT_BODY = frozenset({"model"})


def is_live_path(path: str) -> bool:
    """Whether ``path`` is the Live API's WebSocket (Gemini API or Vertex AI)."""
    return _LIVE_PATH.fullmatch(path.partition("?")[0]) is not None


def on_vertex(path: str) -> bool:
    """Whether a Live path is Vertex AI's (``google.cloud.aiplatform``)."""
    return path.startswith("/ws/google.cloud.aiplatform.")


def canonical(endpoint: str, body: JSON) -> CanonicalRequest:
    """The canonical request of a recorded Live turn (the body above)."""
    data = as_dict(body)
    setup = as_dict(data.get("setup"))
    model = setup.get("model")
    name = model.rpartition("/")[2] if isinstance(model, str) else "unknown"
    asked = {k: v for k, v in setup.items() if k not in _SETUP_NOT_BODY}
    asked["contents"] = as_list(data.get("contents"))
    request = req.canonical(f"/v1beta/models/{name}:generateContent", asked)
    return dataclasses.replace(request, endpoint=endpoint.partition("?")[0])


def turn_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's parts a server message carries (text, a tool call), in order."""
    content = as_dict(as_dict(message.get("serverContent")).get("modelTurn"))
    parts = [p for p in as_list(content.get("parts")) if isinstance(p, dict)]
    calls = as_list(as_dict(message.get("toolCall")).get("functionCalls"))
    parts.extend({"functionCall": call} for call in calls if isinstance(call, dict))
    return parts


def body_from_events(events: list[SSEEvent]) -> JSON:
    """A ``generateContent`` answer of the turn's server messages: the model's parts
    joined (consecutive texts as one), its usage."""
    parts: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    for message in event_payloads(events):
        for part in turn_parts(message):
            last = parts[-1] if parts else None
            if last is not None and set(last) == {"text"} and set(part) == {"text"}:
                last["text"] = str(last["text"]) + str(part["text"])
            else:
                parts.append(dict(part))
        usage = as_dict(message.get("usageMetadata")) or usage
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
    return {"candidates": [candidate], "usageMetadata": usage}


def events_from_body(body: JSON) -> list[SSEEvent]:
    """A ``generateContent`` answer as the Live messages of one turn."""
    candidates = as_list(as_dict(body).get("candidates"))
    content = as_dict(as_dict(candidates[0] if candidates else {}).get("content"))
    turn = {"serverContent": {"modelTurn": {"parts": as_list(content.get("parts"))}}}
    done = {"serverContent": {"turnComplete": True}}
    return [SSEEvent(data=dumps(turn)), SSEEvent(data=dumps(done))]
