"""Lossy forms: a component compared in what the trace form it was recorded in can express.

A trace records a request in its own form, and some forms cannot express everything a
request carries: the GenAI tool definitions have no ``strict`` flag, instrumentations
give a tool result the role ``user`` or ``tool`` as they please and record the value a
tool returned where the request sent its text (or wrapped it), and system instructions
are recorded apart from the conversation whether the request sent them apart or as its
first messages. Rather than guess the missing piece, a recording names the forms it was
read from (``CanonicalRequest.views``, names in ``core.exchange.VIEWS``) and both sides of
a comparison are brought to that form here, one pure function per form. A live request
sending ``strict: true`` then matches a recording that could not say so, and a changed
description still misses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from otel_replay.core.exchange import JSON, VIEWS, CanonicalRequest
from otel_replay.providers.parts import SYSTEM_ROLES, TOOL_DEFINITION_KEYS

__all__ = [
    "apply",
    "bare_messages",
    "bare_parts",
    "system_placement",
    "tool_definitions",
    "tool_results",
]


def tool_definitions(tools: JSON) -> JSON:
    """Tools with only the GenAI tool-definition keys."""
    if not isinstance(tools, list):
        return tools
    return [
        {k: t[k] for k in TOOL_DEFINITION_KEYS if k in t} if isinstance(t, dict) else t
        for t in tools
    ]


def _only_results(message: Any) -> bool:
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list) or not parts:
        return False
    return all(isinstance(p, dict) and p.get("type") == "tool_call_response" for p in parts)


def _decoded(part: dict[str, Any]) -> dict[str, Any]:
    """A tool result as the value the tool returned: unwrapped from the ``{"name",
    "content"}`` a Gemini function response carries it in (the AI SDK's), and decoded
    when it is the JSON text of an object or array."""
    response = part.get("response")
    if isinstance(response, dict) and set(response) == {"name", "content"}:
        response = response["content"]
    if isinstance(response, str) and response.lstrip()[:1] in ("{", "["):
        try:
            response = json.loads(response)
        except ValueError:
            pass
    return part if response is part.get("response") else {**part, "response": response}


def tool_results(messages: JSON) -> JSON:
    """Messages with each run of tool-result-only messages as one ``tool`` message, and
    each result as the value the tool returned (``_decoded``)."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for message in messages:
        if _only_results(message):
            parts = [_decoded(p) for p in message["parts"]]
            if out and out[-1].get("role") == "tool" and _only_results(out[-1]):
                out[-1] = {"role": "tool", "parts": [*out[-1]["parts"], *parts]}
            else:
                out.append({"role": "tool", "parts": parts})
        else:
            out.append(message)
    return out


def _bare(part: Any) -> bool:
    return isinstance(part, dict) and set(part) == {"type"}


def bare_parts(messages: JSON) -> JSON:
    """Messages without the parts that are their type alone."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        if isinstance(parts, list) and any(_bare(p) for p in parts):
            message = {**message, "parts": [p for p in parts if not _bare(p)]}
        out.append(message)
    return out


_TOOL_PARTS = frozenset({"tool_call", "tool_call_response"})


def bare_messages(messages: JSON) -> JSON:
    """Messages without their tool calls and tool results: their roles and text."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        if isinstance(parts, list) and any(_tool_part(p) for p in parts):
            message = {**message, "parts": [p for p in parts if not _tool_part(p)]}
        out.append(message)
    return out


def _tool_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in _TOOL_PARTS


def system_placement(system: JSON, messages: JSON) -> tuple[JSON, JSON]:
    """The system prompt with the parts of the leading system/developer messages, and the
    messages after them."""
    if not isinstance(messages, list):
        return system, messages
    index = 0
    lifted: list[Any] = list(system) if isinstance(system, list) else []
    while index < len(messages):
        message = messages[index]
        if not (isinstance(message, dict) and message.get("role") in SYSTEM_ROLES):
            break
        lifted.extend(message.get("parts") or ())
        index += 1
    if index == 0:
        return system, messages
    return lifted, messages[index:]


Form = Callable[[CanonicalRequest, str, JSON], JSON]
"""A request, a component of it and its value so far → the value in the form."""


def _placed(request: CanonicalRequest, component: str, value: JSON) -> JSON:
    del value  # the first form: it places the request's own system and messages
    system, messages = system_placement(request.system, request.messages)
    return system if component == "system" else messages


_FORMS: dict[str, Form] = {
    "system-placement": _placed,
    "tool-definitions": lambda request, component, value: tool_definitions(value),
    "tool-results": lambda request, component, value: tool_results(value),
    "bare-parts": lambda request, component, value: bare_parts(value),
    "bare-messages": lambda request, component, value: bare_messages(value),
}
assert list(_FORMS) == list(VIEWS)


def apply(views: Iterable[str], component: str, request: CanonicalRequest) -> JSON:
    """``request``'s ``component`` in every form of ``views`` that covers it."""
    named = frozenset(views)
    value = request.component(component)
    for name, covers in VIEWS.items():
        if name in named and component in covers:
            value = _FORMS[name](request, component, value)
    return value
