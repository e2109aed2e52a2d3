"""Failed model-call spans from third-party instrumentations become error responses."""

from __future__ import annotations

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.otlp.attributes import dict_to_attributes
from otel_replay.readers.failure import failed_response


def failed_span(message: str = "", exception: dict[str, str] | None = None) -> Span:
    span = Span(status=Status(code=Status.STATUS_CODE_ERROR, message=message))
    if exception is not None:
        span.events.add(name="exception", attributes=dict_to_attributes(exception))
    return span


def test_the_status_and_the_body_come_from_the_sdks_error_text() -> None:
    body = "{'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Busy'}}"
    text = f"Error code: 529 - {body}"
    response = failed_response("anthropic", failed_span(text), {})
    assert response is not None and response.status == 529
    assert response.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Busy"},
    }
    assert response.headers["x-should-retry"] == "false"


def test_a_text_message_gets_the_providers_error_body() -> None:
    span = failed_span("RateLimitError: Error code: 429 - Rate limit reached")
    response = failed_response("openai", span, {})
    assert response is not None and response.status == 429
    assert response.body == {
        "error": {
            "message": "Rate limit reached",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limit_error",
        }
    }


@pytest.mark.parametrize(
    "attrs",
    [{"error.type": "<class 'openai.InternalServerError'>"}, {"error.type": "InternalServerError"}],
)
def test_the_exception_class_gives_the_status_when_the_text_does_not(attrs) -> None:
    response = failed_response("openai", failed_span("upstream went away"), attrs)
    assert response is not None and response.status == 500


def test_the_exception_event_is_read_too() -> None:
    span = failed_span(
        exception={
            "exception.type": "openai.BadRequestError",
            "exception.message": "Error code: 400 - context too long",
        }
    )
    response = failed_response("openai", span, {})
    assert response is not None and response.status == 400


@pytest.mark.parametrize(
    ("span", "attrs"),
    [
        (Span(), {}),  # not failed at all
        (Span(), {"error.type": "RateLimitError"}),  # error.type without an ERROR status
        (failed_span("boom"), {"error.type": "ValueError"}),  # the agent's own error
        (failed_span("no such index"), {"error.type": "elasticsearch.NotFoundError"}),
        (failed_span("Request timed out."), {"error.type": "APITimeoutError"}),  # no status
        (failed_span("Connection error."), {"error.type": "openai.APIConnectionError"}),
    ],
)
def test_failures_without_an_http_status_are_not_rebuilt(span: Span, attrs) -> None:
    assert failed_response("openai", span, attrs) is None


def test_an_odd_error_text_never_breaks_the_body() -> None:
    for detail in (
        "{'a': {1, 2}}",
        "{" * 5000,
        "{'unterminated': ",
        "{b'bytes': 1}",
        "{'a': 1e999}",
    ):
        response = failed_response("openai", failed_span(f"Error code: 503 - {detail}"), {})
        assert response is not None and response.status == 503
        assert isinstance(response.body, dict) and "error" in response.body


def test_an_http_status_as_error_type_is_read() -> None:
    response = failed_response("anthropic", failed_span("overloaded"), {"error.type": "529"})
    assert response is not None and response.status == 529


def test_a_failed_semconv_span_without_its_messages_is_not_a_recording() -> None:
    """Without the messages (content capture off) it would match any call to the model."""
    from otel_replay.readers import semconv

    def span(**extra: str) -> Span:
        attrs = {
            "gen_ai.provider.name": "openai",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "error.type": "openai.RateLimitError",
            **extra,
        }
        failed = failed_span("Error code: 429 - Rate limit reached")
        failed.name = "chat gpt-4o-mini"
        failed.attributes.extend(dict_to_attributes(attrs))
        return failed

    assert semconv.read_span({}, span()) is None
    messages = '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
    exchange = semconv.read_span({}, span(**{"gen_ai.input.messages": messages}))
    assert exchange is not None and exchange.response.status == 429
    assert exchange.request.messages == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
