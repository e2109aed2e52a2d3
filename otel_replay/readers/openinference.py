"""Reader for OpenInference LLM spans (Arize Phoenix's ``openinference-instrumentation-*``).

When the span carries ``input.value`` / ``output.value`` as JSON (``input.mime_type`` is
``application/json``) they are the exact request keyword arguments and response: full
fidelity, read through the provider's own ``canonical`` (``read_body``). Otherwise the
flattened message attributes (``llm.input_messages.N.message.*``,
``llm.output_messages.N.message.*``, ``llm.tools.N.tool.json_schema``,
``llm.invocation_parameters``, ``llm.token_count.*``) give the semantic-convention view
(``read_messages``), whose parameters are compared by name only (the invocation
parameters are the client's settings, not what the framework adds to each call:
``readers.rebuild``). Both are rows of ``readers.registry``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Exchange, Response
from otel_replay.readers import view
from otel_replay.readers.failure import failed_response
from otel_replay.readers.messages import message_from_plain
from otel_replay.readers.operation import operation_of
from otel_replay.readers.rebuild import (
    ViewRequest,
    ViewResponse,
    exchange_from_view,
    replay_response,
)
from otel_replay.readers.view import Event, span_place

__all__ = ["ANSWERS", "call_api", "read_body", "read_messages"]

ANSWERS = (genai.OI_OUTPUT_MESSAGES_PREFIX, "llm.token_count.")
"""What an LLM span shows of an answer: output messages or token counts (``output.value``
is no answer by itself: a framework's step records what it returned there)."""

SOURCE = "openinference"
"""The ``source`` of the exchanges read here."""
# Keyword arguments of the SDK call that never reach the body as such.
_NOT_BODY = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
_NOT_PARAMS = frozenset({"model", "messages", "tools", "functions", "stream", "stream_options"})
_RESPONSE_ONLY = frozenset({"id", "created_at"})
"""Fields only a response has: invocation parameters holding them are the response's."""
_RESPONSE_OBJECTS = frozenset({"response", "chat.completion", "chat.completion.chunk"})
"""``object`` of an OpenAI response body."""


def read_body(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> Exchange | None:
    """The projection of ``input.value`` / ``output.value`` holding JSON: the exact request
    keyword arguments and response (or the error the call ended with)."""
    del events
    found = _call(span, attrs)
    if found is None:
        return None
    provider, operation, body = found
    if not _request_kwargs(body):
        return None
    output = _json_body(attrs, "output")
    if isinstance(output, dict):
        return _exact(provider, operation, span, body, output)
    if output is None and not view.indexed(attrs, genai.OI_OUTPUT_MESSAGES_PREFIX):
        failed = failed_response(provider, span, attrs)
        if failed is not None:
            return _exact(provider, operation, span, body, None, failed)
    return None


def read_messages(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> Exchange | None:
    """The projection of the flattened ``llm.input_messages.N.*`` / ``llm.output_messages.N.*``
    attributes: the semantic-convention view."""
    del events
    found = _call(span, attrs)
    if found is None:
        return None
    provider, operation, _body = found
    return _from_messages(provider, operation, span, attrs)


def call_api(span: Span, attrs: Mapping[str, Any]) -> str | None:
    """The API an LLM or EMBEDDING span's model call went to, content or not."""
    del span
    if attrs.get(genai.OI_SPAN_KIND) not in genai.OI_MODEL_KINDS:
        return None
    model = attrs.get(genai.OI_MODEL_NAME)
    named = view.provider_name(attrs.get(genai.OI_PROVIDER), model)
    return named or view.provider_name(attrs.get(genai.OI_SYSTEM), model)


def _call(span: Span, attrs: Mapping[str, Any]) -> tuple[str, str, JSON] | None:
    """The provider, operation and request body of an LLM or EMBEDDING span."""
    provider = call_api(span, attrs)
    if provider is None:
        return None
    body = _json_body(attrs, "input")
    operation = operation_of(provider, attrs, span.name, body)
    return None if operation is None else (provider, operation, body)


def _json_body(attrs: Mapping[str, Any], side: Literal["input", "output"]) -> JSON:
    text = attrs.get(genai.oi_value(side))
    if attrs.get(genai.oi_mime_type(side)) != genai.OI_JSON or not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _request_kwargs(body: JSON) -> bool:
    """Whether ``input.value`` is a provider call's keyword arguments: they name the model,
    and messages, when given, are objects with a role (a framework's own serialisation of
    its inputs is read from the message attributes instead)."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return False
    messages = body.get("messages")
    if messages is None:
        return True
    return isinstance(messages, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages
    )


def _request_params(invocation: Mapping[str, Any]) -> dict[str, Any]:
    """Invocation parameters but those read elsewhere (messages, tools, stream): the
    readers' rule (``readers.params``) keeps those the provider's API takes."""
    return {k: v for k, v in invocation.items() if k not in _NOT_PARAMS}


def _request_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The HTTP body the SDK sent for these call keyword arguments."""
    body = {k: v for k, v in kwargs.items() if k not in _NOT_BODY}
    extra = kwargs.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    return body


def _response_body(operation: str, output: dict[str, Any]) -> dict[str, Any]:
    """A streamed call's accumulated output as the equivalent non-streamed body."""
    if operation != "chat" or output.get("object") != "chat.completion.chunk":
        return output
    choices = []
    for choice in view.as_list(output.get("choices")):
        message = dict(choice.get("message") or {}) if isinstance(choice, dict) else {}
        message.setdefault("content", None)
        calls = [
            {k: v for k, v in call.items() if k != "index"}
            for call in view.as_list(message.get("tool_calls"))
            if isinstance(call, dict)
        ]
        if calls:
            message["tool_calls"] = calls
        choices.append({**choice, "message": message, "logprobs": None})
    return {**output, "object": "chat.completion", "choices": choices}


def _exact(
    provider: str,
    operation: str,
    span: Span,
    kwargs: dict[str, Any],
    output: dict[str, Any] | None,
    failed: Response | None = None,
) -> Exchange:
    """The exchange with the exact request body, and the exact response body or
    ``failed``, the error the call ended with."""
    api = providers.get(provider)
    body = _request_body(kwargs)
    endpoint = api.endpoint(operation, model=view.as_str(body.get("model")))
    stream = api.wants_stream(body)
    response = failed
    if response is None:
        response_body = _response_body(operation, output or {})
        response = replay_response(provider, operation, response_body, stream)
    return Exchange(
        provider=provider,
        operation=operation,
        request=api.canonical(endpoint, body),
        response=response,
        raw_request=body,
        stream=stream,
        **span_place(span),
        source=SOURCE,
    )


def _plain_message(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``message.*`` attributes as an OpenAI-style message dict."""
    nested = view.tree(flat).get("message")
    message: dict[str, Any] = dict(nested) if isinstance(nested, dict) else {}
    contents = [
        c.get("message_content")
        for c in view.as_list(message.pop("contents", None))
        if isinstance(c, dict)
    ]
    if contents and message.get("content") is None:
        message["content"] = [
            {"type": "text", "text": c.get("text")} if c.get("type") == "text" else c
            for c in contents
            if isinstance(c, dict)
        ]
    message["tool_calls"] = [
        c.get("tool_call") for c in view.as_list(message.get("tool_calls")) if isinstance(c, dict)
    ]
    return message


def _from_messages(
    provider: str, operation: str, span: Span, attrs: Mapping[str, Any]
) -> Exchange | None:
    inputs = [
        message_from_plain(_plain_message(m))
        for m in view.indexed(attrs, genai.OI_INPUT_MESSAGES_PREFIX)
    ]
    outputs = [
        message_from_plain(_plain_message(m))
        for m in view.indexed(attrs, genai.OI_OUTPUT_MESSAGES_PREFIX)
    ]
    if not outputs:
        return None
    invocation = view.json_value(attrs.get(genai.OI_INVOCATION_PARAMETERS))
    invocation = invocation if isinstance(invocation, dict) else None
    if invocation is not None and _RESPONSE_ONLY <= set(invocation):
        invocation = None  # the response's fields, echoed: not what the request sent
    tools = [
        view.json_value(t.get(genai.OI_TOOL_SCHEMA))
        for t in view.indexed(attrs, genai.OI_TOOLS_PREFIX)
    ]
    model = (invocation or {}).get("model") or attrs.get(genai.OI_MODEL_NAME)
    known = {"endpoint", "model", "system", "messages"} if inputs else {"endpoint", "model"}
    if tools:
        known.add("tools")
    if not isinstance(model, str):
        known.discard("model")
    finish = attrs.get(genai.OI_FINISH_REASON)
    stream = bool((invocation or {}).get("stream"))
    exchange = exchange_from_view(
        ViewRequest(
            provider=provider,
            operation=operation,
            model=model if isinstance(model, str) else None,
            messages=inputs if inputs else None,
            tools=tools or None,
            params=_request_params(invocation or {}),
            known=frozenset(known),
        ),
        ViewResponse(
            messages=outputs,
            model=view.as_str(attrs.get(genai.OI_MODEL_NAME)),
            usage=genai.read_usage(attrs, genai.OI_USAGE_OF_ATTRIBUTE),
            finish_reasons=[finish] if isinstance(finish, str) else [],
        ),
        span,
        stream=stream,
        source=SOURCE,
    )
    body = _provider_response(provider, operation, attrs)
    if body is not None:
        exchange.response = replay_response(provider, operation, body, stream)
    return exchange


def _provider_response(provider: str, operation: str, attrs: Mapping[str, Any]) -> JSON:
    """``output.value`` when it is the provider's own response body for the operation
    (one the client parses), else None: the response is then rebuilt from the messages."""
    output = _json_body(attrs, "output")
    if not isinstance(output, dict) or output.get("object") not in _RESPONSE_OBJECTS:
        return None
    body = _response_body(operation, output)
    found = providers.get(provider).view_from_response(operation, body)
    return body if found.messages else None
