"""Lossy trace forms: a recording read from a form that cannot express something is
compared, on both sides, in what that form can express — and in nothing less."""

from __future__ import annotations

import dataclasses

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.cassette.model import dumps, loads
from otel_replay.core.errors import CassetteError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.matching.matcher import Matcher
from otel_replay.matching.views import tool_results
from otel_replay.otlp.attributes import dict_to_attributes
from otel_replay.readers.registry import read_call

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def tool(description="Current weather", **extra):  # type: ignore[no-untyped-def]
    return {
        "type": "function",
        "name": "get_weather",
        "description": description,
        "parameters": SCHEMA,
        **extra,
    }


def call(id_="call_1"):  # type: ignore[no-untyped-def]
    part = {"type": "tool_call", "id": id_, "name": "get_weather", "arguments": {"city": "P"}}
    return {"role": "assistant", "parts": [part]}


def result(role, id_="call_1"):  # type: ignore[no-untyped-def]
    return {"role": role, "parts": [{"type": "tool_call_response", "id": id_, "response": "21"}]}


def request(tools, messages, views=()):  # type: ignore[no-untyped-def]
    return CanonicalRequest(
        "/v1/chat/completions",
        "gpt-4o-mini",
        None,
        messages,
        tools,
        {},
        known=frozenset({"endpoint", "model", "system", "messages", "tools"}),
        views=frozenset(views),
    )


QUESTION = [{"role": "user", "parts": [{"type": "text", "content": "weather?"}]}]
LIVE = request([tool(strict=True)], [*QUESTION, call(), result("tool")])


BOTH = ["tool-definitions", "tool-results"]
ANSWERED = [*QUESTION, call(), result("tool")]
ANSWERED_AS_USER = [*QUESTION, call(), result("user")]
OTHER_RESULT = [
    *QUESTION,
    call(),
    {**result("user"), "parts": [{**result("user")["parts"][0], "response": "22"}]},
]


@pytest.mark.parametrize(
    ("recorded", "hit"),
    [
        # the form has no strict flag and no fixed role for tool results: compared without
        (request([tool()], ANSWERED_AS_USER, BOTH), True),
        # what the form does express still counts
        (request([tool("Other")], ANSWERED, BOTH), False),
        (request([tool()], OTHER_RESULT, BOTH), False),
        # a recording that named no lossy form is compared in full
        (request([tool()], ANSWERED), False),
        (request([tool(strict=True)], ANSWERED_AS_USER), False),
    ],
)
def test_a_lossy_form_is_compared_in_what_it_expresses(recorded, hit):
    matcher = Matcher([recorded])
    found = matcher.probe(LIVE)
    assert (found == 0) is hit, found


def test_tool_results_in_a_row_count_as_one_tool_message():
    messages = [call(), result("user", "a"), result("tool", "b"), *QUESTION]
    assert tool_results(messages) == [
        call(),
        {"role": "tool", "parts": [*result("x", "a")["parts"], *result("x", "b")["parts"]]},
        *QUESTION,
    ]


def _cassette_text(views):  # type: ignore[no-untyped-def]
    from otel_replay.cassette.model import Cassette

    exchange = Exchange(
        "openai", "chat", request([tool()], QUESTION, views), Response(200, body={"x": 1})
    )
    return dumps(Cassette(interactions=[exchange], source={}))


def test_the_interaction_records_what_was_compared():
    text = _cassette_text(["tool-definitions"])
    assert '"views": [\n' in text
    loaded = loads(text).interactions[0].request
    assert loaded.views == {"tool-definitions"}
    assert dataclasses.replace(loaded, views=frozenset()) != loaded


def test_an_unknown_form_is_refused_naming_the_place():
    text = _cassette_text(["tool-definitions"]).replace('"tool-definitions"', '"guesswork"')
    with pytest.raises(CassetteError, match=r"interactions\[0\]\.request\.views\[0\]"):
        loads(text)


def responses_request(system, messages, views=()):  # type: ignore[no-untyped-def]
    return dataclasses.replace(
        request(None, messages, views), endpoint="/v1/responses", system=system, tools=None
    )


def text(role, content):  # type: ignore[no-untyped-def]
    return {"role": role, "parts": [{"type": "text", "content": content}]}


