"""The stub upstream's Gemini API surface: generateContent, streamGenerateContent
(``alt=sse``), countTokens, embedContent and batchEmbedContents, answered the way the
real API does (written here apart from otel-replay's own Gemini code)."""

from __future__ import annotations

import json
import re
from typing import Any

from otel_replay.testing.stub_turns import (
    Reply,
    digest,
    first_param,
    reply_to,
    sse,
    tokens,
    words,
)

__all__ = ["answer", "is_gemini"]

_SCHEMA_KEYS = ("parameters", "parametersJsonSchema", "parameters_json_schema")
_PATH = re.compile(r"/(v1|v1beta|v1alpha)/models/([^/:]+):([A-Za-z]+)")


def is_gemini(path: str) -> bool:
    return _PATH.fullmatch(path) is not None


def _texts(contents: list[Any]) -> tuple[str, bool]:
    """The last text (or function response) of the conversation, and whether a function
    response is in it."""
    last, answered = "", False
    for content in contents:
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str) and part["text"]:
                last = part["text"]
            if isinstance(part.get("functionResponse"), dict):
                answered = True
                last = json.dumps(part["functionResponse"].get("response"))
    return last, answered


def _generate(model: str, body: dict[str, Any]) -> dict[str, Any]:
    contents = body.get("contents") or []
    last, answered = _texts(contents)
    declarations = [
        d for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []
    ]
    if declarations and not answered:
        declared = declarations[0]
        schema = next((declared[k] for k in _SCHEMA_KEYS if k in declared), None)
        args = {first_param(schema): last}
        parts: list[dict[str, Any]] = [
            {"functionCall": {"name": declarations[0].get("name", "tool"), "args": args}}
        ]
        out_text = json.dumps(args)
    else:
        out_text = reply_to(last)
        parts = [{"text": out_text}]
    prompt, output = tokens(json.dumps(contents)), tokens(out_text)
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        },
        "modelVersion": model,
        "responseId": digest(body, 20),
    }


def _stream(response: dict[str, Any]) -> list[bytes]:
    """The response as the API streams it: text a word per chunk, the finish reason and
    usage on the last chunk; no closing sentinel."""
    candidate = response["candidates"][0]
    parts = candidate["content"]["parts"]
    pieces: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part:
            pieces.extend({"text": w} for w in words(part["text"]))
        else:
            pieces.append(part)
    chunks = []
    for i, piece in enumerate(pieces):
        chunk: dict[str, Any] = {"content": {"role": "model", "parts": [piece]}, "index": 0}
        payload: dict[str, Any] = {"candidates": [chunk]}
        if i == len(pieces) - 1:
            chunk["finishReason"] = "STOP"
            payload["usageMetadata"] = response["usageMetadata"]
        payload["modelVersion"] = response["modelVersion"]
        payload["responseId"] = response["responseId"]
        chunks.append(sse(payload).replace(b"\n\n", b"\r\n\r\n"))
    return chunks


def _vector(text: str) -> list[float]:
    return [int(c, 16) / 16 for c in digest(text, 8)]


def _content_text(content: Any) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    return " ".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict))


def answer(path: str, body: dict[str, Any]) -> Reply | None:
    """The answer to a Gemini API model method; None for a method it does not know."""
    found = _PATH.fullmatch(path)
    assert found is not None
    model, method = found.group(2), found.group(3)
    if method == "generateContent":
        return _generate(model, body)
    if method == "streamGenerateContent":
        return _stream(_generate(model, body))
    if method == "countTokens":
        return {"totalTokens": tokens(json.dumps(body.get("contents") or []))}
    if method == "embedContent":
        return {"embedding": {"values": _vector(_content_text(body.get("content")))}}
    if method == "batchEmbedContents":
        requests = body.get("requests") or []
        return {
            "embeddings": [{"values": _vector(_content_text(r.get("content")))} for r in requests]
        }
    return None
