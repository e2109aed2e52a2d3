"""The Anthropic API surface: Messages, token counting, models.

Which requests are Anthropic's is declared in ``PROVIDERS``. Content blocks read
into semantic-convention parts: ``text``, ``tool_use`` → ``tool_call``, ``tool_result`` →
``tool_call_response``, ``thinking`` → ``reasoning``; anything else stays whole as a
generic part (``cache_control`` dropped: it changes caching, not the answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
from otel_replay.core.genai import (
    FINISH_CONTENT_FILTER,
    FINISH_LENGTH,
    FINISH_STOP,
    FINISH_TOOL_CALL,
)
from otel_replay.core.memo import ListMap, by_identity
from otel_replay.providers import vertex
from otel_replay.providers.anthropic_stream import messages_body, messages_stream
from otel_replay.providers.base import OutputView
from otel_replay.providers.parts import (
    as_dict,
    as_int,
    as_list,
    drop_empty_text,
    dumps,
    event_payloads,
    function_tool,
    generic_part,
    message,
    parse_arguments,
    parts_of,
    raw_part,
    reasoning_part,
    semconv_usage,
    short_hash,
    strip_prefix,
    text_or_parts,
    text_part,
    tool_call_part,
    tool_calls_of,
    tool_response_part,
)

_ENDPOINTS = {
    "messages": "/v1/messages",
    "count_tokens": "/v1/messages/count_tokens",
    "models": "/v1/models",
}
_OPERATIONS = {path: op for op, path in _ENDPOINTS.items()}
_CONSUMED = frozenset({"model", "system", "messages", "tools", "stream"})
EARLIER_PARAMETERS: Mapping[str, frozenset[str]] = {
    "messages": frozenset({"temperature", "top_p", "top_k"}),
}
"""Body fields the Messages API took in earlier releases of the official SDK, which a trace
of an older client (and its live requests) still carry: request parameters all the same."""

PARAMETERS: Mapping[str, frozenset[str]] = {
    # anthropic.types.message_create_params.MessageCreateParamsBase, and the earlier ones
    "messages": frozenset(
        "cache_control container diagnostics inference_geo max_tokens messages metadata"
        " model output_config service_tier speed stop_sequences stream system thinking"
        " tool_choice tools user_profile_id workspace_id".split()
    )
    | EARLIER_PARAMETERS["messages"],
    # anthropic.types.message_count_tokens_params.MessageCountTokensParams
    "count_tokens": frozenset(
        "cache_control messages model output_config speed system thinking tool_choice tools"
        " user_profile_id workspace_id".split()
    ),
}
"""The body fields of each operation's request, from the official ``anthropic`` SDK's
request types (``tests/test_provider_parameters.py`` holds them to the installed SDK)."""
_DROP = ("cache_control",)
_FROM_STOP = {
    "end_turn": FINISH_STOP,
    "stop_sequence": FINISH_STOP,
    "max_tokens": FINISH_LENGTH,
    "tool_use": FINISH_TOOL_CALL,
    "refusal": FINISH_CONTENT_FILTER,
}
_TO_STOP = {
    FINISH_STOP: "end_turn",
    FINISH_LENGTH: "max_tokens",
    FINISH_TOOL_CALL: "tool_use",
    "tool_calls": "tool_use",
    FINISH_CONTENT_FILTER: "refusal",
}
_OWN_STOPS = frozenset(_FROM_STOP) | {"pause_turn", "model_context_window_exceeded"}
_CACHE_READ = "cache_read.input_tokens"
_CACHE_WRITE = "cache_creation.input_tokens"


def block_part(block: JSON) -> dict[str, Any]:
    """One content block as a semconv part."""
    if isinstance(block, str):
        return text_part(block)
    if not isinstance(block, dict):
        return raw_part(block)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return text_part(block["text"])
    if kind == "tool_use":
        return tool_call_part(block.get("id"), block.get("name"), block.get("input"))
    if kind == "tool_result":
        response = text_or_parts(block.get("content"), content_parts)
        part = tool_response_part(block.get("tool_use_id"), response)
        if block.get("is_error"):
            part["is_error"] = True
        return part
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return reasoning_part(block["thinking"])
    return generic_part(block, drop=_DROP)


def content_parts(content: JSON) -> list[dict[str, Any]]:
    """Parts for a string or a list of blocks (a string equals one text block)."""
    if content is None:
        return []
    if isinstance(content, list):
        return drop_empty_text([block_part(block) for block in content])
    return drop_empty_text([block_part(content)])


def _system(system: JSON) -> list[dict[str, Any]]:
    """``content_parts`` of the system prompt, each block (or the whole string) converted
    once per object the body reader hands out."""
    if isinstance(system, list):
        return drop_empty_text(_block_parts(system))
    return _text_system(system)


_block_parts = ListMap(block_part)
_text_system = by_identity(content_parts)


def canonical_message(raw: JSON) -> dict[str, Any]:
    """One item of a body's ``messages`` as a canonical message."""
    if not isinstance(raw, dict):
        return message("user", [raw_part(raw)])
    return message(raw.get("role"), content_parts(raw.get("content")))


def _tools(raw_tools: JSON) -> JSON:
    if raw_tools is None:
        return None
    return _each_tool(as_list(raw_tools))


def _tool(tool: JSON) -> JSON:
    if not isinstance(tool, dict):
        return raw_part(tool)
    if "input_schema" in tool or tool.get("type") in (None, "custom"):
        skip = {"type", "name", "description", "input_schema", *_DROP}
        extra = {k: v for k, v in tool.items() if k not in skip}
        return function_tool(
            tool.get("name"), tool.get("description"), tool.get("input_schema"), extra
        )
    return {k: v for k, v in tool.items() if k not in _DROP}


