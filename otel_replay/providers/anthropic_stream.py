"""Anthropic Messages streams ⇄ non-streamed ``message`` bodies.

The stream is ``message_start`` (the message with empty content), a ``ping``, then per
content block ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``, ``thinking_delta`` + ``signature_delta``, ``citations_delta``) /
``content_block_stop``, then ``message_delta`` with the stop reason and the final usage,
and ``message_stop``. Every event carries its type as the ``event:`` name.
"""

from __future__ import annotations

import json
from typing import Any

from otel_replay.core.exchange import JSON, SSEEvent
from otel_replay.providers.parts import (
    as_dict,
    as_int,
    as_list,
    as_str,
    dumps,
    event_payloads,
    pieces,
    sse,
)

_TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_DELTA_USAGE = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
    "server_tool_use",
)


def _event(kind: str, **fields: JSON) -> SSEEvent:
    return sse({"type": kind, **fields}, event=kind)


def _block_events(index: int, block: dict[str, Any]) -> list[SSEEvent]:
    """start / deltas / stop for one content block."""
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        text = as_str(block.get("text"))
        start = {k: v for k, v in block.items() if k != "citations"}
        start["text"] = ""
        citations = as_list(block.get("citations"))
        if "citations" in block and block["citations"] is not None:
            start["citations"] = []
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(text)]
        deltas += [{"type": "citations_delta", "citation": c} for c in citations]
    elif kind == "thinking":
        thinking = as_str(block.get("thinking"))
        start = {**block, "thinking": ""}
        if "signature" in block:
            start["signature"] = ""
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in pieces(thinking)]
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind in _TOOL_BLOCKS:
        start = {**block, "input": {}}
        arguments = dumps(block.get("input", {}))
        deltas = [
            {"type": "input_json_delta", "partial_json": piece} for piece in pieces(arguments)
        ]
    else:
        start = block
    events = [_event("content_block_start", index=index, content_block=start)]
    events += [_event("content_block_delta", index=index, delta=delta) for delta in deltas]
    events.append(_event("content_block_stop", index=index))
    return events


def messages_stream(body: JSON) -> list[SSEEvent]:
    """The event sequence the Messages API streams for a ``message`` body."""
    body = as_dict(body)
    usage = as_dict(body.get("usage"))
    opening = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    if "stop_details" in body:
        opening["stop_details"] = None
    if usage:
        opening["usage"] = {**usage, "output_tokens": min(1, as_int(usage.get("output_tokens")))}
    events = [_event("message_start", message=opening), _event("ping")]
    for index, block in enumerate(as_list(body.get("content"))):
        events += _block_events(index, as_dict(block))
    delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
    if "stop_details" in body:
        delta["stop_details"] = body["stop_details"]
    final_usage = {k: usage[k] for k in _DELTA_USAGE if k in usage}
    events.append(_event("message_delta", delta=delta, usage=final_usage))
    events.append(_event("message_stop"))
    return events


def _finish_block(block: dict[str, Any], partial: str | None) -> None:
    if partial is None:
        return
    try:
        block["input"] = json.loads(partial) if partial else {}
    except ValueError:
        block["input"] = partial


def _apply_delta(
    block: dict[str, Any], delta: dict[str, Any], partial: dict[int, str], index: int
) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = str(block.get("text", "")) + str(delta.get("text", ""))
    elif kind == "input_json_delta":
        partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
    elif kind == "thinking_delta":
        block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        block["citations"] = [*as_list(block.get("citations")), delta.get("citation")]


def messages_body(events: list[SSEEvent]) -> JSON:
    """The ``message`` body an event sequence adds up to (tool inputs parsed, usage final).
    The payloads are parsed afresh here and held by nothing else: folded into as they are."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for payload in event_payloads(events):
        kind = payload.get("type")
        index = payload.get("index")
        if kind == "message_start":
            message = as_dict(payload.get("message"))
        elif kind == "content_block_start" and isinstance(index, int):
            blocks[index] = as_dict(payload.get("content_block"))
        elif kind == "content_block_delta" and index in blocks:
            _apply_delta(blocks[index], as_dict(payload.get("delta")), partial, index)
        elif kind == "content_block_stop" and index in blocks:
            _finish_block(blocks[index], partial.pop(index, None))
        elif kind == "message_delta":
            message.update(as_dict(payload.get("delta")))
            usage = as_dict(message.get("usage"))
            usage.update({k: v for k, v in as_dict(payload.get("usage")).items() if v is not None})
            message["usage"] = usage
    for index, text in partial.items():
        _finish_block(blocks[index], text)
    if not message and not blocks:
        return {}
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message
