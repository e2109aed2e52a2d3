"""The agent's environment names the gateway under every variable a client reads, the
older names frameworks still read included, and says who reads each."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI

from otel_replay.core import envvars as ev
from otel_replay.gateway.environment import VARIABLE_READERS, agent_environment
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.providers import PROVIDERS
from otel_replay.providers.named import KNOWN
from otel_replay.testing.stub import run_stub


@pytest.mark.parametrize("mode", ["strict", "auto", "record"])
@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_every_variable_the_environment_sets_says_who_reads_it(mode, protocol):
    caller = {ev.OTLP_PROTOCOL: protocol}
    env = agent_environment("http://127.0.0.1:9", 10, mode, caller, named=list(KNOWN))
    assert set(env) <= set(VARIABLE_READERS)
    assert all(VARIABLE_READERS.values())


def test_the_older_base_url_names_point_at_the_gateway_too():
    env = agent_environment("http://127.0.0.1:9", None, "strict", {})
    assert env[ev.OPENAI_API_BASE] == env[ev.OPENAI_BASE_URL] == "http://127.0.0.1:9/v1"
    assert env[ev.ANTHROPIC_API_BASE] == env[ev.ANTHROPIC_BASE_URL]
    assert env[ev.GEMINI_API_BASE] == env[ev.GOOGLE_GEMINI_BASE_URL]
    assert env[ev.AZURE_API_BASE] == env[ev.AZURE_OPENAI_ENDPOINT]
    assert env[ev.AWS_BEDROCK_RUNTIME_ENDPOINT] == env[ev.AWS_ENDPOINT_URL_BEDROCK_RUNTIME]
    base_variables = {name for row in PROVIDERS for name in row.base_envs()}
    assert {ev.OPENAI_API_BASE, ev.ANTHROPIC_API_BASE} <= base_variables


def test_langchain_reading_the_older_name_reaches_the_gateway(monkeypatch):
    """langchain-openai takes OPENAI_API_BASE before OPENAI_BASE_URL: a user whose shell
    sets it to the provider would otherwise call the provider straight past the gateway."""
    with run_stub() as stub:
        monkeypatch.setenv(ev.OPENAI_API_BASE, stub.openai_url)  # the user's own setting
        config = GatewayConfig(mode="record", cassette=None, grpc_port=None, environ={})
        config.upstream_openai = stub.openai_url
        with GatewayThread(config) as gw:
            for name, value in gw.env.items():
                monkeypatch.setenv(name, value)
            model = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test", max_retries=0)
            assert model.invoke("hi").content == "stub reply to: hi"
            summary = gw.stop()
    assert summary.live == 1  # through the gateway, not past it
