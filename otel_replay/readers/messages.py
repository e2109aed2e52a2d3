"""Messages and tools as instrumentations record them, brought to the canonical parts form.

Third-party instrumentations write the GenAI "parts" form with small differences (extra
keys, tool-call arguments as text, Anthropic tool schemas, provider content blocks inside
text) or an older shape altogether (OpenAI-style message dicts, OpenLLMetry's flattened
attributes). Each is read here into exactly the form the providers' ``canonical`` produces
from a request body, with the parts constructors of ``providers.parts``, so a request
rebuilt from a trace matches a live one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.providers.parts import (
    function_tool,
    message,
    raw_part,
    text_part,
    tool_call_part,
    tool_response_part,
)
from otel_replay.readers.view import as_list, json_value, plain, tree

__all__ = [
    "carried_calls",
    "content_parts",
    "content_stripped",
    "message_from_choice",
    "message_from_flat",
    "message_from_plain",
    "norm_message",
    "norm_part",
    "norm_tool",
    "tool_from_flat",
]

_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")
"""Where a tool definition keeps its schema: the GenAI key, Anthropic's, the AI SDK's."""


def content_parts(content: Any) -> list[dict[str, Any]]:
    """Parts for a message ``content``: text, text that is itself a JSON list of provider
    blocks (as OpenLLMetry records Anthropic content), or a list of blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        parsed = json_value(content) if content.lstrip().startswith("[{") else content
        if isinstance(parsed, list) and all(isinstance(b, dict) and "type" in b for b in parsed):
            return [block_part(b) for b in parsed]
        return [text_part(content)]
    if isinstance(content, list):
        return [block_part(b) if isinstance(b, dict) else text_part(b) for b in content]
    return [raw_part(plain(content))]


def block_part(block: Mapping[str, Any]) -> dict[str, Any]:
    """A provider content block (OpenAI or Anthropic) or a semconv part, as a part."""
    kind = block.get("type")
    if kind in _TEXT_BLOCKS and isinstance(block.get("text"), str):
        return text_part(block["text"])
    if kind == "tool_use":
        return tool_call_part(block.get("id"), block.get("name"), block.get("input"))
    if kind == "tool_result":
        return tool_response(block.get("tool_use_id"), block.get("content"))
    return norm_part(block)


def tool_response(call_id: Any, response: Any) -> dict[str, Any]:
    """A tool result part; a result given as blocks is its text when they are all text."""
    if isinstance(response, list):
        parts = content_parts(response)
        if parts and all(p["type"] == "text" for p in parts):
            response = "".join(str(p["content"]) for p in parts)
        else:
            response = parts
    return tool_response_part(call_id, response)


def norm_part(part: Mapping[str, Any]) -> dict[str, Any]:
    """A semconv part with exactly the keys the providers' canonical form uses."""
    kind = part.get("type")
    if kind == "text":
        return text_part(part.get("content", part.get("text")))
    if kind == "tool_call":
        return tool_call_part(part.get("id"), part.get("name"), part.get("arguments"))
    if kind == "tool_call_response":
        return tool_response(part.get("id"), part.get("response", part.get("result")))
    return {str(k): plain(v) for k, v in part.items()}


def norm_message(raw: Any) -> dict[str, Any]:
    """A recorded message (parts form, or ``content``) as a canonical message, with its
    ``finish_reason`` when it has one."""
    if not isinstance(raw, Mapping):
        return message("user", content_parts(raw))
    raw_parts = raw.get("parts")
    if isinstance(raw_parts, list):
        parts = [norm_part(p) if isinstance(p, Mapping) else text_part(p) for p in raw_parts]
        parts = _with_carried(raw, parts)
    else:
        parts = content_parts(raw.get("content"))
    if any(p["type"] == "tool_call" for p in parts):  # a None content recorded as ""
        parts = [p for p in parts if not (p["type"] == "text" and p["content"] in ("", None))]
    name = raw.get("name")
    out = message(str(raw.get("role") or "user"), parts, name if isinstance(name, str) else None)
    if isinstance(raw.get("finish_reason"), str):
        out["finish_reason"] = raw["finish_reason"]
    return out


