"""Bedrock's wire format, pure: AWS event-stream framing against botocore's own parser,
Converse requests in the canonical form, and streams ⇄ bodies both ways."""

from __future__ import annotations

import json

import pytest
from botocore.eventstream import EventStreamBuffer

from otel_replay.core.exchange import SSEEvent
from otel_replay.providers import get, match_endpoint
from otel_replay.providers.bedrock import BEDROCK
from otel_replay.providers.bedrock_paths import split_path
from otel_replay.streams.codec import decode_all, encode_all
from otel_replay.streams.eventstream import EVENTSTREAM
from otel_replay.testing import stub_bedrock

EVENTS = [
    SSEEvent(data='{"role":"assistant"}', event="messageStart"),
    SSEEvent(data='{"delta":{"text":"h\\u00e9"},"contentBlockIndex":0}', event="contentBlockDelta"),
    SSEEvent(data='{"message":"slow down"}', event="exception:throttlingException"),
    SSEEvent(data="internal failure", event="error:InternalFailure"),
]


def test_encoded_events_are_what_botocore_parses():
    buffer = EventStreamBuffer()
    buffer.add_data(encode_all(EVENTSTREAM, EVENTS))
    messages = list(buffer)
    assert [m.headers for m in messages] == [
        {
            ":event-type": "messageStart",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        {
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        {
            ":message-type": "exception",
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
        },
        {
            ":message-type": "error",
            ":error-code": "InternalFailure",
            ":error-message": "internal failure",
        },
    ]
    assert [m.payload for m in messages[:3]] == [e.data.encode() for e in EVENTS[:3]]


def test_decoding_byte_by_byte_holds_back_only_the_incomplete_message():
    payload = encode_all(EVENTSTREAM, EVENTS)
    first = len(EVENTSTREAM.encode(EVENTS[0]))
    decoder = EVENTSTREAM.decoder()
    seen: list[SSEEvent] = []
    for i in range(len(payload)):
        seen += decoder.feed(payload[i : i + 1], t=float(i))
        if i == first - 2:
            assert (seen, decoder.pending) == ([], first - 1)
        if i == first - 1:
            assert len(seen) == 1 and decoder.pending == 0
    assert [(e.event, e.data) for e in seen] == [(e.event, e.data) for e in EVENTS]
    assert decoder.close() == []
    assert decode_all(EVENTSTREAM, payload) == [SSEEvent(e.data, e.event) for e in EVENTS]


def test_the_gateways_own_stream_error_is_an_exception_boto3_raises():
    (event,) = decode_all(EVENTSTREAM, EVENTSTREAM.encode(SSEEvent('{"message":"x"}', "error")))
    assert (event.event, event.data) == ("exception:internalServerException", '{"message":"x"}')


def test_a_corrupt_message_ends_decoding_without_an_error():
    good = EVENTSTREAM.encode(EVENTS[0])
    bad = bytearray(EVENTSTREAM.encode(EVENTS[1]))
    bad[-1] ^= 0xFF  # its CRC
    decoder = EVENTSTREAM.decoder()
    events = decoder.feed(good + bytes(bad) + good)
    assert [e.event for e in events] == ["messageStart"]
    assert decoder.pending == 0 and decoder.feed(good) == []


def test_the_stubs_framing_is_the_codecs():
    framed = stub_bedrock.event("metadata", {"usage": {"inputTokens": 1}})
    (event,) = decode_all(EVENTSTREAM, framed)
    assert event.event == "metadata" and json.loads(event.data)["usage"] == {"inputTokens": 1}


# --- the Bedrock surface --------------------------------------------------------------------


def test_paths_endpoints_and_streams():
    path = "/model/arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x-v1:0/converse"
    assert split_path(path) == (
        "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x-v1:0",
        "converse",
    )
    assert split_path("/v1/chat/completions") == (None, "/v1/chat/completions")
    assert get("aws.bedrock") is BEDROCK
    assert [BEDROCK.operation(f"/model/m/{a}") for a in ("converse-stream", "invoke", "x")] == [
        "converse",
        "invoke",
        "other",
    ]
    assert BEDROCK.wants_stream({}, "/model/m/invoke-with-response-stream")
    assert not BEDROCK.wants_stream({"stream": True}, "/model/m/invoke")
    assert BEDROCK.canonical("/model/m/converse-stream", {}).endpoint == "/model/m/converse"
    assert match_endpoint("/model/m/converse") == "/model/{model}/converse"
    assert BEDROCK.endpoint("converse", model="m") == "/model/m/converse"


def test_a_converse_request_in_the_canonical_form():
    body = {
        "system": [{"text": "be brief"}, {"cachePoint": {"type": "default"}}],
        "messages": [
            {"role": "user", "content": [{"text": "hi"}, {"image": {"format": "png"}}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "content": [{"text": "ok"}],
                            "status": "error",
                        }
                    }
                ],
            },
        ],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object"}}}}],
            "toolChoice": {"auto": {}},
        },
        "inferenceConfig": {"maxTokens": 10},
    }
    request = BEDROCK.canonical("/model/m/converse", body)
    assert request.model == "m"
    assert request.system == [{"type": "text", "content": "be brief"}]
    assert request.messages[0]["parts"][1] == {"type": "image", "image": {"format": "png"}}
    assert request.messages[1]["parts"] == [
        {"type": "tool_call", "id": "t1", "name": "f", "arguments": {"a": 1}}
    ]
    assert request.messages[2]["parts"] == [
        {"type": "tool_call_response", "id": "t1", "response": "ok", "is_error": True}
    ]
    assert request.tools == [
        {"type": "function", "name": "f", "description": None, "parameters": {"type": "object"}}
    ]
    assert request.params == {
        "inferenceConfig": {"maxTokens": 10},
        "toolConfig": {"toolChoice": {"auto": {}}},
    }


