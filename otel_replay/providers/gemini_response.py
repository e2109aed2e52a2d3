"""Gemini API answers: ``GenerateContentResponse`` bodies, their ``alt=sse`` streams (one
response chunk per event, no closing sentinel: the last chunk carries ``finishReason``)
and their semantic-convention views."""

from __future__ import annotations

from typing import Any

from otel_replay.core import genai
from otel_replay.core.exchange import JSON, SSEEvent
from otel_replay.providers.base import OutputView
from otel_replay.providers.gemini_request import content_parts
from otel_replay.providers.parts import (
    as_dict,
    as_int,
    as_list,
    event_payloads,
    parse_arguments,
    parts_of,
    pieces,
    short_hash,
    sse,
    tool_calls_of,
)

__all__ = [
    "body_from_stream",
    "response_from_view",
    "stream_done",
    "stream_from_body",
    "view_from_response",
]

FINISH_STOP, FINISH_LENGTH = genai.FINISH_STOP, genai.FINISH_LENGTH
FINISH_TOOL_CALL, FINISH_CONTENT_FILTER = genai.FINISH_TOOL_CALL, genai.FINISH_CONTENT_FILTER
_FROM_FINISH = {
    "STOP": FINISH_STOP,
    "MAX_TOKENS": FINISH_LENGTH,
    "SAFETY": FINISH_CONTENT_FILTER,
    "RECITATION": FINISH_CONTENT_FILTER,
    "BLOCKLIST": FINISH_CONTENT_FILTER,
    "PROHIBITED_CONTENT": FINISH_CONTENT_FILTER,
    "SPII": FINISH_CONTENT_FILTER,
}
_TO_FINISH = {
    FINISH_STOP: "STOP",
    FINISH_TOOL_CALL: "STOP",  # Gemini ends a turn of function calls with STOP
    "tool_calls": "STOP",
    FINISH_LENGTH: "MAX_TOKENS",
    FINISH_CONTENT_FILTER: "SAFETY",
}
_CACHE_READ = "cache_read.input_tokens"


# -- streams -----------------------------------------------------------------------------


def stream_from_body(operation: str, body: JSON) -> list[SSEEvent]:
    """The ``alt=sse`` stream of a response: its text in word-sized chunks, a function
    call whole in one, and the last chunk carrying the finish reason and usage."""
    data = as_dict(body)
    candidates = as_list(data.get("candidates"))
    if operation != "chat" or len(candidates) != 1 or not isinstance(candidates[0], dict):
        return [sse(body)]
    candidate = candidates[0]
    content = as_dict(candidate.get("content"))
    role = content.get("role", "model")
    frame = {k: v for k, v in data.items() if k not in ("candidates", "usageMetadata")}
    chunks: list[dict[str, Any]] = []
    for raw in as_list(content.get("parts")):
        text = as_dict(raw).get("text")
        if isinstance(text, str) and set(raw) <= {"text", "thought"}:
            extra = {"thought": True} if raw.get("thought") else {}
            chunks.extend({"text": piece, **extra} for piece in pieces(text))
        else:
            chunks.append(raw)
    chunks = chunks or [{"text": ""}]
    events = []
    last = len(chunks) - 1
    for i, chunk in enumerate(chunks):
        out: dict[str, Any] = {"content": {"role": role, "parts": [chunk]}, "index": 0}
        if i == last:
            out.update({k: v for k, v in candidate.items() if k not in ("content", "index")})
        payload: dict[str, Any] = {"candidates": [out]}
        if i == last and "usageMetadata" in data:
            payload["usageMetadata"] = data["usageMetadata"]
        payload.update(frame)
        events.append(sse(payload))
    return events


def body_from_stream(operation: str, events: list[SSEEvent]) -> JSON:
    """The response a stream adds up to: text chunks joined (reasoning apart), other
    parts in order, the last finish reason, usage and ids."""
    payloads = event_payloads(events)
    if operation != "chat":
        return payloads[-1] if payloads else None
    body: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    candidate: dict[str, Any] = {}
    role = "model"
    for payload in payloads:
        if "error" in payload:
            return payload
        for key, value in payload.items():
            if key != "candidates":
                body[key] = value
        for raw in as_list(payload.get("candidates"))[:1]:
            chunk = as_dict(raw)
            content = as_dict(chunk.get("content"))
            role = content.get("role", role)
            for piece in as_list(content.get("parts")):
                _add_part(parts, as_dict(piece))
            candidate.update({k: v for k, v in chunk.items() if k != "content"})
    candidate["content"] = {"role": role, "parts": parts}
    candidate.setdefault("index", 0)
    return {"candidates": [candidate], **body}


