"""Model calls that failed, as third-party instrumentations record them.

The span's status is ERROR and its message — or its ``exception`` event — carries the
SDK's error text, ``Error code: 429 - Rate limit reached``; ``error.type`` (or the event's
``exception.type``) names the SDK's exception class. The replayed response is that status
with the provider's error body (the recorded one, when the text shows it), so the agent's
SDK raises the same exception class and the incident replays.

It carries ``x-should-retry: false``: an instrumentation's span wraps the SDK method, so it
records the call's final outcome after the SDK's own retries — one recording for however
many attempts there were. Failures with no HTTP status (timeouts, refused connections)
are not rebuilt: how many attempts the SDK made is not in the trace.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import JSON, Response
from otel_replay.otlp.attributes import attributes_to_dict

__all__ = ["failed_response"]

_ERROR_CODE = re.compile(r"Error code: ([1-5]\d\d)(?: - (.*))?\Z", re.DOTALL)
# The official SDKs' exception classes for each status (openai and anthropic share them).
_STATUS_OF_CLASS = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "ConflictError": 409,
    "RequestTooLargeError": 413,
    "UnprocessableEntityError": 422,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "ServiceUnavailableError": 503,
    "DeadlineExceededError": 504,
    "OverloadedError": 529,
}
_SDK_MODULES = providers.sdk_modules()
_KIND_OF_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_MAX_DETAIL = 65_536  # longer error texts are not parsed as a body


def failed_response(provider: str, span: Span, attrs: Mapping[str, Any]) -> Response | None:
    """The provider's error response a failed model-call span describes, or None when
    the span did not fail with an HTTP status."""
    if span.status.code != Status.STATUS_CODE_ERROR:
        return None
    exceptions = [
        attributes_to_dict(event.attributes)
        for event in span.events
        if event.name == genai.EXCEPTION_EVENT
    ]
    messages = (str(e.get(genai.EXCEPTION_MESSAGE, "")) for e in exceptions)
    texts = [span.status.message, *messages]
    names = [attrs.get(genai.ERROR_TYPE), *(e.get(genai.EXCEPTION_TYPE) for e in exceptions)]
    status, detail = _status_from_text(texts)
    if status is None:
        found = [code for code in map(_status_of_name, names) if code is not None]
        status = found[0] if found else None
        detail = span.status.message
    if status is None or not 400 <= status <= 599:
        return None
    return Response(
        status=status,
        headers={"content-type": "application/json", "x-should-retry": "false"},
        body=_error_body(provider, status, detail),
    )


def _status_from_text(texts: list[str]) -> tuple[int | None, str]:
    for text in texts:
        found = _ERROR_CODE.search(text)
        if found is not None:
            return int(found.group(1)), found.group(2) or ""
    return None, ""


def _status_of_name(name: Any) -> int | None:
    """The status an ``error.type`` / ``exception.type`` stands for: an HTTP status code
    (``429``, the conventions' form), or an SDK exception class — ``RateLimitError``,
    ``openai.RateLimitError``, ``<class 'openai.RateLimitError'>`` — but not a class of
    the same name from another library (``elasticsearch.NotFoundError``)."""
    text = str(name or "").strip()
    if text.isdigit():
        return int(text)
    if text.startswith("<class '") and text.endswith("'>"):
        text = text[len("<class '") : -2]
    module, _, cls = text.rpartition(".")
    if module and module.partition(".")[0] not in _SDK_MODULES:
        return None
    return _STATUS_OF_CLASS.get(cls)


def _error_body(provider: str, status: int, detail: str) -> JSON:
    """The body the error text shows (Anthropic's SDK prints it as a Python dict), else
    the provider's error body around the text."""
    if detail.startswith("{") and len(detail) <= _MAX_DETAIL:
        try:
            shown = json.loads(json.dumps(ast.literal_eval(detail), allow_nan=False))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            shown = None
        if isinstance(shown, dict):
            return shown
    kind = _KIND_OF_STATUS.get(status, "api_error")
    return providers.get(provider).error_body(status, detail or f"HTTP {status}", kind)
