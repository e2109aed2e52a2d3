"""Reader for the AI SDK's spans (Vercel's ``ai`` package for TypeScript).

With ``experimental_telemetry`` on, each model call is a span (``ai.generateText.doGenerate``,
``ai.streamText.doStream``, …) carrying the provider-neutral prompt the SDK handed its
provider (``ai.prompt.messages``, ``ai.prompt.tools``), the provider and model
(``ai.model.provider`` such as ``openai.chat``, ``ai.model.id``) and the response
(``ai.response.text``, ``ai.response.toolCalls``, ``ai.response.finishReason``,
``ai.usage.*``). AI SDK 4's names (``args``/``result``, ``parameters``,
``ai.usage.promptTokens``) are read too. Which API a span's call went to is known from
``ai.model.provider`` alone (``call_api``), content or not.

The prompt is taken back to the request the AI SDK's provider sends (Chat Completions,
Responses or Messages) and read through that provider's own ``canonical``, so it matches
a live request. What the form cannot express stays unknown: the request's parameters (the
provider's defaults, ``max_tokens`` and ``tool_choice`` among them, are not on the span)
and the tool definitions' provider options (compared in the ``tool-definitions`` form).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.providers.base import OutputView
from otel_replay.providers.parts import text_part, tool_call_part
from otel_replay.readers.rebuild import output_messages, replay_response
from otel_replay.readers.view import Event, as_list, as_str, json_value, span_place

__all__ = [
    "ANSWERS",
    "CALL_OPERATIONS",
    "MESSAGES",
    "OPERATION",
    "PROVIDER",
    "SOURCE",
    "call_api",
    "read",
    "rebuilds",
]

SOURCE = "ai-sdk"
"""The ``source`` of the exchanges read here."""

MESSAGES = "ai.prompt.messages"
PROVIDER = "ai.model.provider"
_TOOLS = "ai.prompt.tools"
_MODEL = "ai.model.id"
OPERATION = "ai.operationId"
CALL_OPERATIONS = (".doGenerate", ".doStream")
"""How the operation of a model-call span ends (``ai.generateText.doGenerate``, …)."""
_TEXT = "ai.response.text"
_TOOL_CALLS = "ai.response.toolCalls"
_FINISH = "ai.response.finishReason"
_RESPONSE_ID = "ai.response.id"
_RESPONSE_MODEL = "ai.response.model"

_USAGE: Mapping[str, str] = {
    "ai.usage.inputTokens": "input_tokens",
    "ai.usage.promptTokens": "input_tokens",
    "ai.usage.outputTokens": "output_tokens",
    "ai.usage.completionTokens": "output_tokens",
    "ai.usage.cachedInputTokens": "cache_read.input_tokens",
}
_FINISH_REASONS: Mapping[str, str] = {
    "tool-calls": genai.FINISH_TOOL_CALL,
    "stop": genai.FINISH_STOP,
    "length": genai.FINISH_LENGTH,
    "content-filter": genai.FINISH_CONTENT_FILTER,
}
ANSWERS = (_TEXT, _TOOL_CALLS, _FINISH, _RESPONSE_ID, "ai.usage.")
"""What a call's span shows of its answer: its text, tool calls, finish reason, id or
token usage."""
_KNOWN = frozenset({"endpoint", "model", "system", "messages", "tools"})
"""What the span tells of the request; its parameters it does not."""

Message = dict[str, Any]
Body = Callable[[str, list[Message], list[Message]], dict[str, Any]]


def _compact(value: JSON) -> str:
    """JSON text as JavaScript's ``JSON.stringify`` writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _text_of(parts: Sequence[Any]) -> str:
    return "".join(
        str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def _parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of parts (a bare string is one text part)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [p for p in as_list(content) if isinstance(p, dict)]


def _input(part: Mapping[str, Any]) -> JSON:
    """A tool call's input: ``input`` (AI SDK 5 on) or ``args`` (AI SDK 4)."""
    value = part.get("input", part.get("args"))
    parsed = json_value(value) if isinstance(value, str) else value
    return parsed if isinstance(parsed, dict | list) else value


def _output(part: Mapping[str, Any]) -> str:
    """A tool result as the providers send it: text as it is, anything else as JSON."""
    output = part.get("output", part.get("result"))
    if isinstance(output, dict) and "type" in output and "value" in output:
        output = output["value"]  # the typed output of AI SDK 5 on: text, json, error-text
    return output if isinstance(output, str) else _compact(output)


def _tool_definitions(tools: list[Message]) -> list[tuple[Any, Any, Any]]:
    return [
        (t.get("name"), t.get("description"), t.get("inputSchema", t.get("parameters")))
        for t in tools
    ]


# --- the requests the AI SDK's providers send ---------------------------------------------


def _chat(model: str, messages: list[Message], tools: list[Message]) -> dict[str, Any]:
    """``@ai-sdk/openai``'s Chat Completions request (``openai.chat``)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role, parts = m.get("role"), _parts(m.get("content"))
        if role in ("system", "developer"):
            out.append({"role": role, "content": m.get("content")})
        elif role == "user":
            texts = [p for p in parts if p.get("type") == "text"]
            one = len(texts) == len(parts) == 1
            content: JSON = texts[0].get("text") if one else [_chat_block(p) for p in parts]
            out.append({"role": "user", "content": content})
        elif role == "assistant":
            calls = [
                {
                    "id": p.get("toolCallId"),
                    "type": "function",
                    "function": {"name": p.get("toolName"), "arguments": _compact(_input(p))},
                }
                for p in parts
                if p.get("type") == "tool-call"
            ]
            message: dict[str, Any] = {"role": "assistant", "content": _text_of(parts) or None}
            if calls:
                message["tool_calls"] = calls
            out.append(message)
        elif role == "tool":
            for p in parts:
                if p.get("type") == "tool-result":
                    out.append(
                        {"role": "tool", "tool_call_id": p.get("toolCallId"), "content": _output(p)}
                    )
    body: dict[str, Any] = {"model": model, "messages": out}
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": n, "description": d, "parameters": s}}
            for n, d, s in _tool_definitions(tools)
        ]
    return body


def _chat_block(part: Mapping[str, Any]) -> dict[str, Any]:
    if part.get("type") == "text":
        return {"type": "text", "text": part.get("text")}
    return dict(part)  # a file or image: kept as the SDK recorded it


def _responses(model: str, messages: list[Message], tools: list[Message]) -> dict[str, Any]:
    """``@ai-sdk/openai``'s Responses API request (``openai.responses``)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        role, parts = m.get("role"), _parts(m.get("content"))
        if role in ("system", "developer"):
            items.append({"role": role, "content": m.get("content")})
        elif role == "user":
            blocks = [
                {"type": "input_text", "text": p.get("text")} if p.get("type") == "text" else p
                for p in parts
            ]
            items.append({"role": "user", "content": blocks})
        elif role == "assistant":
            for p in parts:
                if p.get("type") == "text":
                    text = [{"type": "output_text", "text": p.get("text")}]
                    items.append({"role": "assistant", "content": text})
                elif p.get("type") == "tool-call":
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": p.get("toolCallId"),
                            "name": p.get("toolName"),
                            "arguments": _compact(_input(p)),
                        }
                    )
        elif role == "tool":
            items.extend(
                {
                    "type": "function_call_output",
                    "call_id": p.get("toolCallId"),
                    "output": _output(p),
                }
                for p in parts
                if p.get("type") == "tool-result"
            )
    body: dict[str, Any] = {"model": model, "input": items}
    if tools:
        body["tools"] = [
            {"type": "function", "name": n, "description": d, "parameters": s}
            for n, d, s in _tool_definitions(tools)
        ]
    return body


