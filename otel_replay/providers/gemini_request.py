"""Reading Gemini API requests: paths and bodies into the canonical form.

The Gemini API names the model and the method in the path
(``/v1beta/models/{model}:generateContent``, ``:streamGenerateContent?alt=sse``,
``:countTokens``, ``:embedContent``, ``:batchEmbedContents``; ``/v1/...`` alike). Its
``contents`` are ``{"role": "user" | "model", "parts": [...]}`` with parts ``text``
(``thought: true`` for reasoning), ``functionCall``, ``functionResponse`` and data parts
(``inlineData``, ``fileData``, ...), which stay whole as generic parts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.core.memo import by_identity
from otel_replay.providers.parts import (
    as_dict,
    as_list,
    drop_empty_text,
    function_tool,
    message,
    raw_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_response_part,
)

__all__ = [
    "GEMINI_PATH",
    "METHOD_OPERATIONS",
    "canonical",
    "content_parts",
    "gemini_endpoint",
    "match_endpoint",
    "method_of",
    "model_of",
]

GEMINI_PATH = re.compile(r"/(v1|v1alpha|v1beta)/(models|tunedModels)/([^/:?]+):([A-Za-z]+)")
"""A Gemini API model method: version, collection, model, method."""
_MODEL_PATH = re.compile(
    r"/(v1|v1alpha|v1beta|v1beta1)/(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/google/)?"
    r"(models|tunedModels)/([^/:?]+):([A-Za-z]+)"
)
"""The same on the Gemini API or on Vertex AI (``publishers/google/models/...``, after a
project and location or not), groups alike."""

METHOD_OPERATIONS: Mapping[str, str] = {
    "generateContent": "chat",
    "streamGenerateContent": "chat",
    "countTokens": "count_tokens",
    "embedContent": "embeddings",
    "batchEmbedContents": "embeddings",
}
"""The exchange operation of each model method."""

_STREAM_METHOD = "streamGenerateContent"
_ROLES = {"model": "assistant", "user": "user", "function": "tool"}
_DROP = frozenset({"thoughtSignature"})  # opaque, sent back as received: not the question
_CONSUMED = frozenset({"contents", "systemInstruction", "tools", "model"})
# a declaration's schema: OpenAPI form, JSON Schema form (the SDK sends it in snake case;
# the API reads both spellings)
_SCHEMA_KEYS = ("parameters", "parametersJsonSchema", "parameters_json_schema")


def gemini_endpoint(path: str, query: Mapping[str, str]) -> str:
    """The canonical endpoint of a request as received: its path without the query (the
    query holds ``alt=sse`` and, for a REST caller, ``key=``: never kept)."""
    return path.partition("?")[0].rstrip("/")


def model_of(path: str) -> str | None:
    found = _MODEL_PATH.search(path)
    return found.group(3) if found is not None else None


def method_of(path: str) -> str | None:
    found = _MODEL_PATH.search(path)
    return found.group(4) if found is not None else None


def match_endpoint(endpoint: str) -> str:
    """An endpoint as matching compares it: the method only. The model is compared as the
    model; the API version (``v1`` / ``v1beta``) is the same call; a streamed call is the
    same question as a plain one (the gateway turns one answer into the other). It stays
    under ``/v1beta/`` so it still reads as Gemini's, and Vertex AI's form of the same
    method (any project and location) is the same call too."""
    found = _MODEL_PATH.search(endpoint)
    if found is None:
        return endpoint
    method = found.group(4)
    return f"/v1beta/models:{'generateContent' if method == _STREAM_METHOD else method}"


def is_stream_path(path: str) -> bool:
    return method_of(path) == _STREAM_METHOD


def part(raw: JSON, index: int = 0) -> dict[str, Any]:
    """One Gemini part as a semconv part. A function call or response without an id
    (the Gemini API pairs them by name) gets ``{name}_{index}``, its place in its
    content, as the Google GenAI instrumentation writes it, so a request and a span of
    it compare equal."""
    if not isinstance(raw, dict):
        return text_part(raw) if isinstance(raw, str) else raw_part(raw)
    block = {k: v for k, v in raw.items() if k not in _DROP}
    if isinstance(block.get("text"), str):
        text = block["text"]
        return reasoning_part(text) if block.get("thought") else text_part(text)
    call = block.get("functionCall")
    if isinstance(call, dict):
        call_id = call.get("id") or f"{call.get('name')}_{index}"
        return tool_call_part(call_id, call.get("name"), call.get("args"))
    answer = block.get("functionResponse")
    if isinstance(answer, dict):
        answer_id = answer.get("id") or f"{answer.get('name')}_{index}"
        return tool_response_part(answer_id, answer.get("response"))
    kind = next(iter(block), "unknown")
    value = block.get(kind)
    out: dict[str, Any] = {"type": kind}
    out.update(value if isinstance(value, dict) else {"value": value})
    return out


def content_parts(content: JSON) -> list[dict[str, Any]]:
    """The parts of a ``Content`` (``{"parts": [...]}``), a list of parts, or a string."""
    if isinstance(content, str):
        return [text_part(content)]
    if isinstance(content, dict):
        content = content.get("parts")
    return drop_empty_text([part(p, i) for i, p in enumerate(as_list(content))])


@by_identity
def _message(raw: JSON) -> dict[str, Any]:
    role = as_dict(raw).get("role")
    return message(_ROLES.get(str(role), role or "user"), content_parts(raw))


def _tools(raw: JSON) -> JSON:
    if raw is None:
        return None
    tools: list[JSON] = []
    for tool in as_list(raw):
        declarations = as_dict(tool).get("functionDeclarations")
        if not isinstance(declarations, list):
            tools.append(tool)
            continue
        for declared in declarations:
            entry = as_dict(declared)
            schema = next((entry[k] for k in _SCHEMA_KEYS if k in entry), None)
            skip = {"name", "description", *_SCHEMA_KEYS}
            extra = {k: v for k, v in entry.items() if k not in skip}
            tools.append(function_tool(entry.get("name"), entry.get("description"), schema, extra))
    return tools


def _embedded(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The texts an embedding call embeds, one user message each."""
    if "content" in body:
        return [message("user", content_parts(body["content"]))]
    requests = body.get("requests")
    if isinstance(requests, list):
        return [message("user", content_parts(as_dict(r).get("content"))) for r in requests]
    return None


def canonical(path: str, body: JSON) -> CanonicalRequest:
    """The canonical request of a Gemini API call to ``path`` (as recorded)."""
    endpoint = path.partition("?")[0]
    model = model_of(endpoint)
    if not isinstance(body, dict):
        params = {} if body is None else {"body": body}
        return CanonicalRequest(endpoint=endpoint, model=model, params=params)
    if METHOD_OPERATIONS.get(method_of(endpoint) or "") == "embeddings":
        consumed = {"content", "requests", "model"}
        params = {k: v for k, v in body.items() if k not in consumed}
        if isinstance(body.get("requests"), list):
            params["requests"] = [
                {k: v for k, v in as_dict(r).items() if k not in ("content", "model")}
                for r in body["requests"]
            ]
        return CanonicalRequest(endpoint, model, None, _embedded(body), None, params)
    system, contents = body.get("systemInstruction"), body.get("contents")
    params = {k: v for k, v in body.items() if k not in _CONSUMED}
    instructions = None if system is None else content_parts(system)
    messages = None if contents is None else [_message(c) for c in as_list(contents)]
    tools = _tools(body.get("tools"))
    return CanonicalRequest(endpoint, model, instructions, messages, tools, params)
