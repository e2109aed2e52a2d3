"""Provider request reading, error bodies and semantic-convention views, as tables."""

from __future__ import annotations

import copy
import json

import anthropic.types
import openai.types
import openai.types.chat
import openai.types.responses
import pytest

from otel_replay.providers import OutputView, get, provider_for
from otel_replay.providers.anthropic import ANTHROPIC
from otel_replay.providers.openai import OPENAI

# --- routing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "headers", "provider", "operation", "endpoint"),
    [
        ("/v1/chat/completions", {}, "openai", "chat", "/v1/chat/completions"),
        ("/openai/v1/responses", {}, "openai", "responses", "/v1/responses"),
        ("/v1/embeddings", {"authorization": "Bearer x"}, "openai", "embeddings", "/v1/embeddings"),
        ("/v1/completions", {}, "openai", "completions", "/v1/completions"),
        ("/v1/models", {}, "openai", "models", "/v1/models"),
        ("/v1/files/", {}, "openai", "other", "/v1/files"),
        ("/v1/messages", {}, "anthropic", "messages", "/v1/messages"),
        (
            "/proxy/v1/messages/count_tokens",
            {},
            "anthropic",
            "count_tokens",
            "/v1/messages/count_tokens",
        ),
        ("/v1/models", {"anthropic-version": "2023-06-01"}, "anthropic", "models", "/v1/models"),
        ("/v1/messages/batches", {"x-api-key": "k"}, "anthropic", "other", "/v1/messages/batches"),
        ("/v1/models?limit=2", {}, "openai", "models", "/v1/models?limit=2"),
    ],
)
def test_routing(path, headers, provider, operation, endpoint):
    chosen = provider_for(path, headers)
    assert chosen.name == provider and get(provider) is chosen
    assert chosen.operation(path) == operation
    assert chosen.canonical(path, None).endpoint == endpoint


def test_endpoints():
    assert OPENAI.endpoint("chat") == "/v1/chat/completions"
    assert OPENAI.endpoint("responses") == "/v1/responses"
    assert ANTHROPIC.endpoint("count_tokens") == "/v1/messages/count_tokens"
    for provider in (OPENAI, ANTHROPIC):
        for op in ("chat", "responses", "embeddings", "completions", "messages", "count_tokens"):
            path = provider.endpoint(op)
            if path != "/v1":
                assert provider.operation(path) == op


# --- canonical requests ----------------------------------------------------------------

CHAT = "/v1/chat/completions"


def chat(messages, **extra):
    return OPENAI.canonical(CHAT, {"model": "gpt-4o", "messages": messages, **extra})


def test_chat_string_and_text_blocks_read_the_same():
    plain = chat([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    blocks = chat(
        [
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        ]
    )
    assert plain == blocks
    assert plain.system == [{"type": "text", "content": "Be brief."}]
    assert plain.messages == [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
    assert plain.model == "gpt-4o"


def test_chat_leading_system_and_developer_only():
    request = chat(
        [
            {"role": "developer", "content": "A"},
            {"role": "system", "content": "B"},
            {"role": "user", "content": "C", "name": "bob"},
            {"role": "system", "content": "D"},
        ]
    )
    assert request.system == [{"type": "text", "content": "A"}, {"type": "text", "content": "B"}]
    assert [m["role"] for m in request.messages] == ["user", "system"]
    assert request.messages[0]["name"] == "bob"
    assert chat([{"role": "user", "content": "x"}]).system is None


def test_chat_tool_calls_results_and_tools():
    request = chat(
        [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{bad"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "ok"}]},
        ],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "d",
                    "parameters": {"type": "object"},
                },
            }
        ],
        temperature=0,
        tool_choice="auto",
    )
    assistant, first, second = request.messages[1:]
    assert assistant == {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "call_1",
                "name": "get_weather",
                "arguments": {"city": "Paris"},
            },
            {"type": "tool_call", "id": "call_2", "name": "f", "arguments": "{bad"},
        ],
    }
    assert first == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}],
    }
    assert second["parts"][0]["response"] == "ok"
    assert request.tools == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "d",
            "parameters": {"type": "object"},
        }
    ]
    assert request.params == {"temperature": 0, "tool_choice": "auto"}


