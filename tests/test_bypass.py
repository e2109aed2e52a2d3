"""Bypass detection from the agent's own telemetry: an instrumented ``google-genai`` agent
whose second client is pointed straight at the provider (the stub standing in for it)
during a strict replay. Its spans reach the gateway; the call they show never did: the
run fails and names it. The same agent making every call through the gateway passes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from gemini_agents import INSTRUMENTED
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp.attributes import attributes_to_dict, dict_to_attributes
from otel_replay.otlp.codec import iter_spans, traces_from_json
from otel_replay.session import bypass
from otel_replay.session.bypass import BypassWatch
from otel_replay.testing.stub import run_stub

KEY = "AIzaSyBypass-test-gemini-key-000000001"
MODEL = "gemini-2.5-flash"

AGENT = (
    INSTRUMENTED
    + textwrap.dedent(
        """
        import sys

        from google import genai
        from google.genai import types

        key, direct = sys.argv[1], sys.argv[2]
        # through the gateway: the client finds it by GOOGLE_GEMINI_BASE_URL
        through = genai.Client(api_key=key)
        print(through.models.generate_content(model="MODEL", contents="hi").text)
        if direct != "-":
            # a client with the provider's address written in: it never sees the gateway
            options = types.HttpOptions(base_url=direct)
            client = genai.Client(api_key=key, http_options=options)
            print(client.models.generate_content(model="MODEL", contents="hi").text)
        provider.shutdown()
        """
    )
).replace("MODEL", MODEL)


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of the one call the agent makes through the gateway."""
    from google import genai
    from google.genai import types

    path = tmp_path_factory.mktemp("bypass") / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=path, grpc_port=None, environ={})
        config.upstreams = {"gemini": stub.url}
        with GatewayThread(config) as gw:
            options = types.HttpOptions(base_url=gw.env["GOOGLE_GEMINI_BASE_URL"])
            with genai.Client(api_key=KEY, http_options=options) as client:
                client.models.generate_content(model=MODEL, contents="hi")
            assert gw.stop().live == 1
    return path


def replay(
    cassette: Path, direct: str, agent: str = AGENT, *, provider: str = "GOOGLE_"
) -> subprocess.CompletedProcess[str]:
    """A strict replay of ``agent`` (its second client at ``direct``, or none for
    ``-``), in an environment holding none of the caller's OTel or ``provider`` variables."""
    script = cassette.parent / "agent.py"
    script.write_text(agent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", provider))}
    env.update(NO_PROXY="127.0.0.1,localhost", CI="true")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    command = [sys.executable, "-m", "otel_replay.frontends.cli", "replay", "--mode", "strict"]
    command += ["--cassette", str(cassette), "--", sys.executable, str(script), KEY, direct]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_a_call_that_bypassed_the_gateway_fails_a_strict_replay_and_is_named(cassette):
    with run_stub() as stub:
        done = replay(cassette, stub.url)
        reached = [r.path for r in stub.received]
    assert reached == [f"/v1beta/models/{MODEL}:generateContent"]  # the bypass, live
    assert done.stdout.splitlines() == ["stub reply to: hi", "stub reply to: hi"]
    assert done.returncode == 1, done.stderr
    assert "1 replayed · 0 live · 0 misses" in done.stderr
    assert "· 1 model call bypassed the gateway" in done.stderr
    assert f"bypassed the gateway: gcp.gemini call 'generate_content {MODEL}'" in done.stderr


def test_the_same_agent_through_the_gateway_passes(cassette):
    done = replay(cassette, "-")
    assert done.returncode == 0, done.stderr
    assert "1 replayed · 0 live · 0 misses" in done.stderr
    assert "bypassed" not in done.stderr


def _batch(
    *spans: tuple[bytes, bytes, dict[str, str], int, int], kind: int = 0
) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for span_id, parent, attrs, start, end in spans:
        span = scope.spans.add(
            trace_id=b"t" * 16,
            span_id=span_id,
            parent_span_id=parent,
            name=f"chat {span_id.hex()[:4]}",
            start_time_unix_nano=start,
            end_time_unix_nano=end,
            kind=kind,
        )
        span.attributes.extend(dict_to_attributes(attrs))
    return request


ANSWERED = {"gen_ai.usage.input_tokens": "3", "gen_ai.usage.output_tokens": "5"}
"""What shows a span's call was answered (its token usage)."""


def test_each_call_counts_once_and_only_when_no_gateway_call_is_in_its_window():
    chat = {"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat", **ANSWERED}
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"A" * 8, b"", chat, 10 * s, 20 * s),  # a framework's span around B
            (b"B" * 8, b"A" * 8, chat, 11 * s, 19 * s),  # the SDK's span: reached
            (b"C" * 8, b"", chat, 30 * s, 31 * s),  # nothing reached the gateway then
            (b"D" * 8, b"", {**chat, "gen_ai.provider.name": "acme"}, 40 * s, 41 * s),
            (b"E" * 8, b"", {**chat, "otel_replay.format_version": "1"}, 50 * s, 51 * s),
            (b"F" * 8, b"", {**chat, "gen_ai.operation.name": "execute_tool"}, 60 * s, 61 * s),
        )
    )
    watch.reached("openai", 15 * s)
    watch.reached("anthropic", 30 * s)  # another provider's call does not cover C
    c = (b"C" * 8).hex()
    assert watch.bypassed() == [f"openai call 'chat {c[:4]}' (span {c})"]


