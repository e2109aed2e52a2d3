"""The GenAI vocabulary: attribute names, operation names, span-name forms, usage and
finish-reason names, as the spans written here and the instrumentations read here use them.

Three vocabularies describe a model call on a span:

- the OpenTelemetry GenAI semantic conventions (``gen_ai.*``), latest "parts" form and the
  deprecated event forms;
- OpenLLMetry's flattened deprecated form (``gen_ai.prompt.N.*``, ``gen_ai.completion.N.*``,
  ``llm.request.functions.N.*``, ``llm.request.type``);
- OpenInference (``openinference.span.kind``, ``llm.*``, ``input.value`` / ``output.value``).

The span encoder writes with these names and the span readers read with them, so a name
lives here once. The tables map between the exchange's own terms (operation ``chat``,
param ``max_tokens``, usage ``input_tokens``) and the attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from otel_replay.core.exchange import CanonicalRequest

# --- semantic conventions: the call --------------------------------------------------------

PROVIDER_NAME = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"
"""The deprecated name of ``gen_ai.provider.name``."""
OPERATION_NAME = "gen_ai.operation.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
IS_STREAMING = "gen_ai.is_streaming"
TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
"""Seconds until the first chunk of the answer: recorded only for a streamed call."""
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_PREFIX = "gen_ai.usage."

# --- semantic conventions: content in the latest "parts" form -------------------------------

INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
CONTENT_ATTRIBUTES = (INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS, TOOL_DEFINITIONS)


def request_contents(request: CanonicalRequest) -> list[tuple[str, Any]]:
    """A request's content attributes and their values, in a span's order (those it holds:
    input messages, system instructions, tool definitions)."""
    return [
        (attribute, value)
        for attribute, value in (
            (INPUT_MESSAGES, request.messages),
            (SYSTEM_INSTRUCTIONS, request.system),
            (TOOL_DEFINITIONS, request.tools),
        )
        if value is not None
    ]


# --- semantic conventions: events ----------------------------------------------------------

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
"""The latest form's content, carried by a log record instead of the span."""
CHOICE_EVENT = "gen_ai.choice"
PROMPT_EVENT = "gen_ai.content.prompt"
COMPLETION_EVENT = "gen_ai.content.completion"
MESSAGE_EVENT_PREFIX = "gen_ai."
MESSAGE_EVENT_SUFFIX = ".message"
MESSAGE_EVENTS = frozenset(
    {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        CHOICE_EVENT,
        PROMPT_EVENT,
        COMPLETION_EVENT,
    }
)
"""The deprecated per-message events (span events or log records)."""
GENAI_EVENTS = MESSAGE_EVENTS | {DETAILS_EVENT}
PROMPT = "gen_ai.prompt"
"""The ``gen_ai.content.prompt`` event's attribute (JSON text of the messages)."""
COMPLETION = "gen_ai.completion"
"""The ``gen_ai.content.completion`` event's attribute."""

# --- OpenLLMetry's flattened form ----------------------------------------------------------

PROMPT_PREFIX = PROMPT + "."
COMPLETION_PREFIX = COMPLETION + "."
FUNCTIONS_PREFIX = "llm.request.functions."
REQUEST_TYPE = "llm.request.type"
LLM_IS_STREAMING = "llm.is_streaming"

# --- OpenInference -------------------------------------------------------------------------

OI_SPAN_KIND = "openinference.span.kind"
OI_MODEL_KINDS = frozenset({"LLM", "EMBEDDING"})
OI_EMBEDDING_KIND = "EMBEDDING"
OI_PROVIDER = "llm.provider"
OI_SYSTEM = "llm.system"
OI_MODEL_NAME = "llm.model_name"
OI_INVOCATION_PARAMETERS = "llm.invocation_parameters"
OI_INPUT_MESSAGES_PREFIX = "llm.input_messages."
OI_OUTPUT_MESSAGES_PREFIX = "llm.output_messages."
OI_TOOLS_PREFIX = "llm.tools."
OI_TOOL_SCHEMA = "tool.json_schema"
OI_FINISH_REASON = "llm.finish_reason"
OI_JSON = "application/json"


