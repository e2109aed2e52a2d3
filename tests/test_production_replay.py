"""Production traces become regression fixtures: an agent instrumented with real
third-party instrumentation runs against the stub upstream, its spans go to a file in the
Collector's format, ``build`` turns the file into a cassette, and the same agent replays
offline from it — with no upstream running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from third_party_agents import (
    FINAL_TEXT,
    AgentResult,
    instrumentor,
    run_anthropic_agent,
    run_openai_agent,
    traced,
)

from otel_replay.cassette.model import dump, dumps, load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.pipeline.build import build
from otel_replay.testing.stub import Fault, StubUpstream, run_stub

SDK_OWN = "anthropic-sdk"
CASES = [
    ("openinference-openai", "openai", False),
    ("openinference-openai", "openai", True),
    ("openllmetry-openai", "openai", False),
    ("otel-openai-v2", "openai", False),  # content on the spans
    ("otel-openai-v2", "openai", True),  # content in log events
    ("openllmetry-anthropic", "anthropic", False),
    ("openllmetry-anthropic", "anthropic", True),
    (SDK_OWN, "anthropic", False),  # the anthropic SDK's own tracing
    (SDK_OWN, "anthropic", True),
]


def recording(tmp_path: Path, stub: StubUpstream, traces: str) -> GatewayConfig:
    """Record mode against the stub, keeping the trace file."""
    return GatewayConfig(
        mode="record",
        cassette=tmp_path / "recorded.json",
        traces=tmp_path / traces,
        upstream_openai=stub.openai_url,
    )


def offline(cassette: Path) -> GatewayConfig:
    """Strict replay with the upstreams gone: only the cassette can answer."""
    return GatewayConfig(
        mode="strict",
        cassette=cassette,
        upstream_openai="http://127.0.0.1:9/v1",
        upstream_anthropic="http://127.0.0.1:9",
    )


def run_agent(
    provider: str, env: dict[str, str], stream: bool, tracer_provider: TracerProvider | None = None
) -> AgentResult:
    if provider == "openai":
        return run_openai_agent(env["OPENAI_BASE_URL"], stream=stream)
    base = env["ANTHROPIC_BASE_URL"]
    return run_anthropic_agent(base, stream=stream, tracer_provider=tracer_provider)


@pytest.mark.parametrize(("instrumentation", "provider", "stream"), CASES)
def test_trace_from_third_party_instrumentation_replays_offline(
    tmp_path, monkeypatch, instrumentation, provider, stream
):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    capture = "EVENT_ONLY" if stream else "SPAN_ONLY"
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture)
    own = instrumentation == SDK_OWN  # the client traces itself: no instrumentation
    instrumentors = [] if own else [instrumentor(instrumentation)]
    with run_stub() as stub, traced(tmp_path, instrumentors) as out:
        live_env = {"OPENAI_BASE_URL": stub.openai_url, "ANTHROPIC_BASE_URL": stub.anthropic_url}
        production = run_agent(provider, live_env, stream, out.tracer_provider if own else None)
    assert production.final_text == FINAL_TEXT
    paths = [p for p in (out.traces, out.logs) if p.exists()]
    cassette = build(paths)
    assert len(cassette.interactions) == 2
    dump(cassette, tmp_path / "fixture.json")

    with GatewayThread(offline(tmp_path / "fixture.json")) as gw:
        replayed = run_agent(provider, gw.env, stream)
        summary = gw.stop()
    assert summary.misses == [] and summary.replayed == 2 and summary.live == 0
    assert replayed.final_text == production.final_text
    assert [(n, a) for _i, n, a in replayed.tool_calls] == [
        (n, a) for _i, n, a in production.tool_calls
    ]


def test_record_and_build_from_the_same_traces_replay_identically(tmp_path):
    with run_stub() as stub:
        with GatewayThread(recording(tmp_path, stub, "t.jsonl")) as gw:
            recorded = run_openai_agent(gw.env["OPENAI_BASE_URL"], stream=True)
    code = subprocess.call(
        [
            sys.executable,
            "-m",
            "otel_replay",
            "build",
            str(tmp_path / "t.jsonl"),
            "-o",
            str(tmp_path / "built.json"),
        ]
    )
    assert code == 0
    a, b = load(tmp_path / "recorded.json"), load(tmp_path / "built.json")
    a.source = b.source = {}
    assert dumps(a) == dumps(b)
    results = []
    for name in ("recorded.json", "built.json"):
        config = GatewayConfig(mode="strict", cassette=tmp_path / name)
        with GatewayThread(config) as gw:
            results.append(run_openai_agent(gw.env["OPENAI_BASE_URL"], stream=True))
            assert gw.stop().replayed == 2
    assert results[0] == results[1] == recorded


def test_build_cli_reports_and_selects(tmp_path: Path):
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=tmp_path / "c.json",
            traces=tmp_path / "t.jsonl",
            upstream_openai=stub.openai_url,
        )
        with GatewayThread(config) as gw:
            run_openai_agent(gw.env["OPENAI_BASE_URL"])
    trace_id = load(tmp_path / "c.json").interactions[0].trace_id
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_replay",
            "build",
            str(tmp_path / "t.jsonl"),
            "-o",
            str(tmp_path / "one.json"),
            "--trace-id",
            str(trace_id),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "1 interaction → " in out.stderr
    assert len(load(tmp_path / "one.json").interactions) == 1


FAILURES = [
    ("openinference-openai", "openai"),
    ("openllmetry-openai", "openai"),
    ("otel-openai-v2", "openai"),
    ("openllmetry-anthropic", "anthropic"),
]
_FAULTS = {
    "openai": (429, {"error": {"message": "Rate limit reached", "type": "requests"}}),
    "anthropic": (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}),
}


def ask_until_answered(provider: str, env: dict[str, str], max_retries: int) -> list[str]:
    """An agent that meets a rate limit (or an overload) and asks once more by itself."""
    import anthropic
    import openai

    outcomes: list[str] = []
    question = [{"role": "user", "content": "weather in Lisbon?"}]
    for _ in range(2):
        try:
            if provider == "openai":
                with openai.OpenAI(
                    base_url=env["OPENAI_BASE_URL"], api_key="sk-test", max_retries=max_retries
                ) as client:
                    reply = client.chat.completions.create(model="gpt-4o-mini", messages=question)
                text = reply.choices[0].message.content or ""
            else:
                with anthropic.Anthropic(
                    base_url=env["ANTHROPIC_BASE_URL"],
                    api_key="sk-ant-test",
                    max_retries=max_retries,
                ) as client:
                    message = client.messages.create(
                        model="claude-haiku-4-5", max_tokens=64, messages=question
                    )
                text = message.content[0].text  # type: ignore[union-attr]
        except (openai.APIStatusError, anthropic.APIStatusError) as exc:
            outcomes.append(f"{type(exc).__name__} {exc.status_code}")
            continue
        outcomes.append(text)
        break
    return outcomes


@pytest.mark.parametrize(("instrumentation", "provider"), FAILURES)
def test_a_failed_call_in_a_production_trace_replays_as_the_same_error(
    tmp_path, monkeypatch, instrumentation, provider
):
    """A production incident — a rate limit or an overload, then success — replays: the
    agent's SDK raises the same exception class, at once (the trace shows the outcome after
    the SDK's own retries), and the next call gets the recorded answer."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    with run_stub() as stub, traced(tmp_path, [instrumentor(instrumentation)]) as out:
        status, body = _FAULTS[provider]
        stub.faults.append(Fault("status", status, body))
        live_env = {"OPENAI_BASE_URL": stub.openai_url, "ANTHROPIC_BASE_URL": stub.anthropic_url}
        production = ask_until_answered(provider, live_env, max_retries=0)
    assert production[0].endswith(str(status)) and production[1].startswith("stub reply")
    cassette = build([out.traces])
    assert [i.response.status for i in cassette.interactions] == [status, 200]
    dump(cassette, tmp_path / "incident.json")

    with GatewayThread(offline(tmp_path / "incident.json")) as gw:
        replayed = ask_until_answered(provider, gw.env, max_retries=2)  # the SDK's default
        summary = gw.stop()
    assert replayed == production
    assert summary.misses == [] and summary.replayed == 2 and summary.live == 0