_messages = ListMap(canonical_message)
_each_tool = ListMap(_tool)


def _semconv_usage(usage: dict[str, Any]) -> dict[str, int]:
    """Semconv input tokens include the cached ones; Anthropic counts them apart."""
    return semconv_usage(
        usage,
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )


def _anthropic_usage(usage: dict[str, int]) -> dict[str, Any]:
    read = as_int(usage.get(_CACHE_READ))
    write = as_int(usage.get(_CACHE_WRITE))
    return {
        "input_tokens": max(0, as_int(usage.get("input_tokens")) - read - write),
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": as_int(usage.get("output_tokens")),
    }


def _output_block(part: dict[str, Any], key: str, number: int) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("content") or ""}
    if kind == "tool_call":
        arguments = parse_arguments(part.get("arguments"))
        return {
            "type": "tool_use",
            "id": part.get("id") or f"toolu_{key}{number}",
            "name": part.get("name"),
            "input": arguments if isinstance(arguments, dict) else {"input": arguments},
        }
    if kind == "reasoning":
        return {"type": "thinking", "thinking": part.get("content") or "", "signature": ""}
    return dict(part)


def _stop_reason(message: JSON, has_calls: bool) -> str:
    finish = as_dict(message).get("finish_reason")
    if isinstance(finish, str) and finish in _TO_STOP:
        return _TO_STOP[finish]
    if isinstance(finish, str) and finish in _OWN_STOPS:
        return finish
    return "tool_use" if has_calls else "end_turn"


class AnthropicProvider:
    """The Anthropic wire format."""

    name = "anthropic"

    def operation(self, path: str) -> str:
        endpoint = strip_prefix(path).partition("?")[0]
        return _OPERATIONS.get(endpoint) or vertex.anthropic_operation(endpoint) or "other"

    def endpoint(self, operation: str, *, model: str | None = None) -> str:
        return _ENDPOINTS.get(operation, "/v1")

    def canonical(self, path: str, body: JSON) -> CanonicalRequest:
        endpoint = strip_prefix(path)
        if body is None:
            return CanonicalRequest(endpoint=endpoint)
        if not isinstance(body, dict):
            return CanonicalRequest(endpoint=endpoint, params={"body": body})
        model = body.get("model") if isinstance(body.get("model"), str) else None
        if model is None:  # on Vertex AI the path names it
            model = vertex.anthropic_model(endpoint)
        system = body.get("system")
        raw_messages = body.get("messages")
        if raw_messages is None:
            messages = None
        elif isinstance(raw_messages, list):
            messages = _messages(raw_messages)
        else:
            messages = _messages([raw_messages])
        return CanonicalRequest(
            endpoint=endpoint,
            model=model,
            system=None if system is None else _system(system),
            messages=messages,
            tools=_tools(body.get("tools")),
            params={k: v for k, v in body.items() if k not in _CONSUMED},
        )

    def parameters(self, operation: str) -> frozenset[str]:
        return PARAMETERS.get(operation, frozenset())

    def wants_stream(
        self, body: JSON, path: str = "", query: Mapping[str, str] | None = None
    ) -> bool:
        return isinstance(body, dict) and body.get("stream") is True

    def error_body(self, status: int, message: str, kind: str) -> JSON:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def stream_from_body(self, operation: str, body: JSON) -> list[SSEEvent]:
        if operation == "messages":
            return messages_stream(body)
        return [SSEEvent(data=dumps(body))]

    def body_from_stream(self, operation: str, events: list[SSEEvent]) -> JSON:
        if operation == "messages":
            return messages_body(events)
        payloads = event_payloads(events)
        return payloads[-1] if payloads else None

    def stream_done(self, events: list[SSEEvent]) -> bool:
        return bool(events) and events[-1].event in ("message_stop", "error")

    def response_from_view(self, operation: str, view: OutputView) -> JSON:
        if operation == "count_tokens":
            return {"input_tokens": as_int(view.usage.get("input_tokens"))}
        if operation == "models":
            return {"data": [], "has_more": False, "first_id": None, "last_id": None}
        key = short_hash([view.messages, view.model, view.response_id])
        message = view.messages[-1] if view.messages else {}
        parts = [p for m in view.messages for p in parts_of(m)]
        content = [_output_block(part, key, n) for n, part in enumerate(parts)]
        return {
            "id": view.response_id or f"msg_{key}",
            "type": "message",
            "role": "assistant",
            "model": view.model or "unknown",
            "content": content,
            "stop_reason": _stop_reason(message, bool(tool_calls_of(parts))),
            "stop_sequence": None,
            "usage": _anthropic_usage(view.usage),
        }

    def view_from_response(self, operation: str, body: JSON) -> OutputView:
        data = as_dict(body)
        if operation == "count_tokens":
            return OutputView(usage={"input_tokens": as_int(data.get("input_tokens"))})
        if data.get("type") != "message":
            return OutputView(response_id=data.get("id"), model=data.get("model"))
        stop = data.get("stop_reason")
        parts = content_parts(data.get("content"))
        usage = as_dict(data.get("usage"))
        return OutputView(
            messages=[
                {
                    "role": "assistant",
                    "parts": parts,
                    "finish_reason": _FROM_STOP.get(str(stop), stop),
                }
            ],
            response_id=data.get("id"),
            model=data.get("model"),
            usage=_semconv_usage(usage) if usage else {},
        )


ANTHROPIC = AnthropicProvider()
