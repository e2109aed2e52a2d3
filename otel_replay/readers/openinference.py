"""Reader for OpenInference LLM spans (Arize Phoenix's ``openinference-instrumentation-*``).

When the span carries ``input.value`` / ``output.value`` as JSON (``input.mime_type`` is
``application/json``) they are the exact request keyword arguments and response: full
fidelity, read through the provider's own ``canonical``. Otherwise the flattened message
attributes (``llm.input_messages.N.message.*``, ``llm.output_messages.N.message.*``,
``llm.tools.N.tool.json_schema``, ``llm.invocation_parameters``, ``llm.token_count.*``)
give the semantic-convention view.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core.exchange import JSON, Exchange, Response
from otel_replay.core.ids import hex_id
from otel_replay.readers import view
from otel_replay.readers.failure import failed_response

__all__ = ["read_span"]

_KINDS = frozenset({"LLM", "EMBEDDING"})
_JSON = "application/json"
# Keyword arguments of the SDK call that never reach the body as such.
_NOT_BODY = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
_NOT_PARAMS = frozenset({"model", "messages", "tools", "functions", "stream", "stream_options"})
_USAGE = {
    "llm.token_count.prompt": "input_tokens",
    "llm.token_count.completion": "output_tokens",
    "llm.token_count.prompt_details.cache_read": "cache_read.input_tokens",
    "llm.token_count.prompt_details.cache_write": "cache_creation.input_tokens",
}


def read_span(
    resource: Mapping[str, Any], span: Span, attrs: Mapping[str, Any] | None = None
) -> Exchange | None:
    """The exchange an OpenInference LLM span describes, or None for any other span."""
    del resource
    attrs = view.span_attributes(span) if attrs is None else attrs
    if attrs.get("openinference.span.kind") not in _KINDS:
        return None
    provider = view.provider_name(attrs.get("llm.provider")) or view.provider_name(
        attrs.get("llm.system")
    )
    if provider is None:
        return None
    body = _json_body(attrs, "input")
    operation = _operation(provider, span.name, attrs, body)
    if operation is None:
        return None
    output = _json_body(attrs, "output")
    if isinstance(body, dict) and isinstance(output, dict):
        return _exact(provider, operation, span, body, output)
    if (
        isinstance(body, dict)
        and output is None
        and not view.indexed(attrs, "llm.output_messages.")
    ):
        failed = failed_response(provider, span, attrs)
        if failed is not None:
            return _exact(provider, operation, span, body, None, failed)
    return _from_messages(provider, operation, span, attrs)


def _json_body(attrs: Mapping[str, Any], side: str) -> JSON:
    if attrs.get(f"{side}.mime_type") != _JSON or not isinstance(attrs.get(f"{side}.value"), str):
        return None
    try:
        return json.loads(attrs[f"{side}.value"])
    except ValueError:
        return None


def _operation(provider: str, name: str, attrs: Mapping[str, Any], body: JSON) -> str | None:
    if provider == "anthropic":
        return "messages"
    lowered = name.lower()
    for word, operation in (
        ("embedding", "embeddings"),
        ("response", "responses"),
        ("chat", "chat"),
        ("completion", "completions"),
    ):
        if word in lowered:
            return operation
    if attrs.get("openinference.span.kind") == "EMBEDDING":
        return "embeddings"
    if isinstance(body, dict) and "messages" in body:
        return "chat"
    return "chat" if any(k.startswith("llm.input_messages.") for k in attrs) else None


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
    endpoint = api.endpoint(operation)
    stream = api.wants_stream(body)
    response = failed
    if response is None:
        response_body = _response_body(operation, output or {})
        response = view.replay_response(provider, operation, response_body, stream)
    return Exchange(
        provider=provider,
        operation=operation,
        request=api.canonical(endpoint, body),
        response=response,
        raw_request=body,
        stream=stream,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        trace_id=hex_id(span.trace_id),
        span_id=hex_id(span.span_id),
        parent_span_id=hex_id(span.parent_span_id),
        source="openinference",
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
        view.message_from_plain(_plain_message(m))
        for m in view.indexed(attrs, "llm.input_messages.")
    ]
    outputs = [
        view.message_from_plain(_plain_message(m))
        for m in view.indexed(attrs, "llm.output_messages.")
    ]
    if not outputs:
        return None
    invocation = view.json_value(attrs.get("llm.invocation_parameters"))
    invocation = invocation if isinstance(invocation, dict) else None
    tools = [view.json_value(t.get("tool.json_schema")) for t in view.indexed(attrs, "llm.tools.")]
    model = (invocation or {}).get("model") or attrs.get("llm.model_name")
    known = {"endpoint", "model", "system", "messages"} if inputs else {"endpoint", "model"}
    if tools:
        known.add("tools")
    if invocation is not None:
        known.add("params")
    if not isinstance(model, str):
        known.discard("model")
    finish = attrs.get("llm.finish_reason")
    return view.exchange_from_view(
        view.ViewRequest(
            provider=provider,
            operation=operation,
            model=model if isinstance(model, str) else None,
            messages=inputs if inputs else None,
            tools=tools or None,
            params={k: v for k, v in (invocation or {}).items() if k not in _NOT_PARAMS},
            known=frozenset(known),
        ),
        view.ViewResponse(
            messages=outputs,
            model=view.as_str(attrs.get("llm.model_name")),
            usage={key: int(attrs[a]) for a, key in _USAGE.items() if view.is_number(attrs.get(a))},
            finish_reasons=[finish] if isinstance(finish, str) else [],
        ),
        span,
        stream=bool((invocation or {}).get("stream")),
        source="openinference",
    )