def oi_value(side: Literal["input", "output"]) -> str:
    """``input.value`` / ``output.value``: the call's arguments or result as text."""
    return f"{side}.value"


def oi_mime_type(side: Literal["input", "output"]) -> str:
    """``input.mime_type`` / ``output.mime_type``."""
    return f"{side}.mime_type"


# --- general OpenTelemetry attributes a model-call span carries ----------------------------

SERVICE_NAME = "service.name"
"""A resource attribute: the service the telemetry came from."""
EVENT_NAME = "event.name"
"""A log record's event name, when written as an attribute."""
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
HTTP_STATUS = "http.response.status_code"
ERROR_TYPE = "error.type"
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"

# --- operations and span names -------------------------------------------------------------

OPERATION_OF_EXCHANGE: Mapping[str, str] = {
    "chat": "chat",
    "responses": "chat",
    "messages": "chat",
    "converse": "chat",
    "invoke": "chat",
    "embeddings": "embeddings",
    "completions": "text_completion",
    "realtime": "chat",  # a Realtime API response (WebSocket)
    "live": "chat",  # a Gemini Live API turn (WebSocket)
}
"""``gen_ai.operation.name`` for an exchange operation (a semconv value where one fits;
any other operation is written as it is)."""

EXCHANGE_OF_OPERATION: Mapping[str, str] = {
    "chat": "chat",
    "generate_content": "chat",  # Gemini's name for it
    "text_completion": "completions",
    "completion": "completions",
    "embeddings": "embeddings",
    "embedding": "embeddings",
    # litellm's call types for its awaited forms (``acompletion``, …), which its callback
    # names the operation by
    "acompletion": "chat",
    "atext_completion": "completions",
    "aembedding": "embeddings",
    "responses": "responses",
    "aresponses": "responses",
}
"""The exchange operation for a ``gen_ai.operation.name`` or ``llm.request.type`` value;
other values (``invoke_agent``, ``execute_tool``) are not model calls."""

SPAN_NAME_WORDS: tuple[tuple[str, str], ...] = (
    ("embedding", "embeddings"),
    ("response", "responses"),
    ("chat", "chat"),
    ("completion", "completions"),
)
"""Words of an instrumentation's span name (``ChatCompletion``, ``Embeddings``,
``openai.response``) and the exchange operation each names, first match wins."""

REALTIME_SPAN_NAMES: frozenset[str] = frozenset({"openai.realtime"})
"""The span names of one Realtime API response (OpenLLMetry's): a ``chat`` span so named is
a Realtime call (``/v1/realtime``)."""
RESPONSES_WORD = "response"
"""A ``chat`` span whose name holds this word is a Responses API call."""
RESPONSES_ID_PREFIX = "resp_"
"""A ``chat`` span whose ``gen_ai.response.id`` begins so is a Responses API call (a Chat
Completions id begins ``chatcmpl-``)."""


def operation_name(operation: str) -> str:
    """``gen_ai.operation.name`` for an exchange operation."""
    return OPERATION_OF_EXCHANGE.get(operation, operation)


def span_name(operation: str, model: str | None) -> str:
    """The semantic conventions' span name: ``{gen_ai.operation.name} {model}``."""
    name = operation_name(operation)
    return f"{name} {model}" if model else name


# --- request parameters --------------------------------------------------------------------

ParamKind = Literal["int", "double", "strings"]


@dataclass(frozen=True, slots=True)
class Param:
    """One ``gen_ai.request.*`` attribute: its value kind, the canonical request params it
    is written from (the first present wins; the first is the one it reads back as), and
    whether it reads back at all (not when the attribute's form differs from the body's)."""

    attribute: str
    kind: ParamKind
    names: tuple[str, ...]
    read: bool = True