BRIEFLY = [{"type": "text", "content": "Answer briefly."}]
AS_MESSAGE = [text("system", "Answer briefly."), *QUESTION]
AS_DEVELOPER = [text("developer", "Answer briefly."), *QUESTION]


@pytest.mark.parametrize(
    ("live", "hit"),
    [
        # the form records system instructions apart: sent apart or as the first messages
        (responses_request(BRIEFLY, QUESTION), True),
        (responses_request(None, AS_MESSAGE), True),
        (responses_request(None, AS_DEVELOPER), True),
        # another system prompt, or the same words as a user's, still differ
        (responses_request(None, [text("system", "Answer at length."), *QUESTION]), False),
        (responses_request(None, [text("user", "Answer briefly."), *QUESTION]), False),
    ],
)
def test_the_system_prompt_is_compared_wherever_the_request_carried_it(live, hit):
    recorded = responses_request(BRIEFLY, QUESTION, ["system-placement"])
    assert (Matcher([recorded]).probe(live) == 0) is hit
    # a recording that named no lossy form is compared in full
    plain = responses_request(BRIEFLY, QUESTION)
    assert (Matcher([plain]).probe(live) == 0) is (live == plain)


def test_a_tool_result_recorded_as_a_value_matches_it_as_sent():
    def answered(response):  # type: ignore[no-untyped-def]
        part = {"type": "tool_call_response", "id": "call_1", "response": response}
        return [*QUESTION, call(), {"role": "tool", "parts": [part]}]

    recorded = request([tool()], answered({"city": "P", "sky": "sunny"}), BOTH)
    for sent, hit in [
        ('{"city":"P","sky":"sunny"}', True),
        ('{"sky": "sunny", "city": "P"}', True),
        ('{"city":"P","sky":"rain"}', False),
        # a Gemini function response as the AI SDK's provider wraps the result
        ({"name": "get_weather", "content": {"city": "P", "sky": "sunny"}}, True),
        ({"name": "get_weather", "content": {"city": "P", "sky": "rain"}}, False),
        ("sunny in P", False),
    ]:
        live = request([tool(strict=True)], answered(sent), ())
        assert (Matcher([recorded]).probe(live) == 0) is hit, sent


def test_a_part_recorded_as_its_type_alone_is_not_compared():
    recorded_parts = [{"type": "custom"}, *call()["parts"]]
    turn = [*QUESTION, {"role": "assistant", "parts": recorded_parts}, result("tool")]
    recorded = request([tool()], turn, ["bare-parts", *BOTH])
    assert Matcher([recorded]).probe(LIVE) == 0
    # without the form, the part the request did not carry counts
    assert Matcher([request([tool()], turn, BOTH)]).probe(LIVE) != 0


def test_messages_recorded_by_their_role_alone_compare_roles_and_text():
    """OpenInference's Haystack instrumentation records a message's text only: the
    assistant's tool call and the tool's result are their roles alone. Read so, the
    recording names the form, its conversation's tool calls and results are not compared,
    its roles and text are."""
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.provider": "openai",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "weather?",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.2.message.role": "tool",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "sunny",
    }
    span = Span(trace_id=b"\1" * 16, span_id=b"\2" * 8, name="OpenAIChatGenerator.run")
    span.attributes.extend(dict_to_attributes(attrs))
    reading = read_call(span, attrs)
    assert reading is not None
    recorded = reading.exchange.request
    assert recorded.views == {"bare-messages"}
    assert recorded.messages[1:] == [
        {"role": "assistant", "parts": []},
        {"role": "tool", "parts": []},
    ]
    live = dataclasses.replace(LIVE, tools=None, known=recorded.known)
    assert Matcher([recorded]).probe(live) == 0
    other = [{"role": "user", "parts": [{"type": "text", "content": "rain?"}]}, *LIVE.messages[1:]]
    assert Matcher([recorded]).probe(dataclasses.replace(live, messages=other)) != 0
    no_tool = dataclasses.replace(live, messages=[*QUESTION, LIVE.messages[1]])
    assert Matcher([recorded]).probe(no_tool) != 0  # the tool message's place still counts
