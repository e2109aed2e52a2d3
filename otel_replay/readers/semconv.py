"""Reader for OpenTelemetry GenAI semantic-convention spans (``gen_ai.*``).

Understands the latest "parts" form (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, ``gen_ai.tool.definitions``, as span attributes or on a
``gen_ai.client.inference.operation.details`` log record) and the deprecated forms:
OpenLLMetry's flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes and the
per-message events (``gen_ai.system.message`` … ``gen_ai.choice``) as span events or log
records. Only the semantic-convention view exists here, so the request is built in the
parts form directly (``view``), ``known`` names exactly what the span recorded, and the
response is rebuilt in the provider's format by ``response_from_view``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.exchange import Exchange
from otel_replay.readers import view
from otel_replay.readers.failure import failed_response
from otel_replay.readers.view import Event

__all__ = ["DETAILS_EVENT", "MESSAGE_EVENTS", "read_span"]

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
MESSAGE_EVENTS = frozenset(
    {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
        "gen_ai.content.prompt",
        "gen_ai.content.completion",
    }
)

_OPERATIONS = {
    "chat": "chat",
    "text_completion": "completions",
    "completion": "completions",
    "embeddings": "embeddings",
    "embedding": "embeddings",
}
_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.max_tokens": "max_tokens",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.choice.count": "n",
}
_USAGE = {
    "gen_ai.usage.input_tokens": "input_tokens",
    "gen_ai.usage.prompt_tokens": "input_tokens",
    "gen_ai.usage.output_tokens": "output_tokens",
    "gen_ai.usage.completion_tokens": "output_tokens",
    "gen_ai.usage.cache_read.input_tokens": "cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens": "cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens": "cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens": "cache_creation.input_tokens",
}


def read_span(
    resource: Mapping[str, Any],
    span: Span,
    attrs: Mapping[str, Any] | None = None,
    events: Sequence[Event] = (),
) -> Exchange | None:
    """The exchange a GenAI semconv span describes, or None when it is not a model call
    with recorded content. ``events`` are the span's events plus log records linked to it."""
    del resource
    merged: dict[str, Any] = dict(view.span_attributes(span) if attrs is None else attrs)
    for name, event_attrs, _body in events:
        if name == DETAILS_EVENT:  # the latest form, carried by a log record
            merged.update({k: v for k, v in event_attrs.items() if k not in merged})
    provider = view.provider_name(merged.get("gen_ai.provider.name") or merged.get("gen_ai.system"))
    if provider is None:
        return None
    operation = _operation(provider, merged, span.name)
    if operation is None:
        return None
    system = view.json_value(merged.get("gen_ai.system_instructions"))
    messages = view.json_value(merged.get("gen_ai.input.messages"))
    output = view.json_value(merged.get("gen_ai.output.messages"))
    tools = view.json_value(merged.get("gen_ai.tool.definitions"))
    flattened = False
    if messages is None and output is None:
        old = _deprecated(merged, events)
        flattened, messages, output = old.flattened, old.inputs, old.outputs
        tools = tools if tools is not None else old.tools
    failed = None
    if output is None:
        # a failed call is kept only with its messages: without them it would match any
        # request to the model
        failed = failed_response(provider, span, merged) if messages is not None else None
        if failed is None:
            return None
    known = {"endpoint"}
    model = merged.get("gen_ai.request.model")
    if isinstance(model, str):
        known.add("model")
    if messages is not None or system is not None:
        known |= {"system", "messages"}
    if tools is not None:
        known.add("tools")
    finish = merged.get("gen_ai.response.finish_reasons")
    usage = {key: int(merged[a]) for a, key in _USAGE.items() if view.is_number(merged.get(a))}
    return view.exchange_from_view(
        view.ViewRequest(
            provider=provider,
            operation=operation,
            model=model if isinstance(model, str) else None,
            system=system,
            messages=messages,
            tools=tools,
            params={key: view.plain(merged[a]) for a, key in _PARAMS.items() if a in merged},
            known=frozenset(known),
        ),
        view.ViewResponse(
            messages=output,
            response_id=view.as_str(merged.get("gen_ai.response.id")),
            model=view.as_str(merged.get("gen_ai.response.model")),
            usage=usage,
            finish_reasons=[str(f) for f in finish] if isinstance(finish, list | tuple) else [],
        ),
        span,
        stream=bool(merged.get("gen_ai.is_streaming") or merged.get("llm.is_streaming")),
        source="openllmetry" if flattened else "genai-semconv",
        failed=failed,
    )


def _operation(provider: str, attrs: Mapping[str, Any], span_name: str) -> str | None:
    name = attrs.get("gen_ai.operation.name") or attrs.get("llm.request.type")
    if name is None and any(k.startswith("gen_ai.prompt.") for k in attrs):
        name = "chat"
    operation = _OPERATIONS.get(str(name)) if name is not None else None
    if operation == "chat" and provider == "anthropic":
        return "messages"
    if operation == "chat" and "response" in span_name.lower():
        return "responses"
    return operation


class _Deprecated:
    """Messages gathered from the deprecated forms, converted to the parts form."""

    def __init__(self) -> None:
        self.inputs: list[dict[str, Any]] | None = None
        self.outputs: list[dict[str, Any]] | None = None
        self.tools: list[Any] | None = None
        self.flattened = False


def _deprecated(attrs: Mapping[str, Any], events: Sequence[Event]) -> _Deprecated:
    found = _Deprecated()
    functions = view.indexed(attrs, "llm.request.functions.")
    if functions:
        found.tools = [view.tool_from_flat(f) for f in functions]
    prompts = view.indexed(attrs, "gen_ai.prompt.")
    completions = view.indexed(attrs, "gen_ai.completion.")
    if prompts or completions:
        found.flattened = True
        found.inputs = [view.message_from_flat(p) for p in prompts] if prompts else None
        found.outputs = [view.message_from_flat(c) for c in completions] if completions else None
        return found
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, event_attrs, body in events:
        payload = body if isinstance(body, dict) else view.tree(event_attrs)
        if name == "gen_ai.choice":
            outputs.append(view.message_from_choice(payload))
        elif name == "gen_ai.content.prompt":
            prompt = view.json_value(event_attrs.get("gen_ai.prompt"))
            inputs.extend(view.message_from_plain(m) for m in view.as_list(prompt))
        elif name == "gen_ai.content.completion":
            completion = view.json_value(event_attrs.get("gen_ai.completion"))
            outputs.extend(view.message_from_plain(m) for m in view.as_list(completion))
        elif name in MESSAGE_EVENTS:
            role = name.removeprefix("gen_ai.").removesuffix(".message")
            inputs.append(view.message_from_plain({**payload, "role": payload.get("role", role)}))
    found.inputs = inputs or None
    found.outputs = outputs or None
    return found
