"""The OpenAI API surface: Chat Completions, Responses, embeddings, completions, models.

It also serves Azure OpenAI's paths (``azure`` maps them onto it). Request reading lives in
``openai_request``, the streams in ``openai_chat_stream`` and ``openai_responses_stream``,
and the semantic-convention views in ``openai_view``; this module ties them to the
``Provider`` seam.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
from otel_replay.providers import openai_realtime as realtime
from otel_replay.providers import openai_request as req
from otel_replay.providers import openai_view as views
from otel_replay.providers.azure import canonical_endpoint, route
from otel_replay.providers.base import OutputView
from otel_replay.providers.named import named_prefix
from otel_replay.providers.openai_chat_stream import (
    chat_body,
    chat_stream,
    completions_body,
    completions_stream,
)
from otel_replay.providers.openai_responses_stream import responses_body, responses_stream
from otel_replay.providers.parts import as_dict, dumps, event_payloads

_ENDPOINTS: dict[str, str] = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "embeddings": "/v1/embeddings",
    "completions": "/v1/completions",
    "models": "/v1/models",
    "realtime": realtime.REALTIME_PATH,
}
_OPERATIONS = {path: op for op, path in _ENDPOINTS.items()}
# The Responses API's last event (it sends no [DONE]).
_RESPONSES_CLOSING = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "error"}
)
# ``stream_id``: the Responses API's WebSocket mode's own envelope field
_REALTIME_DONE = "response.done"
_TRANSPORT = frozenset({"stream", "stream_options", "stream_id"})

PARAMETERS: Mapping[str, frozenset[str]] = {
    # openai.types.chat.completion_create_params.CompletionCreateParamsBase
    "chat": frozenset(
        "audio frequency_penalty function_call functions logit_bias logprobs"
        " max_completion_tokens max_tokens messages metadata modalities model moderation n"
        " parallel_tool_calls prediction presence_penalty prompt_cache_key"
        " prompt_cache_options prompt_cache_retention reasoning_effort response_format"
        " safety_identifier seed service_tier stop store stream stream_options temperature"
        " tool_choice tools top_logprobs top_p user verbosity web_search_options".split()
    ),
    # openai.types.responses.response_create_params.ResponseCreateParamsBase
    "responses": frozenset(
        "access_programs background background_options context_management conversation"
        " image include input instructions max_output_tokens max_tool_calls metadata model"
        " moderation parallel_tool_calls previous_response_id prompt prompt_cache_key"
        " prompt_cache_options prompt_cache_retention reasoning safety_identifier"
        " service_tier store stream stream_options temperature text tool_choice tools"
        " top_logprobs top_p truncation user".split()
    ),
    # openai.types.embedding_create_params.EmbeddingCreateParams
    "embeddings": frozenset("dimensions encoding_format input model user".split()),
    # openai.types.completion_create_params.CompletionCreateParamsBase
    "completions": frozenset(
        "best_of echo frequency_penalty logit_bias logprobs max_tokens model n"
        " presence_penalty prompt seed stop stream stream_options suffix temperature top_p"
        " user".split()
    ),
}
"""The body fields of each operation's request, from the official ``openai`` SDK's
request types (``tests/test_provider_parameters.py`` holds them to the installed SDK)."""


def _params(body: dict[str, Any], consumed: frozenset[str]) -> dict[str, JSON]:
    return {k: v for k, v in body.items() if k not in consumed and k not in _TRANSPORT}


def _model(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    return model if isinstance(model, str) else None


class OpenAIProvider:
    """The OpenAI wire format."""

    name = "openai"

    def operation(self, path: str) -> str:
        return _OPERATIONS.get(route(path)[0], "other")

    def endpoint(self, operation: str, *, model: str | None = None) -> str:
        return _ENDPOINTS.get(operation, "/v1")

    def canonical(self, path: str, body: JSON) -> CanonicalRequest:
        # a named upstream's endpoint keeps its /u/NAME: its recordings answer it alone
        endpoint = named_prefix(path) + canonical_endpoint(path)
        operation = self.operation(path)
        deployment = route(path)[1]
        if body is None:
            return CanonicalRequest(endpoint=endpoint, model=deployment)
        if not isinstance(body, dict):
            return CanonicalRequest(endpoint=endpoint, model=deployment, params={"body": body})
        model = deployment or _model(body)
        if operation == "realtime":
            return realtime.canonical(endpoint, body)
        if operation == "chat":
            system, messages = req.chat_system_and_messages(body.get("messages"))
            consumed = frozenset({"model", "messages", "tools", "functions"})
            return CanonicalRequest(
                endpoint, model, system, messages, req.chat_tools(body), _params(body, consumed)
            )
        if operation == "responses":
            consumed = frozenset({"model", "input", "instructions", "tools"})
            return CanonicalRequest(
                endpoint,
                model,
                req.instructions_parts(body.get("instructions")),
                req.responses_input(body.get("input")),
                req.responses_tools(body),
                _params(body, consumed),
            )
        if operation in ("embeddings", "completions"):
            field = "input" if operation == "embeddings" else "prompt"
            messages = req.input_messages(body.get(field))
            consumed = frozenset({"model", field})
            return CanonicalRequest(endpoint, model, None, messages, None, _params(body, consumed))
        return CanonicalRequest(endpoint, model, params=_params(body, frozenset({"model"})))

    def parameters(self, operation: str) -> frozenset[str]:
        return PARAMETERS.get(operation, frozenset())

    def wants_stream(
        self, body: JSON, path: str = "", query: Mapping[str, str] | None = None
    ) -> bool:
        return isinstance(body, dict) and body.get("stream") is True

    def error_body(self, status: int, message: str, kind: str) -> JSON:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def stream_from_body(self, operation: str, body: JSON) -> list[SSEEvent]:
        if operation == "chat":
            return chat_stream(body)
        if operation == "responses":
            return responses_stream(body)
        if operation == "completions":
            return completions_stream(body)
        if operation == "realtime":
            return realtime.events_from_body(body)
        return [SSEEvent(data=dumps(body)), SSEEvent(data="[DONE]")]

    def body_from_stream(self, operation: str, events: list[SSEEvent]) -> JSON:
        if operation == "chat":
            return chat_body(events)
        if operation == "responses":
            return responses_body(events)
        if operation == "completions":
            return completions_body(events)
        if operation == "realtime":
            return realtime.body_from_events(events)
        payloads = event_payloads(events)
        return payloads[-1] if payloads else None

    def stream_done(self, events: list[SSEEvent]) -> bool:
        if not events:
            return False
        last = events[-1]
        closing = last.event in _RESPONSES_CLOSING or last.event == _REALTIME_DONE
        return last.data == "[DONE]" or closing

    def response_from_view(self, operation: str, view: OutputView) -> JSON:
        if operation in ("responses", "realtime"):
            return views.response_body(view)
        if operation == "embeddings":
            return views.embeddings_body(view)
        if operation == "completions":
            return views.completions_body(view)
        if operation == "models":
            return {"object": "list", "data": []}
        return views.chat_body(view)

    def view_from_response(self, operation: str, body: JSON) -> OutputView:
        data = as_dict(body)
        if operation in ("responses", "realtime"):
            return views.view_of_response(data)
        if operation == "embeddings":
            return views.view_of_embeddings(data)
        return views.view_of_chat(data)


OPENAI = OpenAIProvider()