def test_empty_content_says_nothing():
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    none = chat([{"role": "assistant", "content": None, "tool_calls": [call]}])
    empty = chat([{"role": "assistant", "content": "", "tool_calls": [call]}])
    blocks = chat(
        [{"role": "assistant", "content": [{"type": "text", "text": ""}], "tool_calls": [call]}]
    )
    assert none == empty == blocks


def test_chat_generic_parts_keep_other_content():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    request = chat([{"role": "user", "content": [{"type": "text", "text": "see"}, image]}])
    assert request.messages[0]["parts"][1] == image


@pytest.mark.parametrize(
    ("provider", "path", "body"),
    [
        (
            OPENAI,
            CHAT,
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 1},
        ),
        (OPENAI, "/v1/responses", {"model": "m", "input": "x", "max_output_tokens": 9}),
        (OPENAI, "/v1/completions", {"model": "m", "prompt": "x"}),
        (ANTHROPIC, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": []}),
    ],
)
def test_stream_fields_are_transport(provider, path, body):
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    if provider is ANTHROPIC:
        streamed.pop("stream_options")
    assert provider.canonical(path, streamed) == provider.canonical(path, body)
    assert provider.wants_stream(streamed) and not provider.wants_stream(body)
    assert "stream" not in provider.canonical(path, streamed).params


def test_responses_items():
    request = OPENAI.canonical(
        "/v1/responses",
        {
            "model": "gpt-4.1",
            "instructions": "You are terse.",
            "input": [
                {"role": "user", "content": "weather?"},
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": '{"city":"Paris"}',
                    "status": "completed",
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            ],
            "tools": [
                {"type": "function", "name": "get_weather", "parameters": {}, "strict": True},
                {"type": "web_search_preview"},
            ],
            "reasoning": {"effort": "low"},
        },
    )
    assert request.system == [{"type": "text", "content": "You are terse."}]
    assert request.messages == [
        {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": {"city": "Paris"},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": "sunny"}],
        },
    ]
    assert request.tools == [
        {
            "type": "function",
            "name": "get_weather",
            "description": None,
            "parameters": {},
            "strict": True,
        },
        {"type": "web_search_preview"},
    ]
    assert request.params == {"reasoning": {"effort": "low"}}
    text_blocks = OPENAI.canonical(
        "/v1/responses",
        {
            "model": "gpt-4.1",
            "instructions": "You are terse.",
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hi"}],
                }
            ],
        },
    )
    string = OPENAI.canonical(
        "/v1/responses", {"model": "gpt-4.1", "instructions": "You are terse.", "input": "hi"}
    )
    assert text_blocks == string


def test_embeddings_and_completions_inputs():
    one = OPENAI.canonical("/v1/embeddings", {"model": "e", "input": "a", "dimensions": 8})
    many = OPENAI.canonical("/v1/embeddings", {"model": "e", "input": ["a", "b"]})
    assert one.messages == [{"role": "user", "parts": [{"type": "text", "content": "a"}]}]
    assert [m["parts"][0]["content"] for m in many.messages] == ["a", "b"]
    assert one.params == {"dimensions": 8}
    tokens = OPENAI.canonical("/v1/embeddings", {"model": "e", "input": [1, 2, 3]})
    assert tokens.messages == [{"role": "user", "parts": [{"type": "tokens", "tokens": [1, 2, 3]}]}]
    prompt = OPENAI.canonical("/v1/completions", {"model": "i", "prompt": "p", "max_tokens": 3})
    assert prompt.messages[0]["parts"] == [{"type": "text", "content": "p"}]
    assert prompt.params == {"max_tokens": 3}
    models = OPENAI.canonical("/v1/models", None)
    assert (models.endpoint, models.messages, models.params) == ("/v1/models", None, {})