def test_sdk_retries_recorded_by_the_gateway_survive_beside_the_instrumentation_span(tmp_path):
    """Each HTTP attempt the gateway recorded stays in the cassette when the agent's own
    instrumentation span (one span around the SDK call and its retries) is built with
    them: a rate limit twice, then the answer, replays with the SDK's own retries."""
    status, body = _FAULTS["openai"]
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    with run_stub() as stub, traced(agent_dir, [instrumentor("openinference-openai")]) as out:
        for _ in range(2):
            stub.faults.append(Fault("status", status, body, headers={"retry-after-ms": "10"}))
        with GatewayThread(recording(tmp_path, stub, "gateway.jsonl")) as gw:
            production = ask_until_answered("openai", gw.env, max_retries=2)
    assert len(production) == 1 and production[0].startswith("stub reply")
    cassette = build([tmp_path / "gateway.jsonl", out.traces])
    assert [(i.source, i.response.status) for i in cassette.interactions] == [
        ("otel-replay", 429),
        ("otel-replay", 429),
        ("otel-replay", 200),
    ]
    dump(cassette, tmp_path / "built.json")
    with GatewayThread(offline(tmp_path / "built.json")) as gw:
        assert ask_until_answered("openai", gw.env, max_retries=2) == production
        summary = gw.stop()
    assert summary.misses == [] and summary.replayed == 3
