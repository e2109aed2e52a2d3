"""Lossy forms: a component compared in what the trace form it was recorded in can express.

A trace records a request in its own form, and some forms cannot express everything a
request carries: the GenAI tool definitions have no ``strict`` flag, and instrumentations
give a tool result the role ``user`` or ``tool`` as they please. Rather than guess the
missing piece, a recording names the forms it was read from (``CanonicalRequest.views``,
names in ``core.exchange.VIEWS``) and both sides of a comparison are brought to that form
here, one pure function per form. A live request sending ``strict: true`` then matches a
recording that could not say so, and a changed description still misses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from otel_replay.core.exchange import JSON, VIEWS
from otel_replay.providers.parts import TOOL_DEFINITION_KEYS

__all__ = ["apply", "tool_definitions", "tool_results"]


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


def tool_results(messages: JSON) -> JSON:
    """Messages with each run of tool-result-only messages as one ``tool`` message."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for message in messages:
        if _only_results(message):
            if out and out[-1].get("role") == "tool" and _only_results(out[-1]):
                out[-1] = {"role": "tool", "parts": [*out[-1]["parts"], *message["parts"]]}
            else:
                out.append({"role": "tool", "parts": list(message["parts"])})
        else:
            out.append(message)
    return out


_FORMS: dict[str, Callable[[JSON], JSON]] = {
    "tool-definitions": tool_definitions,
    "tool-results": tool_results,
}
assert set(_FORMS) == set(VIEWS)


def apply(views: Iterable[str], component: str, value: JSON) -> JSON:
    """``value`` of ``component`` in every form of ``views`` that covers it."""
    for name in sorted(views):
        if VIEWS.get(name) == component:
            value = _FORMS[name](value)
    return value