CONVERSE = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "think", "signature": "sig"}}},
                {"text": "Lisbon is sunny"},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {"city": "Oslo"}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
    "metrics": {"latencyMs": 9},
}


def test_converse_streams_and_bodies_convert_both_ways():
    events = BEDROCK.stream_from_body("converse", CONVERSE)
    assert events[0].event == "messageStart" and events[-1].event == "metadata"
    assert BEDROCK.stream_done(events) and not BEDROCK.stream_done(events[:-1])
    # through the wire and back, as the relay records it
    wire = decode_all(EVENTSTREAM, encode_all(EVENTSTREAM, events))
    assert BEDROCK.body_from_stream("converse", wire) == CONVERSE
    view = BEDROCK.view_from_response("converse", CONVERSE)
    assert view.messages[0]["finish_reason"] == "tool_call"
    assert view.usage == {"input_tokens": 3, "output_tokens": 5}
    rebuilt = BEDROCK.response_from_view("converse", view)
    assert (
        rebuilt["output"]["message"]["content"][1:] == CONVERSE["output"]["message"]["content"][1:]
    )
    assert rebuilt["stopReason"] == "tool_use"


def test_invoke_streams_carry_anthropic_events_base64_encoded():
    message = stub_bedrock.invoke("m", {"messages": [{"role": "user", "content": "hi"}]}, False)
    events = BEDROCK.stream_from_body("invoke", message)
    assert {e.event for e in events} == {"chunk"}
    assert BEDROCK.stream_done(events) and not BEDROCK.stream_done(events[:-1])
    assert BEDROCK.body_from_stream("invoke", events)["content"] == message["content"]
    streamed = stub_bedrock.invoke("m", {"messages": [{"role": "user", "content": "hi"}]}, True)
    recorded = [e for chunk in streamed for e in decode_all(EVENTSTREAM, chunk)]
    assert BEDROCK.body_from_stream("invoke", recorded)["content"] == message["content"]
    assert BEDROCK.view_from_response("invoke", message).messages[0]["parts"][0]["content"] == (
        "stub reply to: hi"
    )


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "ValidationException"),
        (429, "ThrottlingException"),
        (500, "InternalServerException"),
        (502, "ServiceUnavailableException"),
    ],
)
def test_errors_are_awss_json_errors(status, code):
    assert BEDROCK.error_body(status, "why", "replay_miss") == {"__type": code, "message": "why"}
