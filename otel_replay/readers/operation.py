"""The exchange operation a model-call span stands for (``chat``, ``responses``,
``messages``, ``embeddings``, ``completions``, ``realtime``), read the same way for every
reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.core import genai
from otel_replay.core.exchange import JSON

__all__ = ["operation_of"]

_CHAT_OPERATION = {"anthropic": "messages"}
"""A provider's own operation for a chat call, where it has one."""


def operation_of(
    provider: str, attrs: Mapping[str, Any], span_name: str, body: JSON = None
) -> str | None:
    """The exchange operation of a span, or None when the span is not a model call.

    The span's declared operation comes first: ``gen_ai.operation.name``, OpenLLMetry's
    ``llm.request.type`` or its flattened prompt (a chat). A span that declares only that it
    is a model call (an OpenInference LLM or EMBEDDING span) is a chat for a provider whose
    chat has an operation of its own (Anthropic's ``messages``), else it is named for its
    operation (``ChatCompletion``, ``Embeddings``) or shows it by its content (a request
    ``body`` or input messages: a chat). A chat span named for a response, or whose response
    id is a Responses API one (``resp_…``), is a Responses API call.
    """
    declared = attrs.get(genai.OPERATION_NAME) or attrs.get(genai.REQUEST_TYPE)
    if declared is None and _carries(attrs, genai.PROMPT_PREFIX):
        declared = "chat"
    if declared is not None:
        operation = genai.EXCHANGE_OF_OPERATION.get(str(declared))
    elif attrs.get(genai.OI_SPAN_KIND) in genai.OI_MODEL_KINDS:
        own = _CHAT_OPERATION.get(provider)
        operation = own or _named(span_name) or _shown(attrs, body)
    else:
        return None
    if operation == "chat":
        operation = _CHAT_OPERATION.get(provider, operation)
    if operation == "chat" and span_name in genai.REALTIME_SPAN_NAMES:
        return "realtime"
    if operation == "chat" and (
        genai.RESPONSES_WORD in span_name.lower() or _responses_id(attrs.get(genai.RESPONSE_ID))
    ):
        return "responses"
    return operation


def _responses_id(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(genai.RESPONSES_ID_PREFIX)


def _named(span_name: str) -> str | None:
    lowered = span_name.lower()
    for word, operation in genai.SPAN_NAME_WORDS:
        if word in lowered:
            return operation
    return None


def _shown(attrs: Mapping[str, Any], body: JSON) -> str | None:
    if attrs.get(genai.OI_SPAN_KIND) == genai.OI_EMBEDDING_KIND:
        return "embeddings"
    if isinstance(body, dict) and "messages" in body:
        return "chat"
    return "chat" if _carries(attrs, genai.OI_INPUT_MESSAGES_PREFIX) else None


def _carries(attrs: Mapping[str, Any], prefix: str) -> bool:
    return any(key.startswith(prefix) for key in attrs)
