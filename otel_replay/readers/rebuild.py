"""The exchange for a semantic-convention view: the canonical request in the parts form
and a response body rebuilt in the provider's own format.

Readers that saw only a view of the call (messages, tools, usage; not the bodies) describe
it as a ``ViewRequest`` and a ``ViewResponse``; ``exchange_from_view`` turns them into the
exchange a live call would have recorded, as far as the view tells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, Response
from otel_replay.providers.base import OutputView
from otel_replay.providers.parts import SYSTEM_ROLES, TOOL_DEFINITION_KEYS, text_part
from otel_replay.readers.messages import norm_message, norm_part, norm_tool
from otel_replay.readers.params import by_api
from otel_replay.readers.view import as_list, span_place

__all__ = [
    "ViewRequest",
    "ViewResponse",
    "exchange_from_view",
    "lossy_forms",
    "output_messages",
    "replay_response",
    "system_and_messages",
]


@dataclass(slots=True)
class ViewRequest:
    """A request as a semantic-convention view records it (any of the forms)."""

    provider: str
    operation: str
    model: str | None = None
    system: JSON = None
    messages: JSON = None
    tools: JSON = None
    params: dict[str, JSON] = field(default_factory=dict)
    """Every parameter the trace recorded: those the provider's API takes become the
    request's, the rest its context (``readers.params``)."""
    known: frozenset[str] = frozenset({"endpoint"})
    """The components the view recorded; never ``params`` in full (``exchange_from_view``)."""


@dataclass(slots=True)
class ViewResponse:
    """A response as a semantic-convention view records it."""

    messages: JSON = None
    response_id: str | None = None
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    finish_reasons: list[str] = field(default_factory=list)


def system_and_messages(provider: str, system: JSON, messages: JSON) -> tuple[JSON, JSON]:
    """System instructions as parts and the remaining messages, the way the provider's
    ``canonical`` splits them: leading system/developer messages belong to ``system``."""
    parts: list[dict[str, Any]] | None = None
    if system is not None:
        items = system if isinstance(system, list) else [system]
        parts = [norm_part(p) if isinstance(p, Mapping) else text_part(p) for p in items]
    if messages is None:
        return parts, None
    normalised = _paired([_input_message(m) for m in as_list(messages)])
    index = 0
    while index < len(normalised) and normalised[index]["role"] in SYSTEM_ROLES:
        parts = (parts or []) + normalised[index]["parts"]
        index += 1
    return parts, normalised[index:]


