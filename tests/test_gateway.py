"""The gateway in record mode, driven by the official SDKs against a stub upstream."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anthropic
import openai
import pytest
from agents import WEATHER, anthropic_agent, openai_agent
from conftest import files_text

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.codec import iter_spans
from otel_replay.otlp.files import iter_trace_requests
from otel_replay.testing.stub import Fault, StubUpstream


def record_config(tmp_path: Path, stub: StubUpstream, **kw: object) -> GatewayConfig:
    return GatewayConfig(
        mode="record",
        cassette=tmp_path / "c.json",
        traces=tmp_path / "t.jsonl",
        upstream_openai=stub.openai_url,
        upstream_anthropic=stub.anthropic_url,
        **kw,  # type: ignore[arg-type]
    )


def spans_in(path: Path) -> list[tuple[dict[str, object], object]]:
    found = []
    for request in iter_trace_requests(path):
        for resource, _scope, span in iter_spans(request):
            found.append((attributes_to_dict(resource.attributes), span))
    return found


def test_records_openai_tool_loop_as_spans_and_cassette(tmp_path, stub_thread):
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-test-key-0001")
        answer = openai_agent(client, "Lisbon")
        summary = gw.stop()
    assert answer == "stub reply to: sunny in Lisbon"
    assert summary.live == 2 and summary.replayed == 0 and not summary.misses
    assert len(stub_thread.received) == 2
    ours = [s for _r, s in spans_in(tmp_path / "t.jsonl")]
    assert [s.name for s in ours] == ["chat gpt-4o-mini", "chat gpt-4o-mini"]
    attrs = attributes_to_dict(ours[0].attributes)
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
    assert json.loads(attrs["gen_ai.tool.definitions"])[0]["name"] == "get_weather"
    output = json.loads(attrs["gen_ai.output.messages"])
    assert output[0]["parts"][0]["type"] == "tool_call"
    assert ours[0].kind == 3  # CLIENT
    cassette = load(tmp_path / "c.json")
    assert len(cassette.interactions) == 2
    first = cassette.interactions[0]
    assert first.provider == "openai" and first.request.endpoint == "/v1/chat/completions"
    assert first.response.body["choices"][0]["finish_reason"] == "tool_calls"


def test_span_is_child_of_the_agents_traceparent(tmp_path, stub_thread):
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = openai.OpenAI(
            base_url=gw.env["OPENAI_BASE_URL"],
            api_key="sk-x",
            default_headers={"traceparent": f"00-{trace_id}-{parent}-01"},
        )
        client.embeddings.create(model="text-embedding-3-small", input="hello")
    ((_, span),) = spans_in(tmp_path / "t.jsonl")
    assert span.trace_id.hex() == trace_id
    assert span.parent_span_id.hex() == parent
    assert span.name == "embeddings text-embedding-3-small"


@pytest.mark.parametrize("stream", [False, True])
def test_records_anthropic_streamed_and_not(tmp_path, stub_thread, stream):
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = anthropic.Anthropic(base_url=gw.env["ANTHROPIC_BASE_URL"], api_key="sk-ant-x")
        answer = anthropic_agent(client, "Rome", stream=stream)
    assert answer == "stub reply to: sunny in Rome"
    cassette = load(tmp_path / "c.json")
    assert [i.operation for i in cassette.interactions] == ["messages", "messages"]
    assert [i.response.streamed for i in cassette.interactions] == [stream, stream]
    if stream:
        kinds = [e.event for e in cassette.interactions[0].response.events]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert "content_block_delta" in kinds


def test_responses_embeddings_models_and_count_tokens(tmp_path, stub_thread):
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        oa = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x")
        text = oa.responses.create(model="gpt-4.1", input="hi", instructions="be brief")
        streamed = oa.responses.create(model="gpt-4.1", input="hey", stream=True)
        final = next(e for e in streamed if e.type == "response.completed")
        vectors = oa.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        models = oa.models.list()
        an = anthropic.Anthropic(base_url=gw.env["ANTHROPIC_BASE_URL"], api_key="sk-ant-x")
        count = an.messages.count_tokens(
            model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi there"}]
        )
    assert text.output_text == "stub reply to: hi"
    assert final.response.output_text == "stub reply to: hey"
    assert len(vectors.data) == 2 and models.data[0].id == "stub-model"
    assert count.input_tokens > 0
    ops = [i.operation for i in load(tmp_path / "c.json").interactions]
    assert ops == ["responses", "responses", "embeddings", "models", "count_tokens"]


def test_stream_passes_through_before_upstream_finishes(tmp_path, stub_thread):
    stub_thread.release_last_event = asyncio.Event()
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x")
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "one two three"}], stream=True
        )
        iterator = iter(stream)
        first = next(iterator)
        # the upstream is still holding its last event: the agent saw the first one anyway
        assert not stub_thread.release_last_event.is_set()
        assert first.choices[0].delta.role == "assistant"
        stub_thread.release()
        rest = list(iterator)
    text = "".join(c.choices[0].delta.content or "" for c in [first, *rest] if c.choices)
    assert text == "stub reply to: one two three"
    events = load(tmp_path / "c.json").interactions[0].response.events
    assert events is not None and events[-1].data == "[DONE]"
    assert events[-1].t >= events[0].t


def test_upstream_error_passes_through_and_is_recorded(tmp_path, stub_thread):
    stub_thread.enqueue(
        Fault(
            "status",
            status=429,
            headers={"retry-after": "7"},
            body={"error": {"message": "slow down", "type": "rate_limit"}},
        )
    )
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x", max_retries=0)
        with pytest.raises(openai.RateLimitError, match="slow down"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    recorded = load(tmp_path / "c.json").interactions[0].response
    assert recorded.status == 429 and recorded.headers["retry-after"] == "7"


def test_unknown_provider_path_is_forwarded_and_recorded(tmp_path, stub_thread):
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x", max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.post("/fine_tuning/jobs", cast_to=object, body={"model": "m"})
    (interaction,) = load(tmp_path / "c.json").interactions
    assert interaction.operation == "other" and interaction.response.status == 404


def test_no_secret_reaches_any_file(tmp_path, stub_thread, monkeypatch):
    from secrets_corpus import SECRETS

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-very-private-value-123")
    leaked = " ".join(SECRETS.values()) + " tok-very-private-value-123"
    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-proj-" + "A" * 48)
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"keys: {leaked}"}], tools=[WEATHER]
        )
        client.chat.completions.create(
            model="m", stream=True, messages=[{"role": "user", "content": f"again {leaked}"}]
        )
    written = files_text(tmp_path)
    assert "interactions" in written
    for name, secret in [*SECRETS.items(), ("env", "tok-very-private-value-123")]:
        assert secret not in written, name
    assert "A" * 48 not in written


def test_upstream_goes_through_the_callers_http_proxy(tmp_path, stub_thread, monkeypatch):
    # the stub stands in for the proxy: it receives the absolute-form request
    monkeypatch.setenv("HTTP_PROXY", stub_thread.url)
    config = record_config(tmp_path, stub_thread)
    config.upstream_openai = "http://api.openai.invalid/v1"
    with GatewayThread(config) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x", max_retries=0)
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "via proxy"}]
        )
    assert reply.choices[0].message.content == "stub reply to: via proxy"
    assert stub_thread.received[0].headers["host"] == "api.openai.invalid"


@pytest.mark.parametrize("stream", [False, True])
def test_a_replayed_span_is_written_once_the_agent_has_its_answer(
    tmp_path, stub_thread, monkeypatch, stream
):
    """Replaying with a trace file, the span of a replayed call is written after the
    agent has read its whole answer (the span is telemetry; the answer comes first)."""
    import threading

    from otel_replay.session.session import Session

    def ask(client: openai.OpenAI) -> str:
        messages = [{"role": "user", "content": "hello"}]
        if not stream:
            done = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            return done.choices[0].message.content or ""
        chunks = client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    with GatewayThread(record_config(tmp_path, stub_thread)) as gw:
        recorded = ask(openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x"))
    received, seen = threading.Event(), []
    write = Session.replayed_span

    def replayed_span(self: Session, exchange: object) -> None:
        seen.append(received.wait(30))  # holds the gateway's loop until the agent has it
        write(self, exchange)  # type: ignore[arg-type]

    monkeypatch.setattr(Session, "replayed_span", replayed_span)
    traces = tmp_path / "replay.jsonl"
    config = GatewayConfig(mode="strict", cassette=tmp_path / "c.json", traces=traces)
    with GatewayThread(config) as gw:
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-x")
        assert ask(client) == recorded
        received.set()
        summary = gw.stop()
    assert seen == [True] and summary.replayed == 1
    ((_, span),) = spans_in(traces)
    assert attributes_to_dict(span.attributes)["otel_replay.replayed"] is True
