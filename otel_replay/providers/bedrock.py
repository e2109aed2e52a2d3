"""The AWS Bedrock Runtime surface: ``Converse`` / ``ConverseStream`` and ``InvokeModel`` /
``InvokeModelWithResponseStream`` (Anthropic's Messages format on Bedrock).

Paths are ``/model/{modelId}/{action}``; the model is in the path, never in the body. A
streamed action and its plain form are one endpoint (``/model/{id}/converse`` for both
``converse`` and ``converse-stream``, as OpenAI's ``stream`` flag is not compared), so a
streamed request replays a plain recording and the other way round. Streams are AWS event
streams (``streams.eventstream``); an ``InvokeModelWithResponseStream`` event is a
``chunk`` whose ``bytes`` hold one Anthropic stream event, base64-encoded. Errors are
AWS's JSON errors, ``{"__type": ..., "message": ...}``, which boto3 raises as a
``ClientError`` with that code. The paths, and the endpoint and model as matching
compares them, are ``bedrock_paths``'s (the provider table reads them without loading
this surface).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
from otel_replay.providers import bedrock_converse as converse
from otel_replay.providers.anthropic import ANTHROPIC
from otel_replay.providers.base import OutputView
from otel_replay.providers.bedrock_paths import MODEL_PREFIX, split_path
from otel_replay.providers.parts import as_dict, as_int, dumps, event_payloads, loads_or_none

__all__ = ["BEDROCK"]

_ACTIONS = {
    "converse": "converse",
    "converse-stream": "converse",
    "invoke": "invoke",
    "invoke-with-response-stream": "invoke",
    "count-tokens": "count_tokens",
}
_PLAIN = {"converse-stream": "converse", "invoke-with-response-stream": "invoke"}
_STREAMED = frozenset(_PLAIN)
_CODES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    429: "ThrottlingException",
}
_CONVERSE_CLOSING = frozenset({"metadata"})
_INVOKE_MESSAGES = "/v1/messages"  # where the Anthropic surface reads an invoke body


def _unwrap_chunks(events: list[SSEEvent]) -> list[SSEEvent]:
    """The Anthropic stream events an invoke stream's ``chunk`` events carry."""
    inner: list[SSEEvent] = []
    for event in events:
        encoded = as_dict(loads_or_none(event.data)).get("bytes")
        if event.event != "chunk" or not isinstance(encoded, str):
            continue
        try:
            text = base64.b64decode(encoded).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            continue
        inner.append(SSEEvent(data=text, event=as_dict(loads_or_none(text)).get("type"), t=event.t))
    return inner


def _chunk(event: SSEEvent) -> SSEEvent:
    encoded = base64.b64encode(event.data.encode()).decode("ascii")
    return SSEEvent(data=dumps({"bytes": encoded}), event="chunk", t=event.t)


PARAMETERS: Mapping[str, frozenset[str]] = {
    # botocore's bedrock-runtime model: the body members of Converse / ConverseStream
    "converse": frozenset(
        "messages system inferenceConfig toolConfig guardrailConfig projectIdentifier"
        " additionalModelRequestFields promptVariables additionalModelResponseFieldPaths"
        " requestMetadata performanceConfig serviceTier outputConfig".split()
    ),
    # InvokeModel's body is the model's own: an Anthropic model's is the Messages body
    "invoke": frozenset({"anthropic_version", *ANTHROPIC.parameters("messages")} - {"model"}),
    "count_tokens": frozenset({"input"}),
}
"""The body fields of each operation's request, from botocore's service model
(``tests/test_provider_parameters.py`` holds them to the installed botocore)."""


class BedrockProvider:
    """The Bedrock Runtime wire format."""

    name = "aws.bedrock"

    def operation(self, path: str) -> str:
        model, action = split_path(path)
        return _ACTIONS.get(action, "other") if model is not None else "other"

    def endpoint(self, operation: str, *, model: str | None = None) -> str:
        action = {"count_tokens": "count-tokens"}.get(operation, operation)
        if action not in _ACTIONS:
            action = "converse"
        return f"{MODEL_PREFIX}{model or 'unknown'}/{action}"

    def canonical(self, path: str, body: JSON) -> CanonicalRequest:
        model, action = split_path(path)
        endpoint = path.partition("?")[0]
        if model is not None:
            endpoint = f"{MODEL_PREFIX}{model}/{_PLAIN.get(action, action)}"
        operation = self.operation(path)
        if not isinstance(body, dict):
            params = {} if body is None else {"body": body}
            return CanonicalRequest(endpoint=endpoint, model=model, params=params)
        if operation == "converse":
            return converse.canonical(endpoint, model, body)
        if operation == "invoke":
            request = ANTHROPIC.canonical(_INVOKE_MESSAGES, body)
            params = {k: v for k, v in request.params.items() if k != "stream"}
            return CanonicalRequest(
                endpoint, model, request.system, request.messages, request.tools, params
            )
        return CanonicalRequest(endpoint=endpoint, model=model, params=dict(body))

    def parameters(self, operation: str) -> frozenset[str]:
        return PARAMETERS.get(operation, frozenset())

    def wants_stream(
        self, body: JSON, path: str = "", query: Mapping[str, str] | None = None
    ) -> bool:
        return split_path(path)[1] in _STREAMED

    def error_body(self, status: int, message: str, kind: str) -> JSON:
        code = _CODES.get(status)
        if code is None:
            code = "InternalServerException" if status == 500 else "ServiceUnavailableException"
        return {"__type": code, "message": message}

    def stream_from_body(self, operation: str, body: JSON) -> list[SSEEvent]:
        if operation == "converse":
            return converse.stream_from_body(body)
        if operation == "invoke":
            return [_chunk(event) for event in ANTHROPIC.stream_from_body("messages", body)]
        return [SSEEvent(data=dumps(body), event="chunk")]

    def body_from_stream(self, operation: str, events: list[SSEEvent]) -> JSON:
        if operation == "converse":
            return converse.body_from_stream(events)
        if operation == "invoke":
            return ANTHROPIC.body_from_stream("messages", _unwrap_chunks(events))
        payloads = event_payloads(events)
        return payloads[-1] if payloads else None

    def stream_done(self, events: list[SSEEvent]) -> bool:
        if not events:
            return False
        last = events[-1].event or ""
        if last in _CONVERSE_CLOSING or last.startswith(("exception:", "error:")):
            return True
        return ANTHROPIC.stream_done(_unwrap_chunks(events[-1:]))

    def response_from_view(self, operation: str, view: OutputView) -> JSON:
        if operation == "invoke":
            return ANTHROPIC.response_from_view("messages", view)
        if operation == "count_tokens":
            return {"inputTokens": as_int(view.usage.get("input_tokens"))}
        return converse.response_from_view(view)

    def view_from_response(self, operation: str, body: JSON) -> OutputView:
        if operation == "invoke":
            return ANTHROPIC.view_from_response("messages", body)
        if operation == "count_tokens":
            return OutputView(usage={"input_tokens": as_int(as_dict(body).get("inputTokens"))})
        return converse.view(body)


BEDROCK = BedrockProvider()
