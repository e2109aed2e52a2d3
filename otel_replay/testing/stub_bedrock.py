"""The stub upstream's AWS Bedrock Runtime surface: ``Converse``, ``ConverseStream``,
``InvokeModel`` and ``InvokeModelWithResponseStream`` (Anthropic's Messages format),
answered the way the real service does, streams in AWS event-stream framing.

The framing is written out here on its own (prelude, string headers, payload, CRC32s),
independently of otel-replay's codec, so a replay through the gateway is checked against
it by boto3's own parser. Event payloads carry Bedrock's ``p`` padding field.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

from otel_replay.testing import stub_anthropic
from otel_replay.testing.stub_turns import digest, first_param, reply_to, tokens, words

__all__ = ["CONTENT_TYPE", "converse", "exception", "frame", "invoke", "split"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_PADDING = "abcdefghijklmnopqrstuvwxyzABCDEF"


def split(path: str) -> tuple[str, str]:
    """(model id, action) of ``/model/{modelId}/{action}``."""
    model, _, action = path[len("/model/") :].rpartition("/")
    return model, action


def frame(payload: bytes, **headers: str) -> bytes:
    """One event-stream message (header names given with ``_`` for ``-``, and ``:``
    prepended)."""
    head = b""
    for name, value in headers.items():
        key = (":" + name.replace("_", "-")).encode()
        text = value.encode()
        head += bytes([len(key)]) + key + bytes([7]) + struct.pack(">H", len(text)) + text
    total = 16 + len(head) + len(payload)
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(name: str, data: dict[str, Any]) -> bytes:
    payload = json.dumps({**data, "p": _PADDING[: 1 + len(name) % 20]}).encode()
    return frame(payload, event_type=name, content_type="application/json", message_type="event")


def exception(kind: str) -> bytes:
    """An exception message in a stream (boto3 raises it as ``EventStreamError``)."""
    payload = json.dumps({"message": f"stub: {kind}"}).encode()
    return frame(
        payload, exception_type=kind, content_type="application/json", message_type="exception"
    )


def _last_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        for block in reversed(message.get("content") or []):
            if isinstance(block.get("text"), str):
                return str(block["text"])
            result = block.get("toolResult")
            if isinstance(result, dict):
                inner = result.get("content") or [{}]
                return str(inner[0].get("text", json.dumps(inner[0].get("json"))))
    return ""


def converse(body: dict[str, Any], stream: bool) -> dict[str, Any] | list[bytes]:
    """A Converse answer: the response body, or the ConverseStream messages."""
    messages = body.get("messages") or []
    tools = (body.get("toolConfig") or {}).get("tools") or []
    answered = any("toolResult" in b for m in messages for b in m.get("content") or [])
    block: dict[str, Any]
    if tools and not answered:
        spec = tools[0].get("toolSpec") or {}
        args = {first_param((spec.get("inputSchema") or {}).get("json")): _last_text(messages)}
        use = {"toolUseId": "tooluse_" + digest(body, 22), "name": spec.get("name"), "input": args}
        block, stop, out_text = {"toolUse": use}, "tool_use", json.dumps(args)
    else:
        out_text = reply_to(_last_text(messages))
        block, stop = {"text": out_text}, "end_turn"
    usage = {"inputTokens": tokens(json.dumps(messages)), "outputTokens": tokens(out_text)}
    usage["totalTokens"] = usage["inputTokens"] + usage["outputTokens"]
    metrics = {"latencyMs": 7}
    if not stream:
        message = {"role": "assistant", "content": [block]}
        return {
            "output": {"message": message},
            "stopReason": stop,
            "usage": usage,
            "metrics": metrics,
        }
    chunks = [event("messageStart", {"role": "assistant"})]
    if "toolUse" in block:
        start = {"toolUseId": block["toolUse"]["toolUseId"], "name": block["toolUse"]["name"]}
        chunks.append(
            event("contentBlockStart", {"start": {"toolUse": start}, "contentBlockIndex": 0})
        )
        partial = json.dumps(block["toolUse"]["input"])
        for piece in (partial[: len(partial) // 2], partial[len(partial) // 2 :]):
            delta = {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": 0}
            chunks.append(event("contentBlockDelta", delta))
    else:
        for word in words(out_text):
            chunks.append(
                event("contentBlockDelta", {"delta": {"text": word}, "contentBlockIndex": 0})
            )
    chunks.append(event("contentBlockStop", {"contentBlockIndex": 0}))
    chunks.append(event("messageStop", {"stopReason": stop}))
    chunks.append(event("metadata", {"usage": usage, "metrics": metrics}))
    return chunks


def invoke(model: str, body: dict[str, Any], stream: bool) -> dict[str, Any] | list[bytes]:
    """An InvokeModel answer for an Anthropic model: the message, or its stream as
    ``chunk`` events whose ``bytes`` hold each Anthropic event."""
    reply = stub_anthropic.messages({**body, "model": model, "stream": stream})
    if isinstance(reply, dict):
        return reply
    chunks = []
    for sse in reply:
        data = sse.decode().split("data: ", 1)[1].strip()
        payload = {"bytes": base64.b64encode(data.encode()).decode()}
        chunks.append(
            frame(
                json.dumps(payload).encode(),
                event_type="chunk",
                content_type="application/json",
                message_type="event",
            )
        )
    return chunks
