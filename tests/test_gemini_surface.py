"""The Gemini API surface as pure functions: which paths are Gemini's, what matching
compares, the canonical parts of its contents, its error format, and its streams turned
into bodies and back (what replay does when a call streams differently from its
recording)."""

from __future__ import annotations

import pytest

from otel_replay import providers
from otel_replay.providers import provider_for
from otel_replay.providers.gemini import GEMINI
from otel_replay.providers.placement import misplaced

GOOGLE_KEY = {"x-goog-api-key": "AIzaSyA-surface-test-gemini-key-0123456"}


@pytest.mark.parametrize(
    ("path", "headers", "api"),
    [
        ("/v1beta/models/gemini-2.5-flash:generateContent", {}, "gcp.gemini"),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", {}, "gcp.gemini"),
        # the case: Gemini's v1 paths are not OpenAI "other" calls
        ("/v1/models/gemini-2.5-flash:generateContent", GOOGLE_KEY, "gcp.gemini"),
        ("/v1/models/text-embedding-004:batchEmbedContents", {}, "gcp.gemini"),
        ("/v1beta/models", {}, "gcp.gemini"),
        # OpenAI's own paths under /v1/models stay OpenAI's, Anthropic's Anthropic's
        ("/v1/models", {}, "openai"),
        ("/v1/models/gpt-4o", {}, "openai"),
        ("/v1/chat/completions", {}, "openai"),
        ("/v1/messages", {}, "anthropic"),
    ],
)
def test_the_router_places_gemini_paths_by_the_table(path, headers, api):
    route = providers.ROUTER.route(path, headers)
    assert route is not None and route.api == api
    assert provider_for(path, headers).name == api


@pytest.mark.parametrize(
    ("path", "operation", "stream"),
    [
        ("/v1beta/models/m:generateContent", "chat", False),
        ("/v1/models/m:streamGenerateContent", "chat", True),
        ("/v1beta/models/m:countTokens", "count_tokens", False),
        ("/v1beta/models/m:embedContent", "embeddings", False),
        ("/v1beta/models/m:batchEmbedContents", "embeddings", False),
        ("/v1beta/models", "models", False),
        ("/v1beta/cachedContents", "other", False),
    ],
)
def test_operations_and_streams_come_from_the_path(path, operation, stream):
    assert GEMINI.operation(path) == operation
    assert GEMINI.wants_stream({}, path, {"alt": "sse"} if stream else {}) is stream


def test_matching_compares_the_method_not_the_version_the_model_or_the_stream_form():
    same = {
        providers.match_endpoint(p)
        for p in (
            "/v1/models/a:generateContent",
            "/v1beta/models/b:streamGenerateContent",
            GEMINI.endpoint("chat", model="c"),
        )
    }
    assert same == {"/v1beta/models:generateContent"}
    assert providers.match_endpoint("/v1/models/a:countTokens") == "/v1beta/models:countTokens"
    assert providers.match_endpoint("/v1/chat/completions") == "/v1/chat/completions"


def test_contents_read_into_parts():
    body = {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Lisbon?"}, {"inlineData": {"mimeType": "x"}}]},
            {
                "role": "model",
                "parts": [
                    {"text": "thinking", "thought": True, "thoughtSignature": "opaque"},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Lisbon"}}},
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "get_weather", "response": {"t": 21}}}],
            },
        ],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {"a": 1}}]}],
        "generationConfig": {"temperature": 0},
    }
    request = GEMINI.canonical("/v1beta/models/gemini-2.5-flash:generateContent", body)
    assert request.model == "gemini-2.5-flash"
    assert request.system == [{"type": "text", "content": "Be brief."}]
    assert request.messages == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Lisbon?"},
                {"type": "inlineData", "mimeType": "x"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "thinking"},
                {
                    "type": "tool_call",
                    "id": "get_weather_1",
                    "name": "get_weather",
                    "arguments": {"city": "Lisbon"},
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"type": "tool_call_response", "id": "get_weather_0", "response": {"t": 21}}],
        },
    ]
    assert request.tools == [
        {"type": "function", "name": "get_weather", "description": None, "parameters": {"a": 1}}
    ]
    assert request.params == {"generationConfig": {"temperature": 0}}


def test_errors_are_in_googles_format():
    error = GEMINI.error_body(400, "replay miss: model changed", "replay_miss")["error"]
    assert (error["code"], error["status"], error["message"]) == (
        400,
        "INVALID_ARGUMENT",
        "replay miss: model changed",
    )
    assert error["details"][0]["reason"] == "REPLAY_MISS"
    assert GEMINI.error_body(421, "x", "k")["error"]["status"] == "FAILED_PRECONDITION"


RESPONSE = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Sunny in Lisbon today."},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Porto"}}},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r1",
}


def test_a_body_streams_and_the_stream_adds_up_to_the_body():
    events = GEMINI.stream_from_body("chat", RESPONSE)
    assert len(events) > 2 and GEMINI.stream_done(events)
    assert not GEMINI.stream_done(events[:-1])
    assert GEMINI.body_from_stream("chat", events) == RESPONSE
    view = GEMINI.view_from_response("chat", RESPONSE)
    assert view.messages[0]["finish_reason"] == "tool_call"
    assert view.usage == {"input_tokens": 5, "output_tokens": 7}
    rebuilt = GEMINI.response_from_view("chat", view)
    assert rebuilt["candidates"][0]["content"]["parts"][0] == {"text": "Sunny in Lisbon today."}
    assert rebuilt["candidates"][0]["finishReason"] == "STOP"


def test_a_gemini_key_in_the_query_of_an_openai_call_is_misplaced():
    openai_row = providers.spec("openai")
    assert openai_row is not None
    query = {"query key": GOOGLE_KEY["x-goog-api-key"]}
    assert misplaced(openai_row, query) == "its query key holds a Gemini API key"
    gemini_row = providers.spec("gemini")
    assert gemini_row is not None and misplaced(gemini_row, query) is None