def test_a_span_that_shows_no_answer_is_no_call():
    """A framework's step that prepares a call, or a streamed call whose span ended before
    the stream was read, carries no response id, output or usage: it never counts, nor
    hides the answered call under it."""
    chat = {"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat"}
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"P" * 8, b"", chat, s, 2 * s),  # preparing: no answer
            (b"S" * 8, b"", chat, 3 * s, 4 * s),  # the stream's span, ended unread
            (b"W" * 8, b"", chat, 5 * s, 9 * s),  # a wrapper without an answer...
            (b"I" * 8, b"W" * 8, {**chat, "gen_ai.response.id": "r1"}, 6 * s, 8 * s),
        )
    )
    inner = (b"I" * 8).hex()
    assert watch.bypassed() == [f"openai call 'chat {inner[:4]}' (span {inner})"]
    watch.reached("openai", 7 * s)
    assert watch.bypassed() == []


def test_a_span_nested_at_any_depth_under_a_counted_call_is_that_call():
    chat = {"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat", **ANSWERED}
    step = {"openinference.span.kind": "CHAIN", "llm.provider": "openai"}
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"O" * 8, b"", chat, s, 9 * s),  # the framework's call...
            (b"M" * 8, b"O" * 8, step, 2 * s, 8 * s),  # ...a step of its own...
            (b"N" * 8, b"M" * 8, chat, 3 * s, 7 * s),  # ...and the SDK's call in it
        )
    )
    watch.reached("openai", 5 * s)
    assert watch.bypassed() == []


def _asking(text: str) -> dict[str, str]:
    messages = [{"role": "user", "parts": [{"type": "text", "content": text}]}]
    return {
        "gen_ai.provider.name": "openai",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]
        ),
        **ANSWERED,
    }


def _body(text: str) -> bytes:
    return json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f" {text}\n"}]}
    ).encode()


def test_calls_are_told_apart_by_what_they_asked_not_by_their_count():
    """Two calls at once, one through the gateway: the one whose question the gateway
    never saw is the bypass, whichever ended first."""
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"H" * 8, b"", _asking("What is the weather in Paris?"), s, 5 * s),
            (b"R" * 8, b"", _asking("And  in\nRome?"), 2 * s, 4 * s),
        )
    )
    watch.reached("openai", 3 * s, sent=_body("What is the weather in Paris?"))
    rome = (b"R" * 8).hex()
    assert watch.bypassed() == [f"openai call 'chat {rome[:4]}' (span {rome})"]
    watch.reached("openai", 3 * s, sent=_body("And in Rome?"))  # whitespace folded
    assert watch.bypassed() == []


def test_a_call_of_another_trace_accounts_for_no_span():
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(_batch((b"H" * 8, b"", _asking("hi"), s, 5 * s)))
    watch.reached("openai", 3 * s, sent=_body("hi"), trace_id="ab" * 16)
    span = (b"H" * 8).hex()
    assert watch.bypassed() == [f"openai call 'chat {span[:4]}' (span {span})"]
    watch.reached("openai", 3 * s, sent=_body("hi"), trace_id=(b"t" * 16).hex())
    assert watch.bypassed() == []


def test_a_call_whose_body_was_let_go_still_accounts_for_its_span(monkeypatch):
    monkeypatch.setattr(bypass, "BODIES_KEPT", 100)
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(_batch((b"H" * 8, b"", _asking("hi"), s, 5 * s)))
    watch.reached("openai", 3 * s, sent=_body("something else") + b" " * 200)
    assert watch.bypassed() == []