def test_anthropic_blocks():
    cached = {"type": "ephemeral"}
    request = ANTHROPIC.canonical(
        "/v1/messages",
        {
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "Be kind.", "cache_control": cached}],
            "messages": [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "get_weather",
                            "input": {"c": "P"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_2",
                            "content": [{"type": "text", "text": "boom"}],
                            "is_error": True,
                        },
                    ],
                },
            ],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "d",
                    "input_schema": {"type": "object"},
                    "cache_control": cached,
                },
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
            ],
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "stream": True,
        },
    )
    assert request.system == [{"type": "text", "content": "Be kind."}]
    assert request.messages[1]["parts"] == [
        {"type": "reasoning", "content": "hmm"},
        {"type": "tool_call", "id": "toolu_1", "name": "get_weather", "arguments": {"c": "P"}},
    ]
    assert request.messages[2]["parts"] == [
        {"type": "tool_call_response", "id": "toolu_1", "response": "sunny"},
        {"type": "tool_call_response", "id": "toolu_2", "response": "boom", "is_error": True},
    ]
    assert request.tools == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "d",
            "parameters": {"type": "object"},
        },
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
    ]
    assert request.params == {
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
    }
    string = ANTHROPIC.canonical(
        "/v1/messages",
        {"model": "c", "system": "S", "messages": [{"role": "user", "content": "hi"}]},
    )
    blocks = ANTHROPIC.canonical(
        "/v1/messages",
        {
            "model": "c",
            "system": [{"type": "text", "text": "S"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        },
    )
    assert string == blocks


ODD_BODIES = [
    None,
    [],
    "text",
    7,
    {},
    {"model": 5, "messages": "hello"},
    {"messages": [1, None, "x", {"role": 5, "content": {"x": 1}}]},
    {"messages": [{"role": "assistant", "tool_calls": [1, {"function": "x"}, {"type": "custom"}]}]},
    {"messages": [{"role": "tool"}], "tools": "x", "functions": [1]},
    {"messages": [{"role": "system", "content": None}, {"role": "user", "content": [None, 3]}]},
    {"input": 7, "instructions": ["x", 5, {"role": "system", "content": "y"}], "tools": [1, {}]},
    {"input": [None, {"type": "reasoning", "summary": "bad"}, {"type": "computer_call"}, [1]]},
    {"system": 3, "messages": [{"role": "user", "content": [{"type": "tool_result"}, {}]}]},
    {"prompt": [[1, 2], {"x": 1}], "tools": [{"type": "function"}, {"input_schema": None}]},
]


@pytest.mark.parametrize("body", ODD_BODIES)
@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/embeddings",
        "/v1/completions",
        "/v1/models",
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/other",
    ],
)
def test_odd_bodies_do_not_raise(body, path):
    for provider in (OPENAI, ANTHROPIC):
        snapshot = copy.deepcopy(body)
        request = provider.canonical(path, body)
        assert body == snapshot
        assert "stream" not in request.params
        json.dumps([request.system, request.messages, request.tools, request.params])
        provider.view_from_response(provider.operation(path), body)
        provider.stream_from_body(provider.operation(path), body)


# --- error bodies ----------------------------------------------------------------------


def test_error_bodies():
    assert OPENAI.error_body(400, "replay miss: x", "replay_miss") == {
        "error": {
            "message": "replay miss: x",
            "type": "replay_miss",
            "param": None,
            "code": "replay_miss",
        }
    }
    assert ANTHROPIC.error_body(400, "replay miss: x", "replay_miss") == {
        "type": "error",
        "error": {"type": "replay_miss", "message": "replay miss: x"},
    }


# --- semantic-convention views ---------------------------------------------------------

VIEW = OutputView(
    messages=[
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Checking."},
                {
                    "type": "tool_call",
                    "id": "call_9",
                    "name": "get_weather",
                    "arguments": {"city": "Oslo"},
                },
            ],
            "finish_reason": "tool_call",
        }
    ],
    response_id=None,
    model="some-model",
    usage={"input_tokens": 120, "output_tokens": 30, "cache_read.input_tokens": 100},
)

NO_IDS = OutputView(
    messages=[
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "f", "arguments": "{}"}]}
    ],
    usage={"input_tokens": 1, "output_tokens": 2},
)


def test_chat_from_view_parses_with_sdk():
    body = OPENAI.response_from_view("chat", VIEW)
    completion = openai.types.chat.ChatCompletion.model_validate(body)
    message = completion.choices[0].message
    assert message.content == "Checking."
    assert message.tool_calls[0].id == "call_9"
    assert json.loads(message.tool_calls[0].function.arguments) == {"city": "Oslo"}
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage.prompt_tokens == 120 and completion.usage.total_tokens == 150
    assert completion.usage.prompt_tokens_details.cached_tokens == 100
    assert OPENAI.response_from_view("chat", VIEW) == body


