"""OpenAI response bodies ⇄ the semantic-convention output view.

``view_of_*`` read a body into ``gen_ai.output.messages`` / usage for a span; ``*_body``
rebuild a body a client SDK accepts from a trace that recorded only that view. Ids a view
lacks are derived from its content, so a rebuild is deterministic.
"""

from __future__ import annotations

from typing import Any

from otel_replay.core.exchange import JSON
from otel_replay.core.genai import (
    FINISH_CONTENT_FILTER,
    FINISH_LENGTH,
    FINISH_STOP,
    FINISH_TOOL_CALL,
)
from otel_replay.providers.base import OutputView
from otel_replay.providers.parts import (
    arguments_text,
    as_dict,
    as_int,
    as_list,
    generic_part,
    parts_of,
    reasoning_part,
    refusal_part,
    short_hash,
    text_of,
    text_part,
    tool_call_part,
    tool_calls_of,
)

_FROM_CHAT = {"tool_calls": FINISH_TOOL_CALL, "function_call": FINISH_TOOL_CALL}
_TO_CHAT = {
    FINISH_STOP: "stop",
    FINISH_LENGTH: "length",
    FINISH_TOOL_CALL: "tool_calls",
    "tool_calls": "tool_calls",
    FINISH_CONTENT_FILTER: "content_filter",
    "function_call": "function_call",
}
_INCOMPLETE = {"max_output_tokens": FINISH_LENGTH, "content_filter": FINISH_CONTENT_FILTER}


def _key(view: OutputView) -> str:
    return short_hash([view.messages, view.model, view.response_id])


def _cached(usage: dict[str, int]) -> int:
    return as_int(usage.get("cache_read.input_tokens"))


def _semconv_usage(
    inputs: JSON, outputs: JSON, cached: JSON, written: JSON = None
) -> dict[str, int]:
    usage = {"input_tokens": as_int(inputs), "output_tokens": as_int(outputs)}
    if cached is not None:
        usage["cache_read.input_tokens"] = as_int(cached)
    if written is not None:
        usage["cache_creation.input_tokens"] = as_int(written)
    return usage


# --- Chat Completions (and legacy completions, whose choices carry ``text``) -----------


def view_of_chat(body: dict[str, Any]) -> OutputView:
    messages = []
    for choice in as_list(body.get("choices")):
        choice = as_dict(choice)
        message = as_dict(choice.get("message"))
        parts: list[dict[str, Any]] = []
        if isinstance(message.get("reasoning_content"), str):
            parts.append(reasoning_part(message["reasoning_content"]))
        content = message.get("content", choice.get("text"))
        if isinstance(content, str):
            parts.append(text_part(content))
        if isinstance(message.get("refusal"), str):
            parts.append(refusal_part(message["refusal"]))
        for call in as_list(message.get("tool_calls")):
            function = as_dict(as_dict(call).get("function"))
            call_id = as_dict(call).get("id")
            parts.append(tool_call_part(call_id, function.get("name"), function.get("arguments")))
        finish = choice.get("finish_reason")
        messages.append(
            {
                "role": "assistant",
                "parts": parts,
                "finish_reason": _FROM_CHAT.get(str(finish), finish),
            }
        )
    usage = as_dict(body.get("usage"))
    return OutputView(
        messages=messages,
        response_id=body.get("id"),
        model=body.get("model"),
        usage=_semconv_usage(
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            as_dict(usage.get("prompt_tokens_details")).get("cached_tokens"),
        )
        if usage
        else {},
    )


def _chat_usage(view: OutputView) -> dict[str, Any]:
    inputs = as_int(view.usage.get("input_tokens"))
    outputs = as_int(view.usage.get("output_tokens"))
    usage: dict[str, Any] = {
        "prompt_tokens": inputs,
        "completion_tokens": outputs,
        "total_tokens": inputs + outputs,
    }
    if "cache_read.input_tokens" in view.usage:
        usage["prompt_tokens_details"] = {"cached_tokens": _cached(view.usage)}
    return usage


def _messages(view: OutputView) -> list[JSON]:
    return view.messages or [{"role": "assistant", "parts": [], "finish_reason": FINISH_STOP}]


def _chat_finish(message: JSON, has_calls: bool) -> str:
    finish = as_dict(message).get("finish_reason")
    if isinstance(finish, str) and finish in _TO_CHAT:
        return _TO_CHAT[finish]
    return "tool_calls" if has_calls else "stop"


def chat_body(view: OutputView) -> dict[str, Any]:
    key = _key(view)
    choices = []
    for index, message in enumerate(_messages(view)):
        parts = parts_of(message)
        calls = [
            {
                "id": call.get("id") or f"call_{key[:16]}{index}{number}",
                "type": "function",
                "function": {
                    "name": call.get("name"),
                    "arguments": arguments_text(call.get("arguments")),
                },
            }
            for number, call in enumerate(tool_calls_of(parts))
        ]
        refusals = [p.get("content") for p in parts if p.get("type") == "refusal"]
        text = text_of(parts)
        body_message: dict[str, Any] = {
            "role": "assistant",
            "content": text if text is not None or calls or refusals else "",
            "refusal": "".join(r for r in refusals if isinstance(r, str)) if refusals else None,
            "annotations": [],
        }
        if calls:
            body_message["tool_calls"] = calls
        choices.append(
            {
                "index": index,
                "message": body_message,
                "logprobs": None,
                "finish_reason": _chat_finish(message, bool(calls)),
            }
        )
    return {
        "id": view.response_id or f"chatcmpl-{key}",
        "object": "chat.completion",
        "created": 0,
        "model": view.model or "unknown",
        "choices": choices,
        "usage": _chat_usage(view),
    }