def _http(url: str, status: str | None = "200") -> dict[str, str]:
    found = {"http.request.method": "POST", "url.full": url}
    return found if status is None else {**found, "http.response.status_code": status}


def test_an_http_call_to_a_providers_own_host_went_around_the_gateway():
    """The agent's HTTP client spans (httpx's, requests'): a call answered by the
    provider's host is a bypass; under a model-call span, that call is the one named."""
    s = 1_000_000_000
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"X" * 8, b"", _http("https://api.openai.com/v1/chat/completions"), s, 2 * s),
            (b"L" * 8, b"", _http("http://127.0.0.1:4318/v1/chat/completions"), s, 2 * s),
            (b"Q" * 8, b"", _http("https://api.anthropic.com/v1/messages", None), s, 2 * s),
            (b"C" * 8, b"", _asking("hi"), 3 * s, 6 * s),
            (b"Y" * 8, b"C" * 8, _http("https://api.openai.com/v1/chat/completions"), 4 * s, 5 * s),
            kind=3,
        )
    )
    watch.reached("openai", 4 * s, sent=_body("hi"))  # the gateway had the same question
    x, c = (b"X" * 8).hex(), (b"C" * 8).hex()
    assert sorted(watch.bypassed()) == sorted(
        [f"openai call 'chat {c[:4]}' (span {c})", f"openai call 'chat {x[:4]}' (span {x})"]
    )


def test_a_vertex_ai_span_is_the_call_of_its_models_publisher():
    """``gcp.vertex_ai`` names no API: the span's model says which (a Claude model speaks
    Anthropic's), so a Vertex AI call is paired with the gateway's calls of that API."""
    s = 1_000_000_000
    vertex = {"gen_ai.provider.name": "gcp.vertex_ai", "gen_ai.operation.name": "chat"}
    vertex |= ANSWERED
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"G" * 8, b"", {**vertex, "gen_ai.request.model": "gemini-2.5-flash"}, s, 2 * s),
            (b"C" * 8, b"", {**vertex, "gen_ai.request.model": "claude-sonnet-4"}, 3 * s, 4 * s),
        )
    )
    watch.reached("anthropic", int(3.5 * s))
    g = (b"G" * 8).hex()
    assert watch.bypassed() == [f"gcp.gemini call 'chat {g[:4]}' (span {g})"]


# --- every instrumentation the readers know is watched ------------------------------------

OPENINFERENCE_AGENT = textwrap.dedent(
    """
    import sys

    import openai
    from INSTRUMENTATION import OpenAIInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)

    direct = sys.argv[2]
    ask = [{"role": "user", "content": "hi"}]
    # through the gateway: the client finds it by OPENAI_BASE_URL
    with openai.OpenAI(api_key="sk-test") as through:
        reply = through.chat.completions.create(model="MODEL", messages=ask)
        print(reply.choices[0].message.content)
    if direct != "-":
        # a second client with the provider's address written in
        with openai.OpenAI(api_key="sk-test", base_url=direct) as client:
            reply = client.chat.completions.create(model="MODEL", messages=ask)
            print(reply.choices[0].message.content)
    provider.shutdown()
    """
).replace("MODEL", "gpt-4o-mini")
INSTRUMENTATIONS = {
    "openinference": "openinference.instrumentation.openai",
    "openllmetry": "opentelemetry.instrumentation.openai",
}
"""The two instrumentations of the OpenAI SDK whose spans are no GenAI convention's."""


