"""Parameters by the provider's API: each surface's table of request fields is its
official SDK's, and a parameter a trace records reaches matching only when it is in the
table (a framework's client settings and nulls never do; they are kept as context)."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from anthropic.types import message_count_tokens_params, message_create_params
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types import completion_create_params as legacy_completion_params
from openai.types import embedding_create_params
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.otlp.attributes import dict_to_attributes
from otel_replay.providers import anthropic as anthropic_surface
from otel_replay.readers.params import NOT_PARAMETERS, by_api
from otel_replay.readers.registry import read_call


def fields(request_type: Any) -> frozenset[str]:
    """The keys of an SDK's request TypedDict, the stream flag added (its create method
    takes it beside the type)."""
    return frozenset(request_type.__required_keys__ | request_type.__optional_keys__) | {"stream"}


@pytest.mark.parametrize(
    ("provider", "operation", "request_type"),
    [
        ("openai", "chat", completion_create_params.CompletionCreateParamsBase),
        ("openai", "responses", response_create_params.ResponseCreateParamsBase),
        ("openai", "completions", legacy_completion_params.CompletionCreateParamsBase),
        ("anthropic", "messages", message_create_params.MessageCreateParamsBase),
    ],
)
def test_a_surfaces_table_is_its_sdks_request_type(provider, operation, request_type):
    """The installed SDK's request type, and the fields earlier releases took (a trace of
    an older client carries them, and so do its live requests)."""
    earlier = anthropic_surface.EARLIER_PARAMETERS.get(operation, frozenset())
    earlier = earlier if provider == "anthropic" else frozenset()
    assert not earlier & fields(request_type)  # still in the SDK: no longer "earlier"
    assert providers.get(provider).parameters(operation) == fields(request_type) | earlier


def test_a_sampling_setting_of_an_older_anthropic_client_is_a_parameter():
    """Recorded by a trace and sent again live, ``temperature`` is compared on both sides,
    never context on one side and a parameter on the other."""
    taken = by_api("anthropic", "messages", {"temperature": 0.2, "top_k": 5})
    assert taken == ({"temperature": 0.2, "top_k": 5}, {})


def test_tables_without_a_stream_flag_are_their_sdks_request_types():
    openai, anthropic = providers.get("openai"), providers.get("anthropic")
    expected = fields(embedding_create_params.EmbeddingCreateParams) - {"stream"}
    assert openai.parameters("embeddings") == expected
    expected = fields(message_count_tokens_params.MessageCountTokensParams) - {"stream"}
    assert anthropic.parameters("count_tokens") == expected


def test_bedrock_converse_takes_the_body_members_of_botocores_model():
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    for operation in ("Converse", "ConverseStream"):
        members = model.operation_model(operation).input_shape.members
        body = {n for n, m in members.items() if m.serialization.get("location") is None}
        assert providers.get("aws.bedrock").parameters("converse") == body


# --- the readers' rule ------------------------------------------------------------------

CLIENT_SETTINGS = {
    "context_window": 128000,
    "is_chat_model": True,
    "is_function_calling_model": True,
    "system_role": "system",
    "num_output": -1,
    "model_name": "gpt-4o-mini",
    "_type": "openai-chat",
    "api_base": "http://127.0.0.1:4000",
    "max_tokens": None,
    "temperature": 0.1,
}
"""A framework's invocation parameters: its client settings, a null, and one parameter
of the API."""


def test_client_settings_and_nulls_are_context_not_parameters():
    params, context = by_api("openai", "chat", CLIENT_SETTINGS)
    assert params == {"temperature": 0.1}
    assert context == {
        k: v for k, v in CLIENT_SETTINGS.items() if k != "temperature" and v is not None
    }


def test_a_parameter_counts_under_the_name_the_api_takes_it_by():
    assert by_api("openai", "responses", {"max_tokens": 64}) == ({"max_output_tokens": 64}, {})
    assert by_api("anthropic", "messages", {"stop": ["x"]}) == ({"stop_sequences": ["x"]}, {})
    both = {"max_tokens": 1, "max_output_tokens": 2}
    assert by_api("openai", "responses", both) == ({"max_output_tokens": 2}, {"max_tokens": 1})
    two = {"max_completion_tokens": 1, "max_output_tokens": 2}
    assert by_api("anthropic", "messages", two) == ({"max_tokens": 1}, {"max_output_tokens": 2})


def test_sampling_settings_gemini_takes_inside_its_config_are_context():
    assert by_api("gcp.gemini", "chat", {"temperature": 0.2}) == ({}, {"temperature": 0.2})


def oi_span(invocation: dict[str, Any]) -> tuple[Span, dict[str, Any]]:
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.provider": "openai",
        "llm.model_name": "gpt-4o-mini",
        "llm.invocation_parameters": json.dumps(invocation),
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "hi",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "hello",
    }
    span = Span(trace_id=b"\1" * 16, span_id=b"\2" * 8, name="ChatOpenAI", start_time_unix_nano=1)
    span.attributes.extend(dict_to_attributes(attrs))
    return span, attrs


def test_openinference_invocation_parameters_with_client_settings():
    reading = read_call(*oi_span({"model": "gpt-4o-mini", **CLIENT_SETTINGS}))
    assert reading is not None
    exchange = reading.exchange
    assert exchange.request.params == {"temperature": 0.1}
    assert exchange.context["context_window"] == 128000
    assert "max_tokens" not in exchange.context


# --- no parameter outside the table ever reaches matching --------------------------------

SURFACES = [
    ("openai", "chat"),
    ("openai", "responses"),
    ("openai", "embeddings"),
    ("anthropic", "messages"),
    ("gcp.gemini", "chat"),
    ("aws.bedrock", "converse"),
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=5,
)


def _names() -> st.SearchStrategy[str]:
    known = sorted(
        {n for p, o in SURFACES for n in providers.get(p).parameters(o)}
        | set(genai.PARAM_OF_NAME)
        | set(CLIENT_SETTINGS)
    )
    return st.sampled_from(known) | st.text(min_size=1, max_size=12)


@settings(max_examples=70, deadline=None)
@given(surface=st.sampled_from(SURFACES), recorded=st.dictionaries(_names(), json_values))
def test_no_parameter_outside_the_table_reaches_matching(surface, recorded):
    provider, operation = surface
    params, context = by_api(provider, operation, recorded)
    allowed = providers.get(provider).parameters(operation) - NOT_PARAMETERS
    assert set(params) <= allowed
    assert None not in params.values()
    kept = len(params) + len(context)
    assert kept == sum(v is not None for v in recorded.values())  # nothing else is lost


@settings(max_examples=50, deadline=None)
@given(invocation=st.dictionaries(_names(), json_values, max_size=8))
def test_no_invocation_parameter_outside_the_table_reaches_a_read_request(invocation):
    reading = read_call(*oi_span(invocation))
    assert reading is not None
    params = reading.exchange.request.params
    assert set(params) <= providers.get("openai").parameters("chat") - NOT_PARAMETERS
    assert None not in params.values()
