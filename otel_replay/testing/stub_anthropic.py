"""The stub upstream's Anthropic surface: Messages, plain and streamed, answered the way
the real API does."""

from __future__ import annotations

import json
from typing import Any

from otel_replay.testing.stub_turns import (
    Reply,
    digest,
    directive,
    first_param,
    has_tool_result,
    last_text,
    reply_to,
    sse,
    tokens,
    words,
)

__all__ = ["messages"]


def _tool_call(tools: list[Any], messages: list[Any]) -> tuple[str, dict[str, Any]] | None:
    """The tool the model calls, if any: the one a user's directive names, else the first
    offered, until a tool result is in the conversation."""
    if not tools or has_tool_result(messages):
        return None
    asked = directive(messages)
    if asked is not None:
        offered = {t.get("name") for t in tools if isinstance(t, dict)}
        if asked.tool is None or asked.tool not in offered:
            return None
        return asked.tool, asked.arguments or {}
    first = tools[0]
    return first.get("name", "tool"), {first_param(first.get("input_schema")): last_text(messages)}


def messages(body: dict[str, Any]) -> Reply:
    """A Messages answer: the message, or its events when asked to stream."""
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    mid = "msg_" + digest(body)
    model = body.get("model", "stub-model")
    content: list[dict[str, Any]]
    call = _tool_call(tools, messages)
    if call is not None:
        name, args = call
        content = [
            {"type": "tool_use", "id": "toolu_" + digest(body, 16), "name": name, "input": args}
        ]
        stop = "tool_use"
        out_text = json.dumps(args)
    else:
        out_text = reply_to(last_text(messages))
        content = [{"type": "text", "text": out_text}]
        stop = "end_turn"
    usage = {
        "input_tokens": tokens(json.dumps(messages)),
        "output_tokens": tokens(out_text),
    }
    message = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return message
    events = [
        sse(
            {
                "type": "message_start",
                "message": {
                    **message,
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
                },
            },
            event="message_start",
        )
    ]
    block = content[0]
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        events.append(
            sse(
                {"type": "content_block_start", "index": 0, "content_block": start},
                event="content_block_start",
            )
        )
        partial = json.dumps(block["input"])
        for piece in (partial[: len(partial) // 2], partial[len(partial) // 2 :]):
            events.append(
                sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                    event="content_block_delta",
                )
            )
    else:
        events.append(
            sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                event="content_block_start",
            )
        )
        events.extend(
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": word},
                },
                event="content_block_delta",
            )
            for word in words(out_text)
        )
    events.append(sse({"type": "content_block_stop", "index": 0}, event="content_block_stop"))
    events.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
            event="message_delta",
        )
    )
    events.append(sse({"type": "message_stop"}, event="message_stop"))
    return events