@pytest.fixture(scope="module")
def openai_cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recording of the one call the OpenInference agent makes through the gateway."""
    import openai

    path = tmp_path_factory.mktemp("bypass-oi") / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=path, grpc_port=None, environ={})
        config.upstream_openai = stub.openai_url
        with GatewayThread(config) as gw:
            with openai.OpenAI(api_key="sk-test", base_url=gw.env["OPENAI_BASE_URL"]) as client:
                ask = [{"role": "user", "content": "hi"}]
                client.chat.completions.create(model="gpt-4o-mini", messages=ask)
            assert gw.stop().live == 1
    return path


def replay_openai(
    cassette: Path, direct: str, instrumentation: str
) -> subprocess.CompletedProcess[str]:
    agent = OPENINFERENCE_AGENT.replace("INSTRUMENTATION", INSTRUMENTATIONS[instrumentation])
    return replay(cassette, direct, agent, provider="OPENAI_")


@pytest.mark.parametrize(
    ("instrumentation", "name"),
    [("openinference", "ChatCompletion"), ("openllmetry", "openai.chat")],
)
def test_an_openai_call_that_bypassed_the_gateway_is_named(openai_cassette, instrumentation, name):
    """OpenInference names its provider in ``llm.provider``, OpenLLMetry in the deprecated
    ``gen_ai.system``: the watch asks the readers, so the call is seen all the same, and
    told from the call that asked the gateway the same question by its window."""
    with run_stub() as stub:
        done = replay_openai(openai_cassette, stub.openai_url, instrumentation)
        reached = [r.path for r in stub.received]
    assert reached == ["/v1/chat/completions"]  # the bypass, live
    assert done.returncode == 1, done.stderr
    assert "1 replayed · 0 live · 0 misses" in done.stderr
    assert "· 1 model call bypassed the gateway" in done.stderr
    assert f"bypassed the gateway: openai call '{name}'" in done.stderr


@pytest.mark.parametrize("instrumentation", list(INSTRUMENTATIONS))
def test_the_openai_agent_through_the_gateway_passes(openai_cassette, instrumentation):
    done = replay_openai(openai_cassette, "-", instrumentation)
    assert done.returncode == 0, done.stderr
    assert "1 replayed · 0 live · 0 misses" in done.stderr
    assert "bypassed" not in done.stderr


def test_an_openinference_span_without_content_is_a_model_call():
    """Token counts show the call was answered; an LLM span without them (a framework's
    step preparing the call's arguments) and a CHAIN span are none."""
    s = 1_000_000_000
    llm = {"openinference.span.kind": "LLM", "llm.provider": "anthropic"}
    chain = {"openinference.span.kind": "CHAIN", "llm.provider": "anthropic"}
    counted = {**llm, "llm.token_count.prompt": "3"}
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"L" * 8, b"", counted, s, 2 * s),
            (b"P" * 8, b"", llm, s, 2 * s),
            (b"K" * 8, b"", chain, s, 2 * s),
        )
    )
    span = (b"L" * 8).hex()
    assert watch.bypassed() == [f"anthropic call 'chat {span[:4]}' (span {span})"]


# --- the AI SDK's ai.* spans (AI SDK 4 to 6), on traces the real AI SDK produced ----------

TRACES = Path(__file__).parent / "traces"
AI_SDK_TRACES = [
    pytest.param(TRACES / "ai_sdk.jsonl", id="ai-sdk-6"),
    pytest.param(TRACES / "ai_sdk_v4.jsonl", id="ai-sdk-4"),
]
AI_SDK_CALLS = {"openai.chat": "openai", "openai.responses": "openai"}
AI_SDK_CALLS |= {"anthropic.messages": "anthropic", "google.generative-ai": "gcp.gemini"}


@dataclass(frozen=True)
class AiSdkTrace:
    """A trace split as a run sees it: the agent's batches, its model-call spans (span id →
    API, by the span's name and provider), and the calls the gateway made (its spans)."""

    batches: list[ExportTraceServiceRequest]
    calls: dict[str, str]
    reached: list[tuple[str, int]]


def _ai_sdk_trace(path: Path, *, content: bool = True) -> AiSdkTrace:
    batches, calls, reached = [], {}, []
    for line in path.read_text().splitlines():
        request = traces_from_json(line)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                if scope.scope.name == "otel-replay":
                    for span in scope.spans:
                        api = attributes_to_dict(span.attributes)["gen_ai.provider.name"]
                        reached.append((str(api), span.start_time_unix_nano))
                    del scope.spans[:]
                    continue
                for span in scope.spans:
                    if not content:  # recordInputs / recordOutputs off
                        kept = [a for a in span.attributes if not a.key.startswith(_CONTENT)]
                        del span.attributes[:]
                        span.attributes.extend(kept)
                    if span.name.endswith((".doGenerate", ".doStream")):
                        provider = attributes_to_dict(span.attributes)["ai.model.provider"]
                        calls[span.span_id.hex()] = AI_SDK_CALLS[str(provider)]
        batches.append(request)
    return AiSdkTrace(batches, calls, reached)


_CONTENT = ("ai.prompt", "ai.response")


def _named(watch: BypassWatch) -> dict[str, str]:
    """Span id → API of each call the watch says bypassed the gateway."""
    lines = watch.bypassed()
    named = {}
    for line in lines:
        match = _BYPASS_LINE.fullmatch(line)
        assert match, line
        named[match[2]] = match[1]
    assert len(named) == len(lines), lines  # each call once
    return named