def test_responses_from_view_parses_with_sdk():
    body = OPENAI.response_from_view("responses", VIEW)
    response = openai.types.responses.Response.model_validate(body)
    assert response.output_text == "Checking."
    call = next(i for i in response.output if i.type == "function_call")
    assert (call.call_id, call.name, json.loads(call.arguments)) == (
        "call_9",
        "get_weather",
        {"city": "Oslo"},
    )
    assert response.usage.input_tokens_details.cached_tokens == 100
    length = OutputView(messages=[{"role": "assistant", "parts": [], "finish_reason": "length"}])
    truncated = openai.types.responses.Response.model_validate(
        OPENAI.response_from_view("responses", length)
    )
    assert truncated.status == "incomplete"


def test_anthropic_from_view_parses_with_sdk():
    body = ANTHROPIC.response_from_view("messages", VIEW)
    message = anthropic.types.Message.model_validate(body)
    assert message.stop_reason == "tool_use"
    assert message.content[0].text == "Checking."
    assert (message.content[1].id, message.content[1].input) == ("call_9", {"city": "Oslo"})
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (20, 100)
    stop = OutputView(
        messages=[
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "x"}],
                "finish_reason": "stop",
            }
        ]
    )
    assert ANTHROPIC.response_from_view("messages", stop)["stop_reason"] == "end_turn"


def test_other_operations_from_view_parse_with_sdk():
    openai.types.Completion.model_validate(OPENAI.response_from_view("completions", VIEW))
    vectors = OutputView(embeddings=[[0.1, 0.2]], usage={"input_tokens": 3})
    embedded = openai.types.CreateEmbeddingResponse.model_validate(
        OPENAI.response_from_view("embeddings", vectors)
    )
    assert embedded.data[0].embedding == [0.1, 0.2]
    counted = ANTHROPIC.response_from_view("count_tokens", OutputView(usage={"input_tokens": 9}))
    assert anthropic.types.MessageTokensCount.model_validate(counted).input_tokens == 9


@pytest.mark.parametrize(
    ("provider", "operation", "validate"),
    [
        (OPENAI, "chat", openai.types.chat.ChatCompletion.model_validate),
        (OPENAI, "responses", openai.types.responses.Response.model_validate),
        (ANTHROPIC, "messages", anthropic.types.Message.model_validate),
    ],
)
def test_view_round_trip_and_deterministic_ids(provider, operation, validate):
    body = provider.response_from_view(operation, VIEW)
    back = provider.view_from_response(operation, body)
    assert back.messages == VIEW.messages
    assert {key: back.usage[key] for key in VIEW.usage} == VIEW.usage
    assert all(count == 0 for key, count in back.usage.items() if key not in VIEW.usage)
    assert back.model == "some-model" and back.response_id
    first = provider.response_from_view(operation, NO_IDS)
    validate(first)
    assert first == provider.response_from_view(operation, NO_IDS)
    calls = provider.view_from_response(operation, first).messages[0]["parts"]
    assert all(part["id"] for part in calls)
    assert validate(provider.response_from_view(operation, OutputView()))


def test_view_from_bodies():
    chat_view = OPENAI.view_from_response(
        "chat",
        {
            "id": "chatcmpl-1",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"a":1}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        },
    )
    assert chat_view.messages == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1}}],
            "finish_reason": "tool_call",
        }
    ]
    assert chat_view.usage == {"input_tokens": 5, "output_tokens": 2}
    message_view = ANTHROPIC.view_from_response(
        "messages",
        {
            "id": "msg_1",
            "type": "message",
            "model": "claude",
            "content": [
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "text", "text": "hi"},
            ],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 4, "output_tokens": 1},
        },
    )
    assert message_view.messages[0]["finish_reason"] == "length"
    assert message_view.messages[0]["parts"][0] == {"type": "redacted_thinking", "data": "xyz"}
    assert message_view.usage == {
        "input_tokens": 7,
        "output_tokens": 1,
        "cache_creation.input_tokens": 4,
    }
    rebuilt = ANTHROPIC.response_from_view("messages", message_view)
    assert rebuilt["content"][0] == {"type": "redacted_thinking", "data": "xyz"}
    assert rebuilt["stop_reason"] == "max_tokens"
