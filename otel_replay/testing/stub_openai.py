"""The stub upstream's OpenAI surface: Chat Completions (plain and streamed, as Azure
streams them too), Responses, Completions, embeddings and models, answered the way the
real API does."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from otel_replay.testing.stub_turns import (
    Reply,
    digest,
    first_param,
    has_tool_result,
    last_text,
    reply_to,
    sse,
    tokens,
    words,
)

__all__ = ["chat", "completions", "embeddings", "model", "responses"]


# The first chunk of an Azure OpenAI chat stream: no choices, the prompt's filter results.
_AZURE_FILTER_CHUNK = {
    "id": "",
    "object": "",
    "created": 0,
    "model": "",
    "choices": [],
    "prompt_filter_results": [
        {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}
    ],
}


def _chat_turn(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    if tools and not has_tool_result(messages):
        fn = tools[0].get("function", tools[0])
        name = fn.get("name", "tool")
        args = {first_param(fn.get("parameters")): last_text(messages)}
        return "", {"id": "call_" + digest(body, 16), "name": name, "arguments": args}
    return reply_to(last_text(messages)), None


def chat(body: dict[str, Any], azure: bool = False) -> Reply:
    """A Chat Completions answer: the body, or the stream's chunks when asked to stream
    (an Azure stream opens with the prompt-filter chunk)."""
    text, call = _chat_turn(body)
    model = body.get("model", "stub-model")
    cid = "chatcmpl-" + digest(body)
    usage = _usage_openai(body, text or json.dumps(call))
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if call:
            message["tool_calls"] = [_openai_call(call)]
        return {
            "id": cid,
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if call else "stop",
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    chunks = [chunk({"role": "assistant", "content": ""})]
    if azure:
        chunks.insert(0, sse(_AZURE_FILTER_CHUNK))
    if call:
        head = {
            "index": 0,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        arguments = json.dumps(call["arguments"])
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
            chunks.append(chunk(delta))
    else:
        chunks.extend(chunk({"content": word}) for word in words(text))
    chunks.append(chunk({}, "tool_calls" if call else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(
            sse(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    chunks.append(sse("[DONE]"))
    return chunks


def responses(body: dict[str, Any], scripted: list[dict[str, Any]] | None = None) -> Reply:
    """A Responses API answer: the response, or its typed events when asked to stream.
    ``scripted`` output items (a ``function_call``, a ``custom_tool_call``, a ``message``)
    replace the computed answer."""
    raw_input = body.get("input")
    items = (
        [{"role": "user", "content": raw_input}]
        if isinstance(raw_input, str)
        else (raw_input or [])
    )
    tools = body.get("tools") or []
    rid = "resp_" + digest(body)
    output: list[dict[str, Any]]
    if scripted:
        output = [
            {"id": f"item_{digest(body)}_{n}", "status": "completed", **item}
            for n, item in enumerate(scripted)
        ]
        text = json.dumps(output)
    elif tools and not has_tool_result(items):
        args = json.dumps({first_param(tools[0].get("parameters")): last_text(items)})
        output = [
            {
                "type": "function_call",
                "id": "fc_" + digest(body),
                "call_id": "call_" + digest(body, 16),
                "name": tools[0].get("name", "tool"),
                "arguments": args,
                "status": "completed",
            }
        ]
        text = args
    else:
        text = reply_to(last_text(items))
        output = [
            {
                "type": "message",
                "id": "msg_" + digest(body),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
    usage = {
        "input_tokens": tokens(json.dumps(items)),
        "output_tokens": tokens(text),
        "total_tokens": tokens(json.dumps(items)) + tokens(text),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    base = {
        "id": rid,
        "object": "response",
        "created_at": 1700000000,
        "model": body.get("model", "stub-model"),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": tools,
        "instructions": body.get("instructions"),
    }
    done = {**base, "status": "completed", "output": output, "usage": usage}
    if not body.get("stream"):
        return done
    seq = iter(range(1_000_000))
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind))

    emit("response.created", response={**base, "status": "in_progress", "output": []})
    emit("response.in_progress", response={**base, "status": "in_progress", "output": []})
    for index, item in enumerate(output):
        _item_events(emit, index, item)
    emit("response.completed", response=done)
    return events


Emit = Callable[..., None]


def _item_events(emit: Emit, index: int, item: dict[str, Any]) -> None:
    """The stream events of one output item, as the Responses API sends them."""
    kind = item["type"]
    where = {"item_id": item["id"], "output_index": index}
    if kind in ("function_call", "custom_tool_call"):
        field = "arguments" if kind == "function_call" else "input"
        emit("response.output_item.added", output_index=index, item={**item, field: ""})
        emit(f"response.{kind}_{field}.delta", **where, delta=item[field])
        emit(f"response.{kind}_{field}.done", **where, **{field: item[field]})
    elif kind == "message":
        text = "".join(part.get("text", "") for part in item.get("content", []))
        emit(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "content": []},
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        emit("response.content_part.added", **where, content_index=0, part=part)
        for word in words(text):
            emit("response.output_text.delta", **where, content_index=0, delta=word, logprobs=[])
        emit("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
        emit("response.content_part.done", **where, content_index=0, part={**part, "text": text})
    emit("response.output_item.done", output_index=index, item=item)


def completions(body: dict[str, Any]) -> dict[str, Any]:
    """A legacy Completions answer."""
    text = reply_to(body.get("prompt", ""))
    return {
        "id": "cmpl-" + digest(body),
        "object": "text_completion",
        "created": 1700000000,
        "model": body.get("model", "stub-model"),
        "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
        "usage": _usage_openai(body, text),
    }


def model(name: str) -> dict[str, Any]:
    """A ``/v1/models`` entry."""
    return {"id": name, "object": "model", "created": 1700000000, "owned_by": "stub"}


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
    }


def _usage_openai(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = tokens(json.dumps(body.get("messages") or body.get("prompt") or ""))
    completion = tokens(text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """Eight numbers per input, derived from its text."""
    raw = body.get("input", "")
    inputs = raw if isinstance(raw, list) else [raw]
    data = []
    for i, item in enumerate(inputs):
        hashed = hashlib.sha256(json.dumps(item).encode()).digest()
        vector = [round(b / 255.0, 6) for b in hashed[:8]]
        data.append({"object": "embedding", "index": i, "embedding": vector})
    count = sum(tokens(json.dumps(i)) for i in inputs)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "stub-embedding"),
        "usage": {"prompt_tokens": count, "total_tokens": count},
    }
