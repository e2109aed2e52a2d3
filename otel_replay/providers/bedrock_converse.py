"""Bedrock's Converse API: requests into the canonical parts form, responses into the
semantic-convention view and back, and ``ConverseStream`` events ⇄ a Converse body.

Content blocks are objects with one member: ``text``, ``toolUse`` → ``tool_call``,
``toolResult`` → ``tool_call_response``, ``reasoningContent`` → ``reasoning``; anything
else (images, documents, guard content) stays whole as a generic part, and ``cachePoint``
is dropped (it changes caching, not the answer). The stream is ``messageStart``, per
content block an optional ``contentBlockStart`` (tool use), ``contentBlockDelta`` events
and ``contentBlockStop``, then ``messageStop`` with the stop reason and ``metadata`` with
usage and metrics; each event's payload is the event's members, its name the
``:event-type`` header.
"""

from __future__ import annotations

from typing import Any

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
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
    as_str,
    drop_empty_text,
    function_tool,
    loads_or_none,
    message,
    parse_arguments,
    parts_of,
    pieces,
    raw_part,
    reasoning_part,
    semconv_usage,
    sse,
    text_or_parts,
    text_part,
    tool_call_part,
    tool_calls_of,
    tool_response_part,
)

__all__ = ["body_from_stream", "canonical", "response_from_view", "stream_from_body", "view"]

_CONSUMED = frozenset({"modelId", "messages", "system", "toolConfig"})
_FROM_STOP = {
    "end_turn": FINISH_STOP,
    "stop_sequence": FINISH_STOP,
    "max_tokens": FINISH_LENGTH,
    "tool_use": FINISH_TOOL_CALL,
    "guardrail_intervened": FINISH_CONTENT_FILTER,
    "content_filtered": FINISH_CONTENT_FILTER,
}
_TO_STOP = {
    FINISH_STOP: "end_turn",
    FINISH_LENGTH: "max_tokens",
    FINISH_TOOL_CALL: "tool_use",
    FINISH_CONTENT_FILTER: "content_filtered",
}
_PADDING = "p"  # Bedrock pads stream payloads with a field of filler characters


# --- requests ---------------------------------------------------------------------------


def block_part(block: JSON) -> dict[str, Any] | None:
    """One content block as a semconv part (None for a cache point)."""
    if not isinstance(block, dict):
        return raw_part(block)
    if "cachePoint" in block:
        return None
    if isinstance(block.get("text"), str):
        return text_part(block["text"])
    if isinstance(block.get("toolUse"), dict):
        use = block["toolUse"]
        return tool_call_part(use.get("toolUseId"), use.get("name"), use.get("input"))
    if isinstance(block.get("toolResult"), dict):
        result = block["toolResult"]
        response = text_or_parts(result.get("content"), content_parts)
        part = tool_response_part(result.get("toolUseId"), response)
        if result.get("status") == "error":
            part["is_error"] = True
        return part
    reasoning = as_dict(as_dict(block.get("reasoningContent")).get("reasoningText"))
    if isinstance(reasoning.get("text"), str):
        return reasoning_part(reasoning["text"])
    return {"type": next(iter(block), "unknown"), **block}


def content_parts(content: JSON) -> list[dict[str, Any]]:
    """Parts for a list of content blocks (a tool result's ``json`` block stays whole)."""
    parts = [block_part(block) for block in as_list(content)]
    return drop_empty_text([part for part in parts if part is not None])


def _tools(config: JSON) -> JSON:
    tools = as_dict(config).get("tools")
    if tools is None:
        return None
    out: list[JSON] = []
    for tool in as_list(tools):
        spec = as_dict(tool).get("toolSpec")
        if not isinstance(spec, dict):
            if not (isinstance(tool, dict) and "cachePoint" in tool):
                out.append(raw_part(tool))
            continue
        schema = as_dict(spec.get("inputSchema")).get("json")
        extra = {k: v for k, v in spec.items() if k not in ("name", "description", "inputSchema")}
        out.append(function_tool(spec.get("name"), spec.get("description"), schema, extra))
    return out


def canonical(endpoint: str, model: str | None, body: dict[str, Any]) -> CanonicalRequest:
    """The canonical request of a Converse body (its model is in the path)."""
    raw_messages = body.get("messages")
    messages = None
    if isinstance(raw_messages, list):
        messages = [
            message(m.get("role"), content_parts(m.get("content")))
            if isinstance(m, dict)
            else message("user", [raw_part(m)])
            for m in raw_messages
        ]
    system = body.get("system")
    params = {k: v for k, v in body.items() if k not in _CONSUMED}
    config = {k: v for k, v in as_dict(body.get("toolConfig")).items() if k != "tools"}
    if config:
        params["toolConfig"] = config
    return CanonicalRequest(
        endpoint=endpoint,
        model=model,
        system=None if system is None else content_parts(system),
        messages=messages,
        tools=_tools(body.get("toolConfig")),
        params=params,
    )


# --- responses --------------------------------------------------------------------------


def view(body: JSON) -> OutputView:
    """The semantic-convention view of a Converse response body."""
    data = as_dict(body)
    output = as_dict(as_dict(data.get("output")).get("message"))
    usage = as_dict(data.get("usage"))
    names = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    semconv = semconv_usage(usage, *names) if usage else {}
    if not output:
        return OutputView(usage=semconv)
    stop = data.get("stopReason")
    return OutputView(
        messages=[
            {
                "role": output.get("role", "assistant"),
                "parts": content_parts(output.get("content")),
                "finish_reason": _FROM_STOP.get(str(stop), stop),
            }
        ],
        usage=semconv,
    )


