"""The Gemini API surface (``google-genai``): generateContent, streamGenerateContent
(``alt=sse``), countTokens, embedContent and batchEmbedContents, on ``v1`` and ``v1beta``.

Which requests are Gemini's is declared in ``PROVIDERS``. Request reading lives in
``gemini_request``, answers, streams and views in ``gemini_response``; this module ties
them to the ``Provider`` seam and writes errors in Google's format
(``{"error": {"code", "message", "status", "details"}}``).
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent
from otel_replay.providers import gemini_live as live
from otel_replay.providers import gemini_request as req
from otel_replay.providers import gemini_response as res
from otel_replay.providers.base import OutputView

__all__ = ["GEMINI", "GeminiProvider"]

_DEFAULT_VERSION = "v1beta"
_METHOD_OF_OPERATION = {
    "chat": "generateContent",
    "count_tokens": "countTokens",
    "embeddings": "embedContent",
}
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


PARAMETERS: Mapping[str, frozenset[str]] = {
    # google.genai.models: the request bodies _GenerateContentParameters_to_mldev and
    # _GenerateContentConfig_to_mldev write (sampling settings sit in generationConfig)
    "chat": frozenset(
        "model contents systemInstruction tools toolConfig safetySettings generationConfig"
        " cachedContent labels serviceTier store".split()
    ),
    # _CountTokensParameters_to_mldev
    "count_tokens": frozenset({"contents", "generateContentRequest"}),
    # _EmbedContentParameters_to_mldev (one request, or a batch of them)
    "embeddings": frozenset("model content requests taskType title outputDimensionality".split()),
}
"""The body fields of each operation's request, from the official ``google-genai``
SDK's request converters."""


class GeminiProvider:
    """The Gemini API wire format."""

    name = "gcp.gemini"

    def operation(self, path: str) -> str:
        if live.is_live_path(path):
            return "live"
        method = req.method_of(path.partition("?")[0])
        if method is not None:
            return req.METHOD_OPERATIONS.get(method, "other")
        base = path.partition("?")[0].rstrip("/")
        return "models" if base.endswith("/models") else "other"

    def endpoint(self, operation: str, *, model: str | None = None) -> str:
        method = _METHOD_OF_OPERATION.get(operation)
        if method is None:
            return f"/{_DEFAULT_VERSION}/models"
        return f"/{_DEFAULT_VERSION}/models/{model or 'unknown'}:{method}"

    def canonical(self, path: str, body: JSON) -> CanonicalRequest:
        if live.is_live_path(path):
            return live.canonical(path, body)
        return req.canonical(path, body)

    def parameters(self, operation: str) -> frozenset[str]:
        return PARAMETERS.get(operation, frozenset())

    def wants_stream(
        self, body: JSON, path: str = "", query: Mapping[str, str] | None = None
    ) -> bool:
        return req.is_stream_path(path)

    def error_body(self, status: int, message: str, kind: str) -> JSON:
        code = _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
        reason = kind.upper()
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}
        info["domain"] = "otel-replay"
        return {"error": {"code": status, "message": message, "status": code, "details": [info]}}

    def stream_from_body(self, operation: str, body: JSON) -> list[SSEEvent]:
        if operation == "live":
            return live.events_from_body(body)
        return res.stream_from_body(operation, body)

    def body_from_stream(self, operation: str, events: list[SSEEvent]) -> JSON:
        if operation == "live":
            return live.body_from_events(events)
        return res.body_from_stream(operation, events)

    def stream_done(self, events: list[SSEEvent]) -> bool:
        return res.stream_done(events)

    def response_from_view(self, operation: str, view: OutputView) -> JSON:
        return res.response_from_view(operation, view)

    def view_from_response(self, operation: str, body: JSON) -> OutputView:
        return res.view_from_response("chat" if operation == "live" else operation, body)


GEMINI = GeminiProvider()