def _add_part(parts: list[dict[str, Any]], piece: dict[str, Any]) -> None:
    text = piece.get("text")
    previous = parts[-1] if parts else None
    joins = (
        isinstance(text, str)
        and previous is not None
        and isinstance(previous.get("text"), str)
        and bool(previous.get("thought")) == bool(piece.get("thought"))
        and set(piece) <= {"text", "thought"}
        and set(previous) <= {"text", "thought"}
    )
    if joins:
        assert previous is not None
        previous["text"] += text
    else:
        parts.append(dict(piece))


def stream_done(events: list[SSEEvent]) -> bool:
    """Whether the last event closes the stream: it carries a finish reason or an error."""
    payloads = event_payloads(events[-1:])
    if not payloads:
        return False
    last = payloads[-1]
    return "error" in last or any(
        "finishReason" in as_dict(c) for c in as_list(last.get("candidates"))
    )


# -- semantic-convention views ------------------------------------------------------------


def _semconv_usage(usage: dict[str, Any]) -> dict[str, int]:
    result = {
        "input_tokens": as_int(usage.get("promptTokenCount")),
        "output_tokens": as_int(usage.get("candidatesTokenCount"))
        + as_int(usage.get("thoughtsTokenCount")),
    }
    if "cachedContentTokenCount" in usage:
        result[_CACHE_READ] = as_int(usage.get("cachedContentTokenCount"))
    return result


def view_from_response(operation: str, body: JSON) -> OutputView:
    data = as_dict(body)
    if operation == "count_tokens":
        return OutputView(usage={"input_tokens": as_int(data.get("totalTokens"))})
    if operation == "embeddings":
        found = [as_dict(data.get("embedding"))] if "embedding" in data else []
        found += [as_dict(e) for e in as_list(data.get("embeddings"))]
        return OutputView(embeddings=[as_list(e.get("values")) for e in found])
    messages = []
    for raw in as_list(data.get("candidates")):
        candidate = as_dict(raw)
        parts = content_parts(candidate.get("content"))
        finish = candidate.get("finishReason")
        reason = _FROM_FINISH.get(str(finish), str(finish).lower() if finish else None)
        if reason == FINISH_STOP and tool_calls_of(parts):
            reason = FINISH_TOOL_CALL
        messages.append({"role": "assistant", "parts": parts, "finish_reason": reason})
    usage = as_dict(data.get("usageMetadata"))
    return OutputView(
        messages=messages,
        response_id=data.get("responseId"),
        model=data.get("modelVersion"),
        usage=_semconv_usage(usage) if usage else {},
    )


def _output_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"text": part.get("content") or ""}
    if kind == "reasoning":
        return {"text": part.get("content") or "", "thought": True}
    if kind == "tool_call":
        call: dict[str, Any] = {"name": part.get("name")}
        arguments = parse_arguments(part.get("arguments"))
        call["args"] = arguments if isinstance(arguments, dict) else {"input": arguments}
        if part.get("id"):
            call["id"] = part["id"]
        return {"functionCall": call}
    rest = {k: v for k, v in part.items() if k != "type"}
    return {str(kind): rest}


def response_from_view(operation: str, view: OutputView) -> JSON:
    if operation == "count_tokens":
        return {"totalTokens": as_int(view.usage.get("input_tokens"))}
    if operation == "embeddings":
        vectors = view.embeddings or []
        if len(vectors) == 1:
            return {"embedding": {"values": vectors[0]}}
        return {"embeddings": [{"values": v} for v in vectors]}
    if operation == "models":
        return {"models": []}
    candidates = []
    for index, message in enumerate(view.messages or [{}]):
        finish = as_dict(message).get("finish_reason")
        reason = _TO_FINISH.get(str(finish), str(finish).upper() if finish else "STOP")
        parts = [_output_part(p) for p in parts_of(message)]
        candidates.append(
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": reason,
                "index": index,
            }
        )
    usage = view.usage
    body: dict[str, Any] = {"candidates": candidates}
    if usage:
        prompt, output = as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
        body["usageMetadata"] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        }
    body["modelVersion"] = view.model or "unknown"
    body["responseId"] = view.response_id or short_hash([view.messages, view.model])
    return body
