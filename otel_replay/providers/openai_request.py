"""OpenAI request bodies → the canonical request (GenAI semantic-convention parts form).

Covers Chat Completions, the Responses API, embeddings and legacy completions. Reading
never raises: an odd body yields what can be read and keeps the rest in ``params`` or in
generic parts.
"""

from __future__ import annotations

from typing import Any

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import by_identity
from otel_replay.providers.parts import (
    SYSTEM_ROLES,
    as_dict,
    as_list,
    drop_empty_text,
    function_tool,
    generic_part,
    message,
    raw_part,
    reasoning_part,
    text_or_parts,
    text_part,
    tokens_part,
    tool_call_part,
    tool_response_part,
)

_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
# Chat message keys read into parts; any other non-empty key becomes a generic part.
_CHAT_MESSAGE_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "function_call", "tool_call_id", "annotations"}
)
# Responses input-item keys that identify rather than shape the conversation.
_ITEM_VOLATILE = ("id", "status")


def content_parts(content: JSON) -> list[dict[str, Any]]:
    """Parts for a ``content`` value: a string and a list of text blocks read the same."""
    return drop_empty_text(_content_parts(content))


def _content_parts(content: JSON) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [text_part(content)]
    if not isinstance(content, list):
        return [raw_part(content)]
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            parts.append(text_part(block))
        elif isinstance(block, dict) and block.get("type") in _TEXT_BLOCKS:
            text = block.get("text")
            parts.append(text_part(text) if isinstance(text, str) else generic_part(block))
        elif isinstance(block, dict):
            parts.append(generic_part(block))
        else:
            parts.append(raw_part(block))
    return parts


def response_value(content: JSON) -> JSON:
    """A tool result's content: text when it is all text, else its parts."""
    return text_or_parts(content, content_parts)


@by_identity
def chatmessage(raw: JSON) -> dict[str, Any]:
    """One Chat Completions message as a semconv message."""
    if not isinstance(raw, dict):
        return message("user", [raw_part(raw)])
    role = raw.get("role")
    if role in ("tool", "function"):
        part = tool_response_part(raw.get("tool_call_id"), response_value(raw.get("content")))
        return message("tool", [part], raw.get("name"))
    parts = content_parts(raw.get("content"))
    for call in as_list(raw.get("tool_calls")):
        function = as_dict(call).get("function") if isinstance(call, dict) else None
        if isinstance(call, dict) and isinstance(function, dict):
            parts.append(
                tool_call_part(call.get("id"), function.get("name"), function.get("arguments"))
            )
        elif isinstance(call, dict):
            parts.append(generic_part(call))
        else:
            parts.append(raw_part(call))
    legacy = raw.get("function_call")
    if isinstance(legacy, dict):
        parts.append(tool_call_part(None, legacy.get("name"), legacy.get("arguments")))
    for key, value in raw.items():
        if key not in _CHAT_MESSAGE_KEYS and value not in (None, [], {}, ""):
            parts.append({"type": key, key: value})
    return message(role, parts, raw.get("name"))


@by_identity
def _system_parts(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return content_parts(raw.get("content"))


def chat_system_and_messages(raw_messages: JSON) -> tuple[JSON, JSON]:
    """Leading system/developer messages become ``system``; the rest stay messages."""
    if raw_messages is None:
        return None, None
    if not isinstance(raw_messages, list):
        return None, [message("user", [raw_part(raw_messages)])]
    system: list[dict[str, Any]] | None = None
    index = 0
    while index < len(raw_messages):
        raw = raw_messages[index]
        if not (isinstance(raw, dict) and raw.get("role") in SYSTEM_ROLES):
            break
        system = (system or []) + _system_parts(raw)
        index += 1
    return system, [chatmessage(m) for m in raw_messages[index:]]


def chat_tools(body: dict[str, Any]) -> JSON:
    """``tools`` (nested under ``function``) and legacy ``functions`` as tool definitions."""
    if body.get("tools") is None and body.get("functions") is None:
        return None
    tools: list[JSON] = []
    for tool in as_list(body.get("tools")):
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            tools.append(_chat_function(function))
        else:
            tools.append(tool if isinstance(tool, dict) else raw_part(tool))
    for function in as_list(body.get("functions")):
        tools.append(_function_definition(as_dict(function)))
    return tools


def _function_definition(spec: dict[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in spec.items() if k not in ("name", "description", "parameters")}
    return function_tool(spec.get("name"), spec.get("description"), spec.get("parameters"), extra)


def responses_tools(body: dict[str, Any]) -> JSON:
    """Responses API tools are flat; non-function tools are kept whole."""
    if body.get("tools") is None:
        return None
    tools: list[JSON] = []
    for tool in as_list(body.get("tools")):
        if isinstance(tool, dict) and tool.get("type") == "function":
            tools.append(_flat_function(tool))
        else:
            tools.append(tool if isinstance(tool, dict) else raw_part(tool))
    return tools


_chat_function = by_identity(_function_definition)


@by_identity
def _flat_function(tool: dict[str, Any]) -> dict[str, Any]:
    return _function_definition({k: v for k, v in tool.items() if k != "type"})


@by_identity
def responses_item(item: JSON) -> dict[str, Any]:
    """One Responses API input item as a semconv message."""
    if isinstance(item, str):
        return message("user", [text_part(item)])
    if not isinstance(item, dict):
        return message("user", [raw_part(item)])
    kind = item.get("type") or "message"
    if kind == "message":
        return message(item.get("role"), content_parts(item.get("content")))
    if kind == "function_call":
        call = tool_call_part(item.get("call_id"), item.get("name"), item.get("arguments"))
        return message("assistant", [call])
    if kind == "function_call_output":
        output = response_value(item.get("output"))
        return message("tool", [tool_response_part(item.get("call_id"), output)])
    if kind == "reasoning":
        summary = [as_dict(s).get("text") for s in as_list(item.get("summary"))]
        part = reasoning_part("".join(s for s in summary if isinstance(s, str)))
        if item.get("encrypted_content") is not None:
            part["encrypted_content"] = item["encrypted_content"]
        return message("assistant", [part])
    role = (
        "tool"
        if str(kind).endswith("_output")
        else ("assistant" if str(kind).endswith("_call") else "user")
    )
    return message(role, [generic_part(item, drop=_ITEM_VOLATILE)])


def responses_input(raw_input: JSON) -> JSON:
    if raw_input is None:
        return None
    if isinstance(raw_input, list):
        return [responses_item(item) for item in raw_input]
    return [responses_item(raw_input)]


@by_identity
def instructions_parts(instructions: JSON) -> JSON:
    """``instructions``: a string, or (rarely) a list of input items."""
    if instructions is None:
        return None
    if isinstance(instructions, list):
        return [p for item in instructions for p in responses_item(item)["parts"]]
    return content_parts(instructions)


def input_messages(raw_input: JSON) -> JSON:
    """Embeddings ``input`` / completions ``prompt``: one user message per input."""
    if raw_input is None:
        return None
    if isinstance(raw_input, str):
        return [message("user", [text_part(raw_input)])]
    if isinstance(raw_input, list) and raw_input and all(isinstance(x, int) for x in raw_input):
        return [message("user", [tokens_part(raw_input)])]
    if isinstance(raw_input, list):
        messages = []
        for item in raw_input:
            if isinstance(item, str):
                messages.append(message("user", [text_part(item)]))
            elif isinstance(item, list):
                messages.append(message("user", [tokens_part(item)]))
            else:
                messages.append(message("user", [raw_part(item)]))
        return messages
    return [message("user", [raw_part(raw_input)])]
