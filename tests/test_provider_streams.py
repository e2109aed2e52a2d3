"""Provider streams against the official SDKs: a body turned into SSE by ``stream_from_body``,
served over loopback, must reassemble in the SDK into the same text, tool calls and usage;
and ``body_from_stream`` must invert ``stream_from_body`` exactly."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from otel_replay.core.exchange import SSEEvent
from otel_replay.providers.anthropic import ANTHROPIC
from otel_replay.providers.openai import OPENAI

USAGE_CHAT = {
    "prompt_tokens": 31,
    "completion_tokens": 18,
    "total_tokens": 49,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}

CHAT_TEXT = {
    "id": "chatcmpl-A1b2C3",
    "object": "chat.completion",
    "created": 1717000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "The capital of France is Paris.\n\nIt sits on the  Seine. ",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": USAGE_CHAT,
    "service_tier": "default",
    "system_fingerprint": "fp_0ba0d124f1",
}

CHAT_TOOLS = {
    "id": "chatcmpl-T00l5",
    "object": "chat.completion",
    "created": 1717000001,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "annotations": [],
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"location": "Paris, France", "unit": "celsius"}',
                        },
                    },
                    {
                        "id": "call_def456",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"tz":"Europe/Paris"}'},
                    },
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": USAGE_CHAT,
    "system_fingerprint": "fp_x",
}

RESPONSE_USAGE = {
    "input_tokens": 40,
    "input_tokens_details": {"cached_tokens": 8},
    "output_tokens": 22,
    "output_tokens_details": {"reasoning_tokens": 4},
    "total_tokens": 62,
}


def _response(output: list[dict[str, Any]], rid: str = "resp_67ccd2") -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": RESPONSE_USAGE,
        "user": None,
        "metadata": {},
    }


RESPONSE_TEXT = _response(
    [
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Thinking about unicorns."}],
        },
        {
            "id": "msg_67ccd3",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "In a peaceful grove beneath a silver moon, a unicorn slept.",
                    "annotations": [],
                    "logprobs": [],
                }
            ],
        },
    ]
)

RESPONSE_TOOLS = _response(
    [
        {
            "id": "fc_12345",
            "type": "function_call",
            "status": "completed",
            "arguments": '{"location":"Boston, MA","unit":"fahrenheit"}',
            "call_id": "call_9xyz",
            "name": "get_current_weather",
        },
        {
            "id": "fc_67890",
            "type": "function_call",
            "status": "completed",
            "arguments": "{}",
            "call_id": "call_8abc",
            "name": "list_cities",
        },
    ],
    rid="resp_tools",
)

MESSAGE_TEXT = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-20250514",
    "content": [
        {"type": "thinking", "thinking": "The user greets me.", "signature": "EqQBCgIYAh"},
        {"type": "text", "text": "Hi! My name is Claude. How can I help today?"},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 2095,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1024,
        "output_tokens": 503,
    },
}

MESSAGE_TOOLS = {
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-20250514",
    "content": [
        {"type": "text", "text": "I'll check the weather."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"location": "San Francisco, CA", "unit": "celsius"},
        },
        {"type": "tool_use", "id": "toolu_02B", "name": "noop", "input": {}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 472,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 89,
    },
}

COMPLETION = {
    "id": "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7",
    "object": "text_completion",
    "created": 1589478378,
    "model": "gpt-3.5-turbo-instruct",
    "system_fingerprint": "fp_44709d6fcb",
    "choices": [
        {
            "text": "\n\nThis is indeed a test",
            "index": 0,
            "logprobs": None,
            "finish_reason": "length",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
}


class SSEServer:
    """A loopback SSE server that plays a given event list to any request."""

    def __init__(self) -> None:
        self.events: list[SSEEvent] = []
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        self.error: tuple[int, Any] | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(await request.json())
        if self.error is not None:
            headers = {"x-should-retry": "false"}
            return web.json_response(self.error[1], status=self.error[0], headers=headers)
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for event in self.events:
            head = f"event: {event.event}\n" if event.event else ""
            await response.write(f"{head}data: {event.data}\n\n".encode())
        await response.write_eof()
        return response


@pytest.fixture
async def server() -> AsyncIterator[SSEServer]:
    sse = SSEServer()
    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", sse.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    sse.url = f"http://127.0.0.1:{port}"
    try:
        yield sse
    finally:
        await runner.cleanup()


@pytest.fixture
async def openai_client(server: SSEServer) -> AsyncIterator[openai.AsyncOpenAI]:
    url = f"{server.url}/v1"
    async with openai.AsyncOpenAI(api_key="sk-test", base_url=url, max_retries=0) as client:
        yield client


@pytest.fixture
async def anthropic_client(server: SSEServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    url = server.url
    async with anthropic.AsyncAnthropic(api_key="sk-ant-x", base_url=url, max_retries=0) as client:
        yield client


# --- round trips -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "operation", "body"),
    [
        (OPENAI, "chat", CHAT_TEXT),
        (OPENAI, "chat", CHAT_TOOLS),
        (OPENAI, "responses", RESPONSE_TEXT),
        (OPENAI, "responses", RESPONSE_TOOLS),
        (OPENAI, "completions", COMPLETION),
        (ANTHROPIC, "messages", MESSAGE_TEXT),
        (ANTHROPIC, "messages", MESSAGE_TOOLS),
    ],
)
def test_body_stream_body_round_trip(provider, operation, body):
    original = copy.deepcopy(body)
    events = provider.stream_from_body(operation, body)
    assert body == original, "stream_from_body must not mutate its input"
    assert provider.body_from_stream(operation, events) == body
    for event in events:
        if event.data != "[DONE]":
            assert event.data == json.dumps(json.loads(event.data), separators=(",", ":"))


def test_chat_stream_shape():
    events = OPENAI.stream_from_body("chat", CHAT_TOOLS)
    chunks = [json.loads(e.data) for e in events[:-1]]
    assert events[-1].data == "[DONE]" and events[-1].event is None
    assert chunks[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": None,
        "refusal": None,
    }
    starts = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"] and "id" in c["choices"][0]["delta"].get("tool_calls", [{}])[0]
    ]
    assert [(s["index"], s["id"], s["type"], s["function"]) for s in starts] == [
        (0, "call_abc123", "function", {"name": "get_weather", "arguments": ""}),
        (1, "call_def456", "function", {"name": "get_time", "arguments": ""}),
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == USAGE_CHAT
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


def test_responses_stream_shape():
    events = OPENAI.stream_from_body("responses", RESPONSE_TEXT)
    kinds = [e.event for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for expected in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.reasoning_summary_text.delta",
    ):
        assert expected in kinds
    payloads = [json.loads(e.data) for e in events]
    assert [p["sequence_number"] for p in payloads] == list(range(len(events)))
    assert all(p["type"] == e.event for p, e in zip(payloads, events, strict=True))
    tool_kinds = [e.event for e in OPENAI.stream_from_body("responses", RESPONSE_TOOLS)]
    assert "response.function_call_arguments.delta" in tool_kinds
    assert "response.function_call_arguments.done" in tool_kinds


def test_anthropic_stream_shape():
    events = ANTHROPIC.stream_from_body("messages", MESSAGE_TOOLS)
    kinds = [e.event for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [
        json.loads(e.data)["delta"]["type"] for e in events if e.event == "content_block_delta"
    ]
    assert {"text_delta", "input_json_delta"} <= set(deltas)
    final = json.loads(events[-2].data)
    assert final["delta"]["stop_reason"] == "tool_use"
    assert final["usage"]["output_tokens"] == 89
    thinking = [json.loads(e.data) for e in ANTHROPIC.stream_from_body("messages", MESSAGE_TEXT)]
    assert any(p.get("delta", {}).get("type") == "thinking_delta" for p in thinking)


def test_broken_streams_still_assemble():
    responses = OPENAI.stream_from_body("responses", RESPONSE_TOOLS)[:-1]
    partial = OPENAI.body_from_stream("responses", responses)
    assert [i["call_id"] for i in partial["output"]] == ["call_9xyz", "call_8abc"]
    message = ANTHROPIC.stream_from_body("messages", MESSAGE_TOOLS)[:-3]
    body = ANTHROPIC.body_from_stream("messages", message)
    assert body["content"][1]["input"] == {"location": "San Francisco, CA", "unit": "celsius"}
    assert OPENAI.body_from_stream("chat", [SSEEvent(data="not json")])["choices"] == []
    assert ANTHROPIC.body_from_stream("messages", []) == {}


# --- the official SDKs as clients -------------------------------------------------------


def _tool_calls(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    calls = body["choices"][0]["message"].get("tool_calls") or []
    return [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls]


CHAT_UNICODE = copy.deepcopy(CHAT_TEXT)
CHAT_UNICODE["choices"][0]["message"]["content"] = 'line\u2028sep\x85nel \u00e9 \u65e5\u672c "q"\n'


@pytest.mark.parametrize(
    "body", [CHAT_TEXT, CHAT_TOOLS, CHAT_UNICODE], ids=["text", "tools", "unicode"]
)
async def test_openai_chat_sdk(server, openai_client, body):
    server.events = OPENAI.stream_from_body("chat", body)
    messages = [{"role": "user", "content": "hi"}]
    async with openai_client.chat.completions.stream(model="m", messages=messages) as stream:
        final = await stream.get_final_completion()
    sdk = final.model_dump()
    assert sdk["choices"][0]["message"]["content"] == body["choices"][0]["message"]["content"]
    assert _tool_calls(sdk) == _tool_calls(body)
    assert sdk["choices"][0]["finish_reason"] == body["choices"][0]["finish_reason"]
    assert final.usage is not None and final.usage.total_tokens == USAGE_CHAT["total_tokens"]
    assert final.id == body["id"]

    raw = await openai_client.chat.completions.create(
        model="m", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text, usage = "", None
    async for chunk in raw:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        usage = chunk.usage or usage
    assert text == (body["choices"][0]["message"]["content"] or "")
    assert usage is not None and usage.prompt_tokens == USAGE_CHAT["prompt_tokens"]
    assert server.requests[-1]["stream"] is True


async def test_openai_completions_sdk(server, openai_client):
    server.events = OPENAI.stream_from_body("completions", COMPLETION)
    raw = await openai_client.completions.create(
        model="m", prompt="Say this is a test", stream=True
    )
    text, finish, usage = "", None, None
    async for chunk in raw:
        if chunk.choices:
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
        usage = chunk.usage or usage
    assert text == COMPLETION["choices"][0]["text"] and finish == "length"
    assert usage is not None and usage.total_tokens == 12


@pytest.mark.parametrize("body", [RESPONSE_TEXT, RESPONSE_TOOLS], ids=["text", "tools"])
async def test_openai_responses_sdk(server, openai_client, body):
    server.events = OPENAI.stream_from_body("responses", body)
    async with openai_client.responses.stream(model="m", input="hi") as stream:
        final = await stream.get_final_response()
    assert final.id == body["id"]
    expected_text = "".join(
        c["text"] for i in body["output"] if i["type"] == "message" for c in i["content"]
    )
    assert final.output_text == expected_text
    calls = [(i.call_id, i.name, i.arguments) for i in final.output if i.type == "function_call"]
    assert calls == [
        (i["call_id"], i["name"], i["arguments"])
        for i in body["output"]
        if i["type"] == "function_call"
    ]
    assert final.usage is not None and final.usage.model_dump(exclude_none=True) == RESPONSE_USAGE

    raw = await openai_client.responses.create(model="m", input="hi", stream=True)
    deltas, args, kinds = "", "", []
    async for event in raw:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas += event.delta
        if event.type == "response.function_call_arguments.delta":
            args += event.delta
    assert deltas == expected_text
    assert args == "".join(i["arguments"] for i in body["output"] if i["type"] == "function_call")
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"


@pytest.mark.parametrize("body", [MESSAGE_TEXT, MESSAGE_TOOLS], ids=["text", "tools"])
async def test_anthropic_messages_sdk(server, anthropic_client, body):
    server.events = ANTHROPIC.stream_from_body("messages", body)
    messages = [{"role": "user", "content": "Hello"}]
    async with anthropic_client.messages.stream(
        model="m", max_tokens=1024, messages=messages
    ) as stream:
        final = await stream.get_final_message()
    dumped = final.model_dump(exclude_none=True)
    assert [b["type"] for b in dumped["content"]] == [b["type"] for b in body["content"]]
    for got, want in zip(dumped["content"], body["content"], strict=True):
        assert {k: got.get(k) for k in want} == want
    assert final.stop_reason == body["stop_reason"]
    assert final.usage.output_tokens == body["usage"]["output_tokens"]
    assert final.usage.input_tokens == body["usage"]["input_tokens"]
    assert final.usage.cache_read_input_tokens == body["usage"]["cache_read_input_tokens"]
    assert final.id == body["id"]

    raw = await anthropic_client.messages.create(
        model="m", max_tokens=1024, messages=messages, stream=True
    )
    text = ""
    async for event in raw:
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            text += event.delta.text
    assert text == "".join(b.get("text", "") for b in body["content"])
    assert server.requests[-1]["stream"] is True


# --- properties ------------------------------------------------------------------------

_ARGS = st.dictionaries(st.text(max_size=8), st.text(max_size=12) | st.integers(), max_size=3)


@given(text=st.text(max_size=60), args=_ARGS)
def test_any_text_and_arguments_round_trip(text, args):
    chat = copy.deepcopy(CHAT_TOOLS)
    chat["choices"][0]["message"]["content"] = text
    chat["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps(args)
    assert OPENAI.body_from_stream("chat", OPENAI.stream_from_body("chat", chat)) == chat
    response = copy.deepcopy(RESPONSE_TEXT)
    response["output"][1]["content"][0]["text"] = text
    events = OPENAI.stream_from_body("responses", response)
    deltas = [json.loads(e.data) for e in events if e.event == "response.output_text.delta"]
    assert "".join(d["delta"] for d in deltas) == text
    message = copy.deepcopy(MESSAGE_TOOLS)
    message["content"][0]["text"] = text
    message["content"][1]["input"] = args
    assert (
        ANTHROPIC.body_from_stream("messages", ANTHROPIC.stream_from_body("messages", message))
        == message
    )


async def test_error_bodies_reach_the_sdks(server, openai_client, anthropic_client):
    server.error = (400, OPENAI.error_body(400, "replay miss: model changed", "replay_miss"))
    with pytest.raises(openai.BadRequestError) as caught:
        await openai_client.chat.completions.create(model="m", messages=[])
    assert caught.value.message.endswith("replay miss: model changed")
    assert caught.value.type == "replay_miss"
    server.error = (404, ANTHROPIC.error_body(404, "replay miss: x", "not_found_error"))
    with pytest.raises(anthropic.NotFoundError) as missing:
        await anthropic_client.messages.create(model="m", max_tokens=1, messages=[])
    assert "replay miss: x" in str(missing.value)
    assert missing.value.body["error"]["type"] == "not_found_error"
