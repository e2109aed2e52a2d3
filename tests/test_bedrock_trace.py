"""A production trace of a Bedrock agent becomes a cassette: ``boto3`` under the OpenLLMetry
Bedrock instrumentation (content captured) talks to Bedrock directly (the stub standing
in) through a cross-region inference profile, ``build`` turns its spans into a cassette,
and the agent replays strictly through the gateway — with the plain model id, in another
region, with no AWS credentials of its own.

The instrumentation records the model without its geography and vendor
(``claude-3-5-haiku-…`` for ``us.anthropic.claude-3-5-haiku-…``): matching compares a
Bedrock model that way, so the recording still names the same model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from test_bedrock import WEATHER
from third_party_agents import traced

from otel_replay.cassette.model import dump
from otel_replay.frontends.api import patched_environ
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.pipeline.build import build
from otel_replay.testing.stub import run_stub

PROFILE = "us.anthropic.claude-3-5-haiku-20241022-v1:0"  # a cross-region inference profile
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
KEYS = {"AWS_ACCESS_KEY_ID": "AKIAPRODUCTIONAGENT7", "AWS_SECRET_ACCESS_KEY": "s" * 40}


def agent(model: str, region: str, endpoint: str | None, stream: bool) -> list[Any]:
    """A tool round trip over Converse (or ConverseStream): what the agent got."""
    config = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    bedrock = boto3.session.Session().client(
        "bedrock-runtime", region_name=region, endpoint_url=endpoint, config=config
    )
    system, tools = [{"text": "Be brief."}], {"tools": [WEATHER]}
    messages: list[Any] = [{"role": "user", "content": [{"text": "Lisbon"}]}]

    def turn() -> dict[str, Any]:
        kwargs = {"modelId": model, "messages": messages, "system": system, "toolConfig": tools}
        if not stream:
            message: dict[str, Any] = bedrock.converse(**kwargs)["output"]["message"]
            return message
        text, use, partial = "", None, ""
        for event in bedrock.converse_stream(**kwargs)["stream"]:
            start = event.get("contentBlockStart", {}).get("start", {})
            if "toolUse" in start:
                use = dict(start["toolUse"])
            delta = event.get("contentBlockDelta", {}).get("delta", {})
            text += delta.get("text", "")
            partial += delta.get("toolUse", {}).get("input", "")
        if use is not None:
            use["input"] = json.loads(partial)
            return {"role": "assistant", "content": [{"toolUse": use}]}
        return {"role": "assistant", "content": [{"text": text}]}

    first = turn()
    call = next(block["toolUse"] for block in first["content"] if "toolUse" in block)
    result = {"toolResult": {"toolUseId": call["toolUseId"], "content": [{"text": "sunny"}]}}
    messages += [first, {"role": "user", "content": [result]}]
    final = turn()
    return [call["name"], call["input"], final["content"][0]["text"]]


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse-stream"])
def test_an_openllmetry_bedrock_trace_builds_a_cassette_that_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    from opentelemetry.instrumentation.bedrock import BedrockInstrumentor

    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    with run_stub() as stub, traced(tmp_path, [BedrockInstrumentor]) as out:
        production = agent(PROFILE, "us-east-1", stub.url, stream)
    assert production == ["get_weather", {"city": "Lisbon"}, "stub reply to: sunny"]
    cassette = build([p for p in (out.traces, out.logs) if p.exists()])
    assert [ex.request.model for ex in cassette.interactions] == [
        "claude-3-5-haiku-20241022-v1:0"  # as the instrumentation records it
    ] * 2
    dump(cassette, tmp_path / "fixture.json")

    for name in KEYS:
        monkeypatch.delenv(name)
    config = GatewayConfig(mode="strict", cassette=tmp_path / "fixture.json", environ={})
    with GatewayThread(config) as gw, patched_environ(gw.env):
        replayed = agent(MODEL, "eu-west-1", None, stream)
        summary = gw.stop()
    assert (summary.replayed, summary.misses, summary.live) == (2, [], 0)
    assert replayed == production


def test_another_model_still_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.instrumentation.bedrock import BedrockInstrumentor

    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    with run_stub() as stub, traced(tmp_path, [BedrockInstrumentor]) as out:
        agent(PROFILE, "us-east-1", stub.url, False)
    dump(build([out.traces]), tmp_path / "fixture.json")
    config = GatewayConfig(mode="strict", cassette=tmp_path / "fixture.json", environ={})
    with GatewayThread(config) as gw, patched_environ(gw.env):
        with pytest.raises(Exception, match="model changed"):
            agent("anthropic.claude-3-7-sonnet-20250219-v1:0", "us-east-1", None, False)
        summary = gw.stop()
    assert summary.replayed == 0 and len(summary.misses) == 1