def _messages(model: str, messages: list[Message], tools: list[Message]) -> dict[str, Any]:
    """``@ai-sdk/anthropic``'s Messages request (``anthropic.messages``): tool results go
    in a user turn, and consecutive turns of one role are one message."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        role, parts = m.get("role"), _parts(m.get("content"))
        if role == "system":
            system.append({"type": "text", "text": m.get("content")})
            continue
        blocks: list[dict[str, Any]] = []
        for p in parts:
            kind = p.get("type")
            if kind == "text":
                blocks.append({"type": "text", "text": p.get("text")})
            elif kind == "tool-call":
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": p.get("toolCallId"),
                        "name": p.get("toolName"),
                        "input": _input(p),
                    }
                )
            elif kind == "tool-result":
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": p.get("toolCallId"),
                        "content": _output(p),
                    }
                )
            elif kind == "custom":
                blocks.extend(_fallback(p))
            elif kind != "reasoning":
                blocks.append(dict(p))
        turn = "assistant" if role == "assistant" else "user"
        if out and out[-1]["role"] == turn:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": turn, "content": blocks})
    body: dict[str, Any] = {"model": model, "messages": out}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [
            {"name": n, "description": d, "input_schema": s} for n, d, s in _tool_definitions(tools)
        ]
    return body


def _fallback(part: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A custom part as ``@ai-sdk/anthropic`` sends it: a server-side fallback as its
    ``fallback`` block; any other (the metadata of a streamed answer's start) not at all."""
    options = part.get("providerOptions")
    fallback = options.get("anthropic") if isinstance(options, dict) else None
    if part.get("kind") != "anthropic.fallback" or not isinstance(fallback, dict):
        return []
    return [{"type": "fallback", "from": fallback.get("from"), "to": fallback.get("to")}]


