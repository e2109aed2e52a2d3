"""Reader for OpenTelemetry GenAI semantic-convention spans (``gen_ai.*``).

Understands the latest "parts" form (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, ``gen_ai.tool.definitions``, as span attributes or on a
``gen_ai.client.inference.operation.details`` log record) and the deprecated forms:
OpenLLMetry's flattened ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes and the
per-message events (``gen_ai.system.message`` … ``gen_ai.choice``) as span events or log
records. Only the semantic-convention view exists here, so the request is built in the
parts form directly (``readers.messages``), ``known`` names exactly what the span
recorded, and the response is rebuilt in the provider's format (``readers.rebuild``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core import genai
from otel_replay.core.exchange import Exchange
from otel_replay.readers import view
from otel_replay.readers.failure import failed_response
from otel_replay.readers.messages import (
    content_stripped,
    message_from_choice,
    message_from_flat,
    message_from_plain,
    norm_message,
    tool_from_flat,
)
from otel_replay.readers.operation import operation_of
from otel_replay.readers.rebuild import ViewRequest, ViewResponse, exchange_from_view
from otel_replay.readers.view import Event

__all__ = ["ANSWERS", "call_api", "read", "read_span"]

ANSWERS = (
    genai.RESPONSE_ID,
    genai.FINISH_REASONS,
    genai.OUTPUT_MESSAGES,
    genai.USAGE_PREFIX,
    genai.COMPLETION_PREFIX,
    "llm.usage.",
)
"""What a span shows of an answer: the response's id, finish reasons, output messages or
token usage (OpenLLMetry's ``gen_ai.completion.N.*`` and ``llm.usage.*`` among them)."""

_STREAMING = (genai.IS_STREAMING, genai.LLM_IS_STREAMING)


def read_span(
    resource: Mapping[str, Any],
    span: Span,
    attrs: Mapping[str, Any] | None = None,
    events: Sequence[Event] = (),
) -> Exchange | None:
    """The exchange a GenAI semconv span describes, or None when it is not a model call
    with recorded content. ``events`` are the span's events plus log records linked to it."""
    del resource
    return read(span, view.span_attributes(span) if attrs is None else attrs, events)


def call_api(span: Span, attrs: Mapping[str, Any]) -> str | None:
    """The API the model call a span declares went to (its provider, and an operation
    that is a model call), content or not."""
    named = attrs.get(genai.PROVIDER_NAME) or attrs.get(genai.SYSTEM)
    provider = view.provider_name(named, attrs.get(genai.REQUEST_MODEL))
    if provider is None or operation_of(provider, attrs, span.name) is None:
        return None
    return provider


def read(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> Exchange | None:
    """The projection of the ``gen_ai.*`` attribute groups (and the deprecated events)."""
    merged = view.with_details(attrs, events)
    named = merged.get(genai.PROVIDER_NAME) or merged.get(genai.SYSTEM)
    provider = view.provider_name(named, merged.get(genai.REQUEST_MODEL))
    if provider is None:
        return None
    operation = operation_of(provider, merged, span.name)
    if operation is None:
        return None
    system = view.json_value(merged.get(genai.SYSTEM_INSTRUCTIONS))
    messages = view.json_value(merged.get(genai.INPUT_MESSAGES))
    output = view.json_value(merged.get(genai.OUTPUT_MESSAGES))
    tools = view.json_value(merged.get(genai.TOOL_DEFINITIONS))
    if content_stripped(messages) or any(map(_cut, (system, messages, output, tools))):
        return None  # without content, or cut short: it would not match (see doctor)
    flattened = False
    old = _deprecated(merged, events)
    if messages is None and output is None:
        flattened, messages, output = old.flattened, old.inputs, old.outputs
    elif old.flattened and isinstance(output, list) and old.outputs:
        output = _completed(output, old.outputs)
    tools = tools if tools is not None else old.tools
    failed = None
    if output is None:
        # a failed call is kept only with its messages: without them it would match any
        # request to the model
        failed = failed_response(provider, span, merged) if messages is not None else None
        if failed is None:
            return None
    known = {"endpoint"}
    model = merged.get(genai.REQUEST_MODEL)
    if isinstance(model, str):
        known.add("model")
    if messages is not None or system is not None:
        known |= {"system", "messages"}
    if operation == "realtime" and system is None:
        known.discard("system")  # a Realtime response's span: its session's carries that
    if tools is not None and not _schemas_missing(tools):
        known.add("tools")
    finish = merged.get(genai.FINISH_REASONS)
    return exchange_from_view(
        ViewRequest(
            provider=provider,
            operation=operation,
            model=model if isinstance(model, str) else None,
            system=system,
            messages=messages,
            tools=tools,
            params={k: view.plain(v) for k, v in genai.read_params(merged).items()},
            known=frozenset(known),
        ),
        ViewResponse(
            messages=output,
            response_id=view.as_str(merged.get(genai.RESPONSE_ID)),
            model=view.as_str(merged.get(genai.RESPONSE_MODEL)),
            usage=genai.read_usage(merged, genai.USAGE_OF_ATTRIBUTE),
            finish_reasons=[str(f) for f in finish] if isinstance(finish, list | tuple) else [],
        ),
        span,
        stream=_streamed(merged),
        source="openllmetry" if flattened else "genai-semconv",
        failed=failed,
    )


def _streamed(attrs: Mapping[str, Any]) -> bool:
    """Whether the call streamed: flagged so, or timed to its first chunk."""
    return genai.TIME_TO_FIRST_CHUNK in attrs or any(view.as_flag(attrs.get(k)) for k in _STREAMING)


def _completed(output: list[Any], flattened: list[dict[str, Any]]) -> list[Any]:
    """Output messages with the tool calls that only the flattened completion attributes
    recorded (a parts form left empty beside ``gen_ai.completion.N.function_call.*``)."""
    completed = list(output)
    for index, (recorded, flat) in enumerate(zip(output, flattened, strict=False)):
        calls = [p for p in flat["parts"] if p["type"] == "tool_call"]
        message = norm_message(recorded)
        if calls and not any(p["type"] == "tool_call" for p in message["parts"]):
            text = [p for p in message["parts"] if not (p["type"] == "text" and not p["content"])]
            completed[index] = {**message, "parts": text + calls}
    return completed


def _cut(value: Any) -> bool:
    """JSON text that did not parse: an attribute value cut at a length limit."""
    return isinstance(value, str) and value.lstrip()[:1] in ("[", "{")


class _Deprecated:
    """Messages gathered from the deprecated forms, converted to the parts form."""

    def __init__(self) -> None:
        self.inputs: list[dict[str, Any]] | None = None
        self.outputs: list[dict[str, Any]] | None = None
        self.tools: list[Any] | None = None
        self.flattened = False


def _deprecated(attrs: Mapping[str, Any], events: Sequence[Event]) -> _Deprecated:
    found = _Deprecated()
    functions = view.indexed(attrs, genai.FUNCTIONS_PREFIX)
    if functions:
        found.tools = [tool_from_flat(f) for f in functions]
    prompts = view.indexed(attrs, genai.PROMPT_PREFIX)
    completions = view.indexed(attrs, genai.COMPLETION_PREFIX)
    if prompts or completions:
        found.flattened = True
        found.inputs = [message_from_flat(p) for p in prompts] if prompts else None
        found.outputs = [message_from_flat(c) for c in completions] if completions else None
        return found
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, event_attrs, body in events:
        payload = body if isinstance(body, dict) else view.tree(event_attrs)
        if name == genai.CHOICE_EVENT:
            outputs.append(message_from_choice(payload))
        elif name == genai.PROMPT_EVENT:
            prompt = view.json_value(event_attrs.get(genai.PROMPT))
            inputs.extend(message_from_plain(m) for m in view.as_list(prompt))
        elif name == genai.COMPLETION_EVENT:
            completion = view.json_value(event_attrs.get(genai.COMPLETION))
            outputs.extend(message_from_plain(m) for m in view.as_list(completion))
        elif name in genai.MESSAGE_EVENTS:
            role = name.removeprefix(genai.MESSAGE_EVENT_PREFIX).removesuffix(
                genai.MESSAGE_EVENT_SUFFIX
            )
            inputs.append(message_from_plain({**payload, "role": payload.get("role", role)}))
    found.inputs = inputs or None
    found.outputs = outputs or None
    return found


def _schemas_missing(tools: Any) -> bool:
    """Whether the tool definitions are names without their schemas (``"parameters":
    null``, as the Google GenAI instrumentation writes them): the span does not know
    the tools the request offered, only what they were called."""
    functions = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    return bool(functions) and all(
        "parameters" in tool and tool["parameters"] is None for tool in functions
    )