def carried_calls(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tool calls a message carries the OpenAI way (``tool_calls``), as parts."""
    parts = []
    for call in as_list(raw.get("tool_calls")):
        if isinstance(call, Mapping):
            function = call.get("function")
            fn = function if isinstance(function, Mapping) else call
            parts.append(tool_call_part(call.get("id"), fn.get("name"), fn.get("arguments")))
    return parts


def _with_carried(raw: Mapping[str, Any], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parts plus what a parts-form message also carries the OpenAI way: its tool calls,
    and the call a tool message answers (``tool_call_id``), whose text is the result."""
    kinds = {p["type"] for p in parts}
    if "tool_call" not in kinds:
        parts = parts + carried_calls(raw)
    call_id = raw.get("tool_call_id")
    if call_id is not None and "tool_call_response" not in kinds:
        texts = [p for p in parts if p["type"] == "text"]
        if len(texts) == len(parts):
            return [tool_response(call_id, "".join(str(p["content"]) for p in texts))]
    return parts


def content_stripped(messages: Any) -> bool:
    """Whether recorded messages are only their skeleton: roles and part types, every
    text without its content (an instrumentation told not to record content)."""
    if not isinstance(messages, list) or not messages:
        return False
    texts = [
        part
        for message in messages
        if isinstance(message, Mapping)
        for part in message.get("parts") or ()
        if isinstance(part, Mapping) and part.get("type") == "text"
    ]
    return bool(texts) and all("content" not in part for part in texts)


# --- older message shapes --------------------------------------------------------------


def message_from_plain(raw: Any) -> dict[str, Any]:
    """An OpenAI-style message dict (deprecated event bodies, OpenInference messages)."""
    if not isinstance(raw, Mapping):
        return norm_message(raw)
    role = str(raw.get("role") or "user")
    if role == "tool":
        call_id = raw.get("tool_call_id", raw.get("id"))
        if call_id is None and raw.get("content") is None:  # recorded as its role alone
            return message("tool", [])
        return message("tool", [tool_response(call_id, raw.get("content"))])
    parts = content_parts(raw.get("content")) + carried_calls(raw)
    return norm_message({"role": role, "parts": parts, "name": raw.get("name")})


def message_from_choice(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A ``gen_ai.choice`` event body: ``{index, finish_reason, message}``."""
    inner = payload.get("message")
    found = message_from_plain(
        {"role": "assistant", **(inner if isinstance(inner, Mapping) else {})}
    )
    if isinstance(payload.get("finish_reason"), str):
        found["finish_reason"] = payload["finish_reason"]
    return found


def message_from_flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """OpenLLMetry's ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` group."""
    nested = tree(flat)
    listed = as_list(nested.get("tool_calls"))
    legacy = nested.get("function_call")  # the one call of the older function-calling form
    calls = [
        {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
        for c in [*listed, *([legacy] if isinstance(legacy, dict) and not listed else [])]
        if isinstance(c, dict)
    ]
    found = message_from_plain({**nested, "tool_calls": calls})
    if isinstance(nested.get("finish_reason"), str):
        found["finish_reason"] = nested["finish_reason"]
    return found


def tool_from_flat(flat: Mapping[str, Any]) -> Any:
    """OpenLLMetry's ``llm.request.functions.N.{name,description,parameters}``."""
    return norm_tool(
        {
            "name": flat.get("name"),
            "description": flat.get("description"),
            "parameters": json_value(flat.get("parameters")),
        }
    )


def norm_tool(tool: Any) -> Any:
    """A tool definition in the providers' canonical form (``type``, ``name``,
    ``description``, ``parameters`` plus any other keys)."""
    if not isinstance(tool, Mapping):
        return plain(tool)
    spec: Mapping[str, Any] = tool
    if isinstance(tool.get("function"), Mapping):
        spec = tool["function"]
    elif tool.get("type") not in (None, "function", "custom") and "input_schema" not in tool:
        return plain(tool)  # a built-in tool kept whole
    schema = next((spec[k] for k in _SCHEMA_KEYS if k in spec), None)
    params = json_value(schema)
    skip = {"type", "name", "description", "function", *_SCHEMA_KEYS}
    extra = {str(k): plain(v) for k, v in spec.items() if k not in skip}
    return function_tool(spec.get("name"), spec.get("description"), params, extra)