def _output_block(part: dict[str, Any], number: int) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"text": part.get("content") or ""}
    if kind == "tool_call":
        arguments = parse_arguments(part.get("arguments"))
        return {
            "toolUse": {
                "toolUseId": part.get("id") or f"tooluse_{number}",
                "name": part.get("name"),
                "input": arguments if isinstance(arguments, dict) else {"input": arguments},
            }
        }
    if kind == "reasoning":
        return {"reasoningContent": {"reasoningText": {"text": part.get("content") or ""}}}
    return {str(kind): {k: v for k, v in part.items() if k != "type"}}


def response_from_view(out: OutputView) -> JSON:
    """A Converse response body rebuilt from a trace's semantic-convention view."""
    parts = [p for m in out.messages for p in parts_of(m)]
    finish = as_dict(out.messages[-1]).get("finish_reason") if out.messages else None
    stop = _TO_STOP.get(str(finish)) or (
        finish if finish in _FROM_STOP else ("tool_use" if tool_calls_of(parts) else "end_turn")
    )
    inputs, outputs = as_int(out.usage.get("input_tokens")), as_int(out.usage.get("output_tokens"))
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [_output_block(p, n) for n, p in enumerate(parts)],
            }
        },
        "stopReason": stop,
        "usage": {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs},
        "metrics": {"latencyMs": 0},
    }


# --- streams ----------------------------------------------------------------------------


def _block_events(index: int, block: dict[str, Any]) -> list[SSEEvent]:
    events: list[SSEEvent] = []

    def delta(value: dict[str, Any]) -> None:
        events.append(sse({"delta": value, "contentBlockIndex": index}, "contentBlockDelta"))

    if isinstance(block.get("text"), str):
        for piece in pieces(block["text"]):
            delta({"text": piece})
    elif isinstance(block.get("toolUse"), dict):
        use = block["toolUse"]
        start = {"toolUseId": use.get("toolUseId"), "name": use.get("name")}
        events.append(
            sse({"start": {"toolUse": start}, "contentBlockIndex": index}, "contentBlockStart")
        )
        delta({"toolUse": {"input": arguments_text(use.get("input"))}})
    elif isinstance(block.get("reasoningContent"), dict):
        text = as_dict(block["reasoningContent"].get("reasoningText"))
        for piece in pieces(as_str(text.get("text"))):
            delta({"reasoningContent": {"text": piece}})
        if "signature" in text:
            delta({"reasoningContent": {"signature": text["signature"]}})
    else:
        delta(block)
    events.append(sse({"contentBlockIndex": index}, "contentBlockStop"))
    return events


def stream_from_body(body: JSON) -> list[SSEEvent]:
    """The ``ConverseStream`` events equivalent to a Converse response body."""
    data = as_dict(body)
    output = as_dict(as_dict(data.get("output")).get("message"))
    events = [sse({"role": output.get("role", "assistant")}, "messageStart")]
    for index, block in enumerate(as_list(output.get("content"))):
        events.extend(_block_events(index, as_dict(block)))
    stop: dict[str, Any] = {"stopReason": data.get("stopReason", "end_turn")}
    if "additionalModelResponseFields" in data:
        stop["additionalModelResponseFields"] = data["additionalModelResponseFields"]
    events.append(sse(stop, "messageStop"))
    metadata = {k: data[k] for k in ("usage", "metrics", "trace") if k in data}
    events.append(sse(metadata, "metadata"))
    return events


def _apply_delta(block: dict[str, Any], delta: dict[str, Any]) -> None:
    if isinstance(delta.get("text"), str):
        block["text"] = block.get("text", "") + delta["text"]
    elif isinstance(delta.get("toolUse"), dict):
        use = block.setdefault("toolUse", {})
        use["_input"] = use.get("_input", "") + as_str(delta["toolUse"].get("input"))
    elif isinstance(delta.get("reasoningContent"), dict):
        text = block.setdefault("reasoningContent", {}).setdefault("reasoningText", {})
        part = delta["reasoningContent"]
        if isinstance(part.get("text"), str):
            text["text"] = text.get("text", "") + part["text"]
        if "signature" in part:
            text["signature"] = part["signature"]
    else:
        block.update(delta)


def body_from_stream(events: list[SSEEvent]) -> JSON:
    """The Converse response body equivalent to recorded ``ConverseStream`` events."""
    role = "assistant"
    blocks: dict[int, dict[str, Any]] = {}
    body: dict[str, Any] = {}
    for event in events:
        data = as_dict(loads_or_none(event.data))
        data.pop(_PADDING, None)
        index = as_int(data.get("contentBlockIndex"))
        if event.event == "messageStart":
            role = as_str(data.get("role")) or role
        elif event.event == "contentBlockStart":
            start = as_dict(as_dict(data.get("start")).get("toolUse"))
            blocks.setdefault(index, {})["toolUse"] = dict(start)
        elif event.event == "contentBlockDelta":
            _apply_delta(blocks.setdefault(index, {}), as_dict(data.get("delta")))
        elif event.event == "messageStop":
            body["stopReason"] = data.get("stopReason")
            if "additionalModelResponseFields" in data:
                body["additionalModelResponseFields"] = data["additionalModelResponseFields"]
        elif event.event == "metadata":
            body.update({k: v for k, v in data.items() if k in ("usage", "metrics", "trace")})
    content = []
    for index in sorted(blocks):
        block = blocks[index]
        use = block.get("toolUse")
        if isinstance(use, dict) and "_input" in use:
            text = use.pop("_input")
            parsed = loads_or_none(text) if text else {}
            use["input"] = parsed if parsed is not None else text
        content.append(block)
    return {"output": {"message": {"role": role, "content": content}}, **body}
