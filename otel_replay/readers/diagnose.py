"""Which spans are model calls, and why one that no reader replays cannot be replayed.

Rules on the span's content, as data: a span is a model call when it declares a model
operation (``gen_ai.operation.name`` / ``llm.request.type`` naming one, an OpenInference
LLM or EMBEDDING span, the AI SDK's ``ai.operationId`` ending ``.doGenerate`` or
``.doStream``), unless it shows it made none (``no_call``: content captured, no answer,
no error — a framework's step around the call, such as LlamaIndex's
``OpenAI._prepare_chat_with_tools``). When no reader gives an exchange for it, the first
row of ``_RULES`` that applies says why and names the setting that fixes it; the setting is
chosen by the attribute family the span is written in (``_CAPTURE``), with a row of
``SETTINGS`` where an instrumentation has a setting of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core import genai
from otel_replay.readers import ai_sdk
from otel_replay.readers.census import Problem
from otel_replay.readers.messages import content_stripped
from otel_replay.readers.registry import answered
from otel_replay.readers.view import Event, json_value

__all__ = ["SETTINGS", "capture_fix", "diagnose", "model_call", "no_call"]

_CONTENT = (
    genai.INPUT_MESSAGES,
    genai.OUTPUT_MESSAGES,
    genai.SYSTEM_INSTRUCTIONS,
    genai.oi_value("input"),
    genai.oi_value("output"),
    ai_sdk.MESSAGES,
)
_CONTENT_PREFIXES = (
    genai.PROMPT_PREFIX,
    genai.COMPLETION_PREFIX,
    genai.OI_INPUT_MESSAGES_PREFIX,
    genai.OI_OUTPUT_MESSAGES_PREFIX,
)
_LENGTH_FIX = (
    "raise the attribute length limit where the trace was cut: OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"
    " / OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT in the agent, and any truncation in the"
    " Collector pipeline"
)

SETTINGS: Mapping[str, str] = {
    "ai": "leave the AI SDK's experimental_telemetry recordInputs / recordOutputs on",
    "pydantic-ai": "pass InstrumentationSettings(include_content=True)",
    "litellm": "set litellm.turn_off_message_logging = False",
}
"""Instrumentations (scope name) with a content setting of their own."""


def model_call(attrs: Mapping[str, Any]) -> bool:
    """Whether a span stands for a model call."""
    declared = attrs.get(genai.OPERATION_NAME) or attrs.get(genai.REQUEST_TYPE)
    if declared is not None:
        return str(declared) in genai.EXCHANGE_OF_OPERATION
    if str(attrs.get(ai_sdk.OPERATION, "")).endswith(ai_sdk.CALL_OPERATIONS):
        return True
    return attrs.get(genai.OI_SPAN_KIND) in genai.OI_MODEL_KINDS


def no_call(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> bool:
    """Whether a span that declares a model call shows it made none: its content was
    captured, yet it records neither a request's messages nor an answer
    (``readers.registry.answered``: output messages, usage, a response id or finish
    reason, an event holding one), and it did not fail. A framework marks a step around
    the call so (LlamaIndex's ``OpenAI._prepare_chat_with_tools``: an LLM span holding the
    arguments it prepared); the call itself is a span of its own. (A call whose span
    ended before its stream was read records its messages: it stays a model call.)"""
    if span.status.code == Status.STATUS_CODE_ERROR or not _captured(attrs, events):
        return False
    if any(key in _REQUEST or key.startswith(_REQUEST_PREFIXES) for key in attrs):
        return False
    if any(name in genai.MESSAGE_EVENTS for name, _a, _b in events):
        return False
    return not answered(span, attrs)


_REQUEST = (genai.INPUT_MESSAGES, genai.SYSTEM_INSTRUCTIONS, ai_sdk.MESSAGES)
_REQUEST_PREFIXES = (genai.PROMPT_PREFIX, genai.OI_INPUT_MESSAGES_PREFIX)


def capture_fix(attrs: Mapping[str, Any], scope: str) -> str:
    """The setting that makes the instrumentation of a span (its attribute family, or its
    scope where it has a setting of its own) record message content."""
    own = SETTINGS.get(scope)
    if own is not None:
        return own
    if genai.OI_SPAN_KIND in attrs:
        return (
            "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS (and the *_MESSAGES"
            " variants), or TraceConfig(hide_inputs=False, hide_outputs=False)"
        )
    return (
        "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (SPAN_ONLY with"
        " OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental) for the OpenTelemetry"
        " GenAI instrumentations, TRACELOOP_TRACE_CONTENT=true for OpenLLMetry"
    )


def _truncated(attrs: Mapping[str, Any]) -> str | None:
    for key, value in attrs.items():
        if not (key in _CONTENT or key.startswith(_CONTENT_PREFIXES)):
            continue
        if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
            try:
                json.loads(value)
            except ValueError:
                return key
    return None


def _captured(attrs: Mapping[str, Any], events: Sequence[Event]) -> bool:
    if any(name in genai.MESSAGE_EVENTS for name, _a, _b in events):
        return True
    return any(key in _CONTENT or key.startswith(_CONTENT_PREFIXES) for key in attrs)


Rule = Callable[[Mapping[str, Any], Sequence[Event], str], Problem | None]


def _cut(attrs: Mapping[str, Any], events: Sequence[Event], scope: str) -> Problem | None:
    key = _truncated(attrs)
    return None if key is None else Problem(f"message content truncated ({key})", _LENGTH_FIX)


def _not_captured(attrs: Mapping[str, Any], events: Sequence[Event], scope: str) -> Problem | None:
    inputs = json_value(attrs.get(genai.INPUT_MESSAGES))
    if _captured(attrs, events) and not content_stripped(inputs):
        return None
    return Problem("message content not captured", capture_fix(attrs, scope))


def _no_provider(attrs: Mapping[str, Any], events: Sequence[Event], scope: str) -> Problem | None:
    named = [attrs.get(k) for k in (genai.PROVIDER_NAME, genai.SYSTEM, genai.OI_PROVIDER)]
    if any(isinstance(n, str) for n in named):
        return None
    return Problem(
        "provider not recorded",
        "the instrumentation should set gen_ai.provider.name (or llm.provider)",
    )


def _not_rebuilt(attrs: Mapping[str, Any], events: Sequence[Event], scope: str) -> Problem | None:
    provider = attrs.get(ai_sdk.PROVIDER)
    if not isinstance(provider, str) or ai_sdk.rebuilds(provider):
        return None
    return Problem(
        f"the AI SDK's {provider} requests are not rebuilt from its spans",
        "record the agent through the gateway (otel-replay record -- CMD)",
    )


_RULES: tuple[Rule, ...] = (_cut, _not_captured, _not_rebuilt, _no_provider)


def diagnose(attrs: Mapping[str, Any], events: Sequence[Event], scope: str) -> Problem:
    """Why a model-call span gave no replayable exchange."""
    for rule in _RULES:
        found = rule(attrs, events, scope)
        if found is not None:
            return found
    return Problem(
        "no output recorded, or a provider or operation otel-replay does not read",
        "run `otel-replay doctor` on the trace and report the span's attributes",
    )