_BYPASS_LINE = re.compile(r"(\S+) call 'ai\.\w+\.do(?:Generate|Stream)' \(span (\w+)\)")


def _watching(trace: AiSdkTrace, reached: list[tuple[str, int]]) -> BypassWatch:
    watch = BypassWatch()
    for batch in trace.batches:
        watch.observe(batch)
    for api, at_ns in reached:
        watch.reached(api, at_ns)
    return watch


@pytest.mark.parametrize("content", [True, False], ids=["content", "no-content"])
@pytest.mark.parametrize("path", AI_SDK_TRACES)
def test_each_ai_sdk_model_call_is_watched_and_paired_with_its_apis_gateway_call(path, content):
    """Each ``doGenerate`` / ``doStream`` span is one model call (the ``ai.generateText`` /
    ``ai.streamText`` span around it names the provider too, and is none), seen whether
    or not the SDK recorded the prompt and response, and paired with a gateway call of
    its API in its window."""
    trace = _ai_sdk_trace(path, content=content)
    assert len(trace.calls) == len(trace.reached) >= 8
    if not content:
        attrs = [
            a.key for b in trace.batches for _r, _s, span in iter_spans(b) for a in span.attributes
        ]
        assert not any(key.startswith(_CONTENT) for key in attrs)
    assert _named(_watching(trace, [])) == trace.calls
    assert _named(_watching(trace, trace.reached)) == {}
    openai_only = [(api, at) for api, at in trace.reached if api == "openai"]
    anthropic = {span: api for span, api in trace.calls.items() if api == "anthropic"}
    assert anthropic
    assert _named(_watching(trace, openai_only)) == anthropic
    as_anthropic = [("anthropic", at) for _api, at in trace.reached]
    openai = {span: api for span, api in trace.calls.items() if api == "openai"}
    assert _named(_watching(trace, as_anthropic)) == openai


def test_an_ai_sdk_google_call_made_past_the_gateway_is_named():
    """``traces/ai_sdk_google.jsonl``: an ``@ai-sdk/google`` agent that called the stub
    itself; both its calls are Gemini calls no gateway call answered."""
    trace = _ai_sdk_trace(TRACES / "ai_sdk_google.jsonl", content=False)
    assert not trace.reached
    assert list(trace.calls.values()) == ["gcp.gemini", "gcp.gemini"]
    assert _named(_watching(trace, [])) == trace.calls


@pytest.mark.parametrize(
    ("provider", "model", "api"),
    [
        ("openai.chat", "gpt-4o-mini", "openai"),
        ("openai.responses", "gpt-4o-mini", "openai"),
        ("azure.responses", "gpt-4o-mini", "openai"),
        ("anthropic.messages", "claude-sonnet-4-5", "anthropic"),
        ("google.generative-ai", "gemini-2.5-flash", "gcp.gemini"),
        ("google.vertex.chat", "gemini-2.5-flash", "gcp.gemini"),
        ("vertex.anthropic.messages", "claude-sonnet-4-5", "anthropic"),
        ("amazon-bedrock", "anthropic.claude-sonnet-4-5", "aws.bedrock"),
        ("bedrock.anthropic.messages", "claude-sonnet-4-5", "aws.bedrock"),
    ],
)
def test_an_ai_sdk_span_is_the_call_of_the_api_its_provider_speaks(provider, model, api):
    """``ai.model.provider`` as each ``@ai-sdk/*`` package writes it; a span of no model
    operation (the ``ai.generateText`` around the call) or of a provider otel-replay does
    not know is no call."""
    s = 1_000_000_000
    sdk = {"ai.model.provider": provider, "ai.model.id": model}
    call = {**sdk, "ai.operationId": "ai.generateText.doGenerate", "ai.usage.inputTokens": "3"}
    watch = BypassWatch()
    watch.observe(
        _batch(
            (b"O" * 8, b"", {**sdk, "ai.operationId": "ai.generateText"}, s, 4 * s),
            (b"D" * 8, b"O" * 8, call, 2 * s, 3 * s),
            (b"U" * 8, b"O" * 8, {**call, "ai.model.provider": "acme.chat"}, 2 * s, 3 * s),
        )
    )
    span = (b"D" * 8).hex()
    assert watch.bypassed() == [f"{api} call 'chat {span[:4]}' (span {span})"]