REQUEST_PARAMS: tuple[Param, ...] = (
    Param("gen_ai.request.temperature", "double", ("temperature",)),
    Param("gen_ai.request.top_p", "double", ("top_p",)),
    Param("gen_ai.request.top_k", "double", ("top_k",)),
    Param(
        "gen_ai.request.max_tokens",
        "int",
        ("max_tokens", "max_completion_tokens", "max_output_tokens"),
    ),
    Param("gen_ai.request.frequency_penalty", "double", ("frequency_penalty",)),
    Param("gen_ai.request.presence_penalty", "double", ("presence_penalty",)),
    Param("gen_ai.request.seed", "int", ("seed",)),
    Param("gen_ai.request.stop_sequences", "strings", ("stop", "stop_sequences")),
    Param("gen_ai.request.choice.count", "int", ("n",)),
    Param("gen_ai.request.encoding_formats", "strings", ("encoding_format",), read=False),
)

PARAM_OF_NAME: Mapping[str, Param] = {name: p for p in REQUEST_PARAMS for name in p.names}
"""The attribute a canonical request param is written to."""


def read_params(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical request params the ``gen_ai.request.*`` attributes state."""
    return {
        p.names[0]: attrs[p.attribute] for p in REQUEST_PARAMS if p.read and p.attribute in attrs
    }


# --- usage ---------------------------------------------------------------------------------

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read.input_tokens",
    "cache_creation.input_tokens",
)
"""Usage in the exchange's view: ``gen_ai.usage.{key}``."""

USAGE_OF_ATTRIBUTE: Mapping[str, str] = {
    USAGE_PREFIX + "input_tokens": "input_tokens",
    USAGE_PREFIX + "prompt_tokens": "input_tokens",
    USAGE_PREFIX + "output_tokens": "output_tokens",
    USAGE_PREFIX + "completion_tokens": "output_tokens",
    USAGE_PREFIX + "cache_read.input_tokens": "cache_read.input_tokens",
    USAGE_PREFIX + "cache_read_input_tokens": "cache_read.input_tokens",
    USAGE_PREFIX + "cache_creation.input_tokens": "cache_creation.input_tokens",
    USAGE_PREFIX + "cache_creation_input_tokens": "cache_creation.input_tokens",
}
"""Usage attributes, deprecated spellings included, and the usage key each counts."""

OI_USAGE_OF_ATTRIBUTE: Mapping[str, str] = {
    "llm.token_count.prompt": "input_tokens",
    "llm.token_count.completion": "output_tokens",
    "llm.token_count.prompt_details.cache_read": "cache_read.input_tokens",
    "llm.token_count.prompt_details.cache_write": "cache_creation.input_tokens",
}
"""OpenInference's token counts and the usage key each counts."""


def usage_attribute(key: str) -> str:
    """The attribute a usage key is written to."""
    return USAGE_PREFIX + key


def read_usage(attrs: Mapping[str, Any], table: Mapping[str, str]) -> dict[str, int]:
    """Usage counts from the attributes ``table`` names (numbers only)."""
    return {key: int(attrs[a]) for a, key in table.items() if _is_number(attrs.get(a))}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- finish reasons ------------------------------------------------------------------------

FINISH_STOP = "stop"
FINISH_LENGTH = "length"
FINISH_TOOL_CALL = "tool_call"
FINISH_CONTENT_FILTER = "content_filter"

FINISH_OF_PROVIDER: Mapping[str, str] = {
    "tool_calls": FINISH_TOOL_CALL,
    "tool_use": FINISH_TOOL_CALL,
    "end_turn": FINISH_STOP,
    "max_tokens": FINISH_LENGTH,
}
"""Provider finish reasons instrumentations record as they are, in semconv terms."""


def finish_reason(reason: str) -> str:
    """A recorded finish reason in semconv terms (unknown ones as they are)."""
    return FINISH_OF_PROVIDER.get(reason, reason)