def completions_body(view: OutputView) -> dict[str, Any]:
    choices = [
        {
            "text": text_of(parts_of(message)) or "",
            "index": index,
            "logprobs": None,
            "finish_reason": "length"
            if as_dict(message).get("finish_reason") == FINISH_LENGTH
            else "stop",
        }
        for index, message in enumerate(_messages(view))
    ]
    return {
        "id": view.response_id or f"cmpl-{_key(view)}",
        "object": "text_completion",
        "created": 0,
        "model": view.model or "unknown",
        "choices": choices,
        "usage": _chat_usage(view),
    }


# --- Embeddings ------------------------------------------------------------------------


def view_of_embeddings(body: dict[str, Any]) -> OutputView:
    vectors = [as_dict(item).get("embedding") for item in as_list(body.get("data"))]
    usage = as_dict(body.get("usage"))
    return OutputView(
        model=body.get("model"),
        usage={"input_tokens": as_int(usage.get("prompt_tokens"))} if usage else {},
        embeddings=[v for v in vectors if isinstance(v, list)] or None,
    )


def embeddings_body(view: OutputView) -> dict[str, Any]:
    inputs = as_int(view.usage.get("input_tokens"))
    data = [
        {"object": "embedding", "index": index, "embedding": vector}
        for index, vector in enumerate(view.embeddings or [])
    ]
    return {
        "object": "list",
        "data": data,
        "model": view.model or "unknown",
        "usage": {"prompt_tokens": inputs, "total_tokens": inputs},
    }


# --- Responses API ---------------------------------------------------------------------


def _item_parts(item: dict[str, Any]) -> list[dict[str, Any]]:
    kind = item.get("type")
    if kind == "message":
        parts = []
        for block in as_list(item.get("content")):
            block = as_dict(block)
            if block.get("type") == "output_text" and isinstance(block.get("text"), str):
                parts.append(text_part(block["text"]))
            elif block.get("type") == "refusal":
                parts.append(refusal_part(block.get("refusal")))
            else:
                parts.append(generic_part(block))
        return parts
    if kind == "function_call":
        return [tool_call_part(item.get("call_id"), item.get("name"), item.get("arguments"))]
    if kind == "reasoning":
        texts = [as_dict(s).get("text") for s in as_list(item.get("summary"))]
        return [reasoning_part("".join(t for t in texts if isinstance(t, str)))]
    return [generic_part(item)]


def view_of_response(body: dict[str, Any]) -> OutputView:
    parts = [p for item in as_list(body.get("output")) for p in _item_parts(as_dict(item))]
    status = body.get("status")
    if status == "incomplete":
        reason = as_dict(body.get("incomplete_details")).get("reason")
        finish = _INCOMPLETE.get(str(reason), FINISH_LENGTH)
    elif status == "failed":
        finish = "error"
    else:
        finish = FINISH_TOOL_CALL if tool_calls_of(parts) else FINISH_STOP
    usage = as_dict(body.get("usage"))
    return OutputView(
        messages=[{"role": "assistant", "parts": parts, "finish_reason": finish}] if parts else [],
        response_id=body.get("id"),
        model=body.get("model"),
        usage=_semconv_usage(
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            as_dict(usage.get("input_tokens_details")).get("cached_tokens"),
            as_dict(usage.get("input_tokens_details")).get("cache_write_tokens"),
        )
        if usage
        else {},
    )


def _output_items(parts: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for number, part in enumerate(parts):
        kind = part.get("type")
        if kind in ("text", "refusal"):
            block = (
                {
                    "type": "output_text",
                    "text": part.get("content") or "",
                    "annotations": [],
                    "logprobs": [],
                }
                if kind == "text"
                else {"type": "refusal", "refusal": part.get("content") or ""}
            )
            last = items[-1] if items else None
            if last is not None and last["type"] == "message":
                last["content"].append(block)
                continue
            items.append(
                {
                    "id": f"msg_{key}{number}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [block],
                }
            )
        elif kind == "tool_call":
            call_id = part.get("id") or f"call_{key[:16]}{number}"
            items.append(
                {
                    "id": f"fc_{key}{number}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": part.get("name"),
                    "arguments": arguments_text(part.get("arguments")),
                }
            )
        elif kind == "reasoning":
            summary = [{"type": "summary_text", "text": part.get("content") or ""}]
            items.append({"id": f"rs_{key}{number}", "type": "reasoning", "summary": summary})
        else:
            items.append(dict(part))
    return items


def response_body(view: OutputView) -> dict[str, Any]:
    key = _key(view)
    messages = view.messages
    parts = [p for m in messages for p in parts_of(m)]
    finish = as_dict(messages[-1]).get("finish_reason") if messages else None
    status, incomplete = "completed", None
    if finish in (FINISH_LENGTH, FINISH_CONTENT_FILTER):
        reason = "max_output_tokens" if finish == FINISH_LENGTH else "content_filter"
        status, incomplete = "incomplete", {"reason": reason}
    inputs = as_int(view.usage.get("input_tokens"))
    outputs = as_int(view.usage.get("output_tokens"))
    return {
        "id": view.response_id or f"resp_{key}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": None,
        "model": view.model or "unknown",
        "output": _output_items(parts, key),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": inputs,
            "input_tokens_details": {
                "cache_write_tokens": as_int(view.usage.get("cache_creation.input_tokens")),
                "cached_tokens": _cached(view.usage),
            },
            "output_tokens": outputs,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inputs + outputs,
        },
    }