def _paired(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages whose tool calls carry the ids their results answer to. Some
    instrumentations record a call under another id (the provider's item id instead of
    its call id): a call whose id no result answers takes, in order, the id of a result
    that answers no call."""
    calls = [p for m in messages for p in m["parts"] if p.get("type") == "tool_call"]
    results = [p for m in messages for p in m["parts"] if p.get("type") == "tool_call_response"]
    call_ids = {p.get("id") for p in calls}
    result_ids = {p.get("id") for p in results}
    unanswered = [p for p in calls if p.get("id") not in result_ids]
    orphans = [p.get("id") for p in results if p.get("id") not in call_ids]
    if not unanswered or not orphans:
        return messages
    renamed = {id(call): new for call, new in zip(unanswered, orphans, strict=False)}
    return [
        {
            **m,
            "parts": [{**p, "id": renamed[id(p)]} if id(p) in renamed else p for p in m["parts"]],
        }
        for m in messages
    ]


def _input_message(recorded: Any) -> dict[str, Any]:
    """An input message as a request carries it: a finish reason some instrumentations
    keep on earlier assistant messages is not part of any request."""
    normalised = norm_message(recorded)
    normalised.pop("finish_reason", None)
    return normalised


def lossy_forms(request: CanonicalRequest, operation: str = "") -> frozenset[str]:
    """The lossy forms (``core.exchange.VIEWS``) a request read from a view is compared
    in: tool definitions that carry only the GenAI definition keys (the form has no place
    for a ``strict`` flag), messages holding tool results (whose role the form does not
    fix), messages holding a part recorded as its type alone, an assistant or tool
    message recorded as its role alone (its tool calls or result not kept), and a
    Responses API call's system instructions (sent as ``instructions`` or as leading
    input messages)."""
    found = set()
    tools = request.tools
    if "tools" in request.known and isinstance(tools, list):
        if all(isinstance(t, Mapping) and set(t) <= set(TOOL_DEFINITION_KEYS) for t in tools):
            found.add("tool-definitions")
    if "messages" in request.known:
        parts = [
            p
            for item in as_list(request.messages)
            if isinstance(item, Mapping)
            for p in as_list(item.get("parts"))
            if isinstance(p, Mapping)
        ]
        if any(p.get("type") == "tool_call_response" for p in parts):
            found.add("tool-results")
        if any(set(p) == {"type"} for p in parts):
            found.add("bare-parts")
        if any(_role_alone(item) for item in as_list(request.messages)):
            found.add("bare-messages")
        if operation in _SYSTEM_EITHER_WAY and request.system is not None:
            found.add("system-placement")
    return frozenset(found)


def _role_alone(message: Any) -> bool:
    """An assistant or tool message recorded with no part: the form kept its role only."""
    return (
        isinstance(message, Mapping)
        and message.get("role") in _CALL_ROLES
        and not as_list(message.get("parts"))
    )


_CALL_ROLES = frozenset({"assistant", "tool"})
_SYSTEM_EITHER_WAY = frozenset({"responses"})
"""Operations whose requests carry system instructions in a field of their own or as
leading system/developer messages."""


def output_messages(messages: JSON, finish_reasons: Sequence[str]) -> list[dict[str, Any]]:
    """Output messages in the parts form, with semconv finish reasons."""
    out = []
    for index, recorded in enumerate(as_list(messages)):
        normalised = norm_message(recorded)
        normalised["role"] = (
            "assistant" if normalised["role"] in ("user", "") else normalised["role"]
        )
        reason = normalised.get("finish_reason")
        if reason is None and index < len(finish_reasons):
            reason = finish_reasons[index]
        if isinstance(reason, str):
            normalised["finish_reason"] = genai.finish_reason(reason)
        out.append(normalised)
    return out


def exchange_from_view(
    request: ViewRequest,
    response: ViewResponse,
    span: Span,
    *,
    stream: bool = False,
    source: str = "genai-semconv",
    failed: Response | None = None,
) -> Exchange:
    """The exchange for a semantic-convention view: the canonical request in the parts
    form and a response body rebuilt in the provider's own format (or ``failed``, the
    error the call ended with).

    A view never knows the request's parameters in full: a framework records its client's
    settings (OpenInference's ``llm.invocation_parameters``, ``gen_ai.request.*``), not
    what it adds to each call (``tool_choice``, ``parallel_tool_calls``). So ``params``
    is never among the components it knows: the request is compared on the parameters
    the view recorded, by name (each must be equal), and a parameter it did not record is
    not compared (``matching.projection.shape``)."""
    provider = providers.get(request.provider)
    system, messages = system_and_messages(request.provider, request.system, request.messages)
    tools = [norm_tool(t) for t in as_list(request.tools)] if request.tools is not None else None
    params, context = by_api(request.provider, request.operation, request.params)
    canonical = CanonicalRequest(
        endpoint=provider.endpoint(request.operation, model=request.model),
        model=request.model,
        system=system,
        messages=messages,
        tools=tools,
        params=params,
        known=request.known - {"params"},
    )
    canonical = replace(canonical, views=lossy_forms(canonical, request.operation))
    output = OutputView(
        messages=output_messages(response.messages, response.finish_reasons),
        response_id=response.response_id,
        model=response.model or request.model,
        usage=response.usage,
    )
    replayed = failed
    if replayed is None:
        body = provider.response_from_view(request.operation, output)
        replayed = replay_response(request.provider, request.operation, body, stream)
    return Exchange(
        provider=request.provider,
        operation=request.operation,
        request=canonical,
        response=replayed,
        stream=stream,
        **span_place(span),
        source=source,
        context=context,
    )


def replay_response(provider: str, operation: str, body: JSON, stream: bool) -> Response:
    """A 200 response for a rebuilt body; streamed requests get the provider's own events."""
    if not stream:
        return Response(status=200, headers={"content-type": "application/json"}, body=body)
    events = providers.get(provider).stream_from_body(operation, body)
    return Response(status=200, headers={"content-type": "text/event-stream"}, events=events)