_PROVIDERS: Mapping[str, tuple[str, str, Body]] = {
    "openai.chat": ("openai", "chat", _chat),
    "openai.responses": ("openai", "responses", _responses),
    "anthropic.messages": ("anthropic", "messages", _messages),
}
"""``ai.model.provider`` → the API, its operation, and the request its provider sends."""


def rebuilds(provider: str) -> bool:
    """Whether the requests of the AI SDK provider ``provider`` (``ai.model.provider``) are
    taken back from its spans. Others (``google.generative-ai``, which sends the tool
    schemas converted to OpenAPI's dialect) are not."""
    return provider in _PROVIDERS


_NAMED: tuple[tuple[str, str], ...] = (
    ("google.vertex.", "gcp.vertex_ai"),  # @ai-sdk/google-vertex: the model's publisher
    ("vertex.", "gcp.vertex_ai"),  # its Anthropic provider: vertex.anthropic.messages
    ("google.", "gcp.gemini"),  # @ai-sdk/google: google.generative-ai
    ("amazon-bedrock", "aws.bedrock"),
)
"""``ai.model.provider`` prefixes whose head is no ``gen_ai.provider.name`` → the one it
stands for; any other names its provider before the first dot (``openai.chat``,
``anthropic.messages``, ``azure.responses``, ``bedrock.anthropic.messages``,
``groq.chat``)."""


def call_api(span: Span, attrs: Mapping[str, Any]) -> str | None:
    """The API of the model call a span stands for, content or not: a ``.doGenerate`` /
    ``.doStream`` span of a provider otel-replay knows. The ``ai.generateText`` span
    around it (which names the provider too) is none."""
    provider = as_str(attrs.get(PROVIDER))
    if provider is None or not str(attrs.get(OPERATION, span.name)).endswith(CALL_OPERATIONS):
        return None
    named = next((name for prefix, name in _NAMED if provider.startswith(prefix)), None)
    return providers.api_named(named or provider.split(".", 1)[0], attrs.get(_MODEL))


# --- the projection -------------------------------------------------------------------------


def read(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> Exchange | None:
    """The projection of the ``ai.prompt.*`` / ``ai.response.*`` attribute groups."""
    del events
    known = _PROVIDERS.get(str(attrs.get(PROVIDER, "")))
    model = as_str(attrs.get(_MODEL)) or as_str(attrs.get(genai.REQUEST_MODEL))
    messages = json_value(attrs.get(MESSAGES))
    if known is None or model is None or not isinstance(messages, list):
        return None  # another provider, or a prompt cut at a length limit (see doctor)
    tools = [json_value(t) for t in as_list(attrs.get(_TOOLS))]
    if not all(isinstance(t, dict) for t in tools):
        return None
    provider, operation, body = known
    api = providers.get(provider)
    endpoint = api.endpoint(operation, model=model)
    request = api.canonical(endpoint, body(model, messages, tools))
    views = frozenset({"tool-definitions"}) if tools else frozenset()
    request = replace(request, params={}, known=_KNOWN, views=views)
    stream = str(attrs.get(OPERATION, span.name)).endswith("doStream")
    finish = as_str(attrs.get(_FINISH))
    reason = _FINISH_REASONS.get(finish, finish) if finish is not None else None
    output = OutputView(
        messages=output_messages([_output_message(attrs)], [reason] if reason else []),
        response_id=as_str(attrs.get(_RESPONSE_ID)),
        model=as_str(attrs.get(_RESPONSE_MODEL)) or model,
        usage=genai.read_usage(attrs, _USAGE) or genai.read_usage(attrs, genai.USAGE_OF_ATTRIBUTE),
    )
    response_body = api.response_from_view(operation, output)
    return Exchange(
        provider=provider,
        operation=operation,
        request=request,
        response=replay_response(provider, operation, response_body, stream),
        stream=stream,
        **span_place(span),
        source=SOURCE,
    )


def _output_message(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The answer: its text, then its tool calls."""
    parts = []
    text = attrs.get(_TEXT)
    if isinstance(text, str) and text:
        parts.append(text_part(text))
    for call in as_list(json_value(attrs.get(_TOOL_CALLS))):
        if isinstance(call, dict):
            parts.append(tool_call_part(call.get("toolCallId"), call.get("toolName"), _input(call)))
    return {"role": "assistant", "parts": parts}
