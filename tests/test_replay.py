"""Replay end to end: record with the official SDKs, stop the upstream, replay strictly."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import pytest
from agents import WEATHER, anthropic_agent, openai_agent

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.matching.why import explain
from otel_replay.testing.stub import Fault, run_stub


def record(tmp_path: Path, run, **kw):  # type: ignore[no-untyped-def]
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=tmp_path / "c.json",
            upstream_openai=stub.openai_url,
            upstream_anthropic=stub.anthropic_url,
            **kw,
        )
        with GatewayThread(config) as gw:
            result = run(gw.env)
        return result, gw.stop(), stub


def replay(tmp_path: Path, run, mode: str = "strict", **kw):  # type: ignore[no-untyped-def]
    options = {
        "upstream_openai": "http://127.0.0.1:9/v1",
        "upstream_anthropic": "http://127.0.0.1:9",
        **kw,
    }
    config = GatewayConfig(mode=mode, cassette=tmp_path / "c.json", **options)
    gw = GatewayThread(config).start()
    try:
        result = run(gw.env)
    except (openai.APIError, anthropic.APIError) as exc:
        result = exc
    return result, gw.stop()


_CLIENTS: list[openai.OpenAI | anthropic.Anthropic] = []


def oa(env: dict[str, str]) -> openai.OpenAI:
    client = openai.OpenAI(
        base_url=env["OPENAI_BASE_URL"], api_key=env.get("OPENAI_API_KEY", "sk-test"), max_retries=0
    )
    _CLIENTS.append(client)
    return client


def an(env: dict[str, str]) -> anthropic.Anthropic:
    client = anthropic.Anthropic(
        base_url=env["ANTHROPIC_BASE_URL"], api_key="sk-ant-test", max_retries=0
    )
    _CLIENTS.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients():  # type: ignore[no-untyped-def]
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_multi_turn_tool_agent_replays_offline(tmp_path, provider, stream):
    def run(env):
        if provider == "openai":
            return openai_agent(oa(env), "Lisbon", stream=stream)
        return anthropic_agent(an(env), "Lisbon", stream=stream)

    recorded, rec_summary, _ = record(tmp_path, run)
    assert rec_summary.live == 2
    replayed, summary = replay(tmp_path, run)  # fresh UUIDs and timestamps in the prompt
    assert replayed == recorded == "stub reply to: sunny in Lisbon"
    assert (summary.replayed, summary.live, summary.misses) == (2, 0, [])
    assert summary.unused == []


def test_streamed_request_replays_from_non_streamed_recording_and_back(tmp_path):
    recorded, _, _ = record(tmp_path, lambda env: openai_agent(oa(env), stream=False))
    replayed, summary = replay(tmp_path, lambda env: openai_agent(oa(env), stream=True))
    assert replayed == recorded and summary.replayed == 2
    recorded, _, _ = record(tmp_path, lambda env: anthropic_agent(an(env), stream=True))
    replayed, summary = replay(tmp_path, lambda env: anthropic_agent(an(env), stream=False))
    assert replayed == recorded and summary.replayed == 2


@pytest.mark.parametrize(
    ("change", "component"),
    [
        ({"system_extra": " Be terse."}, "system prompt"),
        ({"model": "gpt-4.1"}, "model"),
        (
            {"tools": [{**WEATHER, "function": {**WEATHER["function"], "description": "x"}}]},
            "tools",
        ),
        ({"city": "Oslo"}, "messages"),
    ],
)
def test_changed_request_misses_with_the_component_named(tmp_path, change, component):
    record(tmp_path, lambda env: openai_agent(oa(env)))
    city = change.pop("city", "Lisbon")
    result, summary = replay(tmp_path, lambda env: openai_agent(oa(env), city, **change))
    assert isinstance(result, openai.BadRequestError)
    assert len(summary.misses) == 1
    message = summary.misses[0]
    assert message.startswith(f"replay miss: {component} changed (hash ")
    assert message in str(result)
    assert result.response.headers["x-should-retry"] == "false"


def test_extra_call_is_more_calls_than_recorded(tmp_path):
    record(tmp_path, lambda env: openai_agent(oa(env)))

    def twice(env):
        openai_agent(oa(env))
        return openai_agent(oa(env))

    result, summary = replay(tmp_path, twice)
    assert summary.misses == ["replay miss: more model calls than the 2 recorded"]
    assert isinstance(result, openai.BadRequestError)


def test_why_explains_the_last_miss(tmp_path, capsys):
    from otel_replay.frontends.cli import main

    record(tmp_path, lambda env: openai_agent(oa(env)))
    replay(tmp_path, lambda env: openai_agent(oa(env), system_extra=" Be terse."))
    assert main(["why", "--cassette", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "system prompt" in out and "Be terse." in out


def test_recorded_errors_replay_so_retry_paths_are_testable(tmp_path):
    def run(env):
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sk-x", max_retries=1)
        return (
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hello"}]
            )
            .choices[0]
            .message.content
        )

    with run_stub() as stub:
        stub.enqueue(
            Fault(
                "status",
                status=429,
                headers={"retry-after": "0"},
                body={"error": {"message": "busy", "type": "rate_limit"}},
            )
        )
        config = GatewayConfig(
            mode="record", cassette=tmp_path / "c.json", upstream_openai=stub.openai_url
        )
        with GatewayThread(config) as gw:
            recorded = run(gw.env)
    statuses = [i.response.status for i in load(tmp_path / "c.json").interactions]
    assert statuses == [429, 200]
    replayed, summary = replay(tmp_path, run)
    assert replayed == recorded == "stub reply to: hello"
    assert summary.replayed == 2


def test_auto_mode_forwards_a_miss_only_with_the_gateways_own_key(tmp_path):
    record(tmp_path, lambda env: openai_agent(oa(env), "Lisbon"))
    with run_stub() as stub:
        config = GatewayConfig(
            mode="auto",
            cassette=tmp_path / "c.json",
            upstream_openai=stub.openai_url,
            environ={"OPENAI_API_KEY": "sk-own-key-123456"},
        )
        gw = GatewayThread(config).start()
        try:
            wrong = openai.OpenAI(
                base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-other", max_retries=0
            )
            with pytest.raises(openai.BadRequestError, match="replay miss"):
                openai_agent(wrong, "Oslo")
            right = openai.OpenAI(
                base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-own-key-123456", max_retries=0
            )
            assert openai_agent(right, "Oslo") == "stub reply to: sunny in Oslo"
        finally:
            summary = gw.stop()
        assert summary.live == 2 and len(summary.misses) == 1
        assert len(stub.received) == 2
    interactions = load(tmp_path / "c.json").interactions
    assert len(interactions) == 4
    text = (tmp_path / "c.json").read_text()
    assert "sk-own-key-123456" not in text
    # and the appended recordings now replay strictly
    replayed, summary = replay(tmp_path, lambda env: openai_agent(oa(env), "Oslo"))
    assert replayed == "stub reply to: sunny in Oslo" and not summary.misses


def test_replay_receives_and_stores_the_agents_telemetry(tmp_path):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    record(tmp_path, lambda env: openai_agent(oa(env)))

    def run(env):
        provider = TracerProvider()
        provider.add_span_processor(
            SimpleSpanProcessor(
                OTLPSpanExporter(endpoint=env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
            )
        )
        with provider.get_tracer("t").start_as_current_span("agent"):
            result = openai_agent(oa(env))
        provider.shutdown()
        return result

    _, summary = replay(tmp_path, run, traces=tmp_path / "replay.jsonl")
    assert summary.spans_received == 1
    lines = (tmp_path / "replay.jsonl").read_text().splitlines()
    names = [
        s["name"]
        for line in lines
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    assert names.count("chat gpt-4o-mini") == 2 and "agent" in names


def test_report_file(tmp_path):
    record(tmp_path, lambda env: openai_agent(oa(env)))
    replay(tmp_path, lambda env: openai_agent(oa(env), "Oslo"), report=tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["replayed"] == 0 and len(report["misses"]) == 1
    assert report["misses"][0].startswith("replay miss: messages changed")


def test_strict_mode_opens_no_upstream_connection(tmp_path):
    record(tmp_path, lambda env: openai_agent(oa(env)))
    with run_stub() as stub:
        _, summary = replay(
            tmp_path, lambda env: openai_agent(oa(env), "Oslo"), upstream_openai=stub.openai_url
        )
        assert stub.received == [] and len(summary.misses) == 1


def test_explain_is_readable():
    from otel_replay.providers import get

    p = get("openai")
    a = p.canonical(
        "/v1/chat/completions",
        {
            "model": "m",
            "messages": [{"role": "system", "content": "A"}, {"role": "user", "content": "hi"}],
        },
    )
    b = p.canonical(
        "/v1/chat/completions",
        {
            "model": "m",
            "messages": [{"role": "system", "content": "B"}, {"role": "user", "content": "hi"}],
        },
    )
    text = explain(b, [a])
    assert "system prompt" in text


def test_timing_recorded_replays_streams_at_the_recorded_pace(tmp_path):
    import time

    def run(env):
        stream = oa(env).chat.completions.create(
            model="m", stream=True, messages=[{"role": "user", "content": "a b c d e f"}]
        )
        arrivals = [time.monotonic() for _chunk in stream]
        return arrivals

    with run_stub(event_delay=0.02) as stub:
        config = GatewayConfig(
            mode="record", cassette=tmp_path / "c.json", upstream_openai=stub.openai_url
        )
        with GatewayThread(config) as gw:
            run(gw.env)
    events = load(tmp_path / "c.json").interactions[0].response.events
    assert events is not None and events[-1].data == "[DONE]"
    # the SDK yields every event but the closing [DONE]: compare the span of those
    recorded_span = events[-2].t - events[0].t
    assert recorded_span > 0.1  # the stub paced its events
    paced, summary = replay(tmp_path, run, timing="recorded")
    assert summary.replayed == 1
    # sleeps never end early: the paced replay spans at least the recorded time
    assert paced[-1] - paced[0] >= recorded_span * 0.9


def test_a_stream_replayed_at_once_is_one_answer_of_known_length(tmp_path):
    """Replayed as fast as it goes, a recorded stream is sent with its headers at once
    (its length given, not chunked); the SDK reads the same chunks as from the recording.
    Paced as recorded, its events go out one by one in a chunked answer."""
    import http.client
    from urllib.parse import urlsplit

    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a b c"}]}

    def sdk(env):  # type: ignore[no-untyped-def]
        stream = oa(env).chat.completions.create(
            model="m", stream=True, messages=[{"role": "user", "content": "a b c"}]
        )
        return [chunk.choices[0].delta.content for chunk in stream if chunk.choices]

    def raw(env):  # type: ignore[no-untyped-def]
        url = urlsplit(env["OPENAI_BASE_URL"])
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        connection.request(
            "POST",
            url.path + "/chat/completions",
            json.dumps(body),
            {"content-type": "application/json", "authorization": "Bearer sk-test"},
        )
        answer = connection.getresponse()
        headers = {k.lower(): v for k, v in answer.getheaders()}
        data = answer.read()
        connection.close()
        return headers, data

    recorded, _, _ = record(tmp_path, sdk)
    recorded_raw, _, _ = record(tmp_path / "raw", raw)
    (headers, data), summary = replay(tmp_path / "raw", raw)
    assert summary.replayed == 1
    assert headers["content-length"] == str(len(data)) and "transfer-encoding" not in headers
    assert headers["content-type"].startswith("text/event-stream")
    assert data == recorded_raw[1]  # the events as the provider sent them
    (paced_headers, paced_data), _ = replay(tmp_path / "raw", raw, timing="recorded")
    assert paced_headers.get("transfer-encoding") == "chunked" and paced_data == data
    again, _ = replay(tmp_path, sdk)
    assert again == recorded and len(recorded) > 1


def test_identical_bodies_take_the_fast_path_without_reordering_recordings(tmp_path):
    """Two recordings equal for matching, only the second byte-identical to what the agent
    now sends: the first is still consumed first, as the component matcher orders them."""
    from otel_replay.cassette.model import Cassette, dump
    from otel_replay.core.exchange import Exchange, Response
    from otel_replay.providers import get

    def exchange(content, answer):  # type: ignore[no-untyped-def]
        body = {"model": "m", "messages": [{"role": "user", "content": content}]}
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": answer},
                }
            ],
        }
        return Exchange(
            provider="openai",
            operation="chat",
            request=get("openai").canonical("/v1/chat/completions", body),
            response=Response(status=200, body=reply),
            raw_request=body,
        )

    blocks = [{"type": "text", "text": "hi"}]
    dump(Cassette([exchange(blocks, "first"), exchange("hi", "second")]), tmp_path / "c.json")

    def run(env):  # type: ignore[no-untyped-def]
        client = oa(env)
        return [
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            .choices[0]
            .message.content
            for _ in range(2)
        ]

    answers, summary = replay(tmp_path, run)
    assert answers == ["first", "second"] and summary.hits == [0, 1]


def test_sdk_bytes_identical_to_a_recording_skip_the_component_matcher(tmp_path):
    def ask(env, content):  # type: ignore[no-untyped-def]
        reply = oa(env).chat.completions.create(
            model="m", messages=[{"role": "user", "content": content}]
        )
        return reply.choices[0].message.content

    def run(env):  # type: ignore[no-untyped-def]
        return [ask(env, [{"type": "text", "text": "hi"}]), ask(env, "hi"), ask(env, "hi")]

    recorded, _, _ = record(tmp_path, run)
    config = GatewayConfig(mode="strict", cassette=tmp_path / "c.json")
    with GatewayThread(config) as gw:
        matcher = gw.session.matcher
        calls = []
        original = matcher.match

        def counting(live, only=None):  # type: ignore[no-untyped-def]
            calls.append(live)
            return original(live, only)

        matcher.match = counting  # type: ignore[method-assign]
        replayed = [ask(gw.env, "hi"), ask(gw.env, "hi"), ask(gw.env, "hi")]
        summary = gw.stop()
    # all three recordings are equal for matching: consumed in order, the block-content
    # one first (through the matcher), the two byte-identical ones by their bytes
    assert summary.hits == [0, 1, 2] and replayed == recorded
    assert len(calls) == 1


def test_sdk_bytes_identical_to_a_recording_that_changes_form_replay_converted(tmp_path):
    """Found by its bytes, a recording whose answer must change form (a plain answer to a
    call that asks for a stream, as a cassette built from a trace may hold) still replays
    through the conversion, and counts once."""
    import dataclasses

    from otel_replay.cassette.model import dump
    from otel_replay.core.exchange import Response
    from otel_replay.providers import get

    def ask(env):  # type: ignore[no-untyped-def]
        chunks = oa(env).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    recorded, _, _ = record(tmp_path, ask)
    cassette = load(tmp_path / "c.json")
    (exchange,) = cassette.interactions
    assert exchange.response.events is not None
    plain = get("openai").body_from_stream("chat", exchange.response.events)  # assembled
    cassette.interactions[0] = dataclasses.replace(exchange, response=Response(200, body=plain))
    dump(cassette, tmp_path / "c.json")
    replayed, summary = replay(tmp_path, ask)
    assert replayed == recorded and summary.hits == [0] and summary.replayed == 1
