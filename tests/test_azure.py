"""Azure OpenAI through the official ``openai`` SDK's ``AzureOpenAI`` / ``AsyncAzureOpenAI``:
recorded through the gateway against a stub Azure resource, replayed strictly offline."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import openai
import pytest
from schema_check import validate_cassette_file

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import (
    GatewayConfig,
    GatewayThread,
    agent_environment,
    upstream_bases,
)
from otel_replay.gateway.upstream import provider_url
from otel_replay.providers import provider_for
from otel_replay.testing.stub import run_stub

AZURE_KEY = "3f9c2a7d81b64e0f9a5c7d2e1b8f4a60"  # the shape of an Azure OpenAI resource key
VERSION = "2024-10-21"
DEPLOYMENT = "gpt4o-prod"
MESSAGES = [{"role": "user", "content": "weather in Lisbon?"}]
_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def azure(env: dict[str, str], version: str = VERSION) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(
        azure_endpoint=env["AZURE_OPENAI_ENDPOINT"],
        api_key=AZURE_KEY,
        api_version=version,
        max_retries=0,
    )


def chat(client: openai.AzureOpenAI, deployment: str = DEPLOYMENT) -> str | None:
    reply = client.chat.completions.create(model=deployment, messages=MESSAGES)
    return reply.choices[0].message.content


async def stream_async(env: dict[str, str]) -> str:
    """A streamed chat through ``AsyncAzureOpenAI`` with its deployment fixed on the client
    (the SDK's other URL form); Azure's first chunk has no choices."""
    async with openai.AsyncAzureOpenAI(
        azure_endpoint=env["AZURE_OPENAI_ENDPOINT"],
        azure_deployment=DEPLOYMENT,
        api_key=AZURE_KEY,
        api_version=VERSION,
        max_retries=0,
    ) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o",
            messages=MESSAGES,
            stream=True,
        )
        parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    return "".join(parts)


def session(env: dict[str, str], version: str = VERSION) -> dict[str, object]:
    """Every call an Azure agent makes: chat, embeddings, completions, an async stream, and
    the ``/openai/v1`` form through the plain ``OpenAI`` client."""
    with azure(env, version) as client:
        vector = client.embeddings.create(model="embed-prod", input="hello").data[0].embedding
        completion = client.completions.create(model="instruct-prod", prompt="say hi")
        results: dict[str, object] = {
            "chat": chat(client),
            "embedding": vector,
            "completion": completion.choices[0].text,
        }
    results["stream"] = asyncio.run(stream_async(env))
    v1 = openai.OpenAI(
        base_url=env["AZURE_OPENAI_ENDPOINT"] + "/openai/v1/", api_key=AZURE_KEY, max_retries=0
    )
    with v1:
        reply = v1.chat.completions.create(model=DEPLOYMENT, messages=MESSAGES)
        results["v1"] = reply.choices[0].message.content
    return results


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object], list]:
    """One recording against a stub Azure resource: the cassette, the answers, and what the
    stub received."""
    tmp = tmp_path_factory.mktemp("azure")
    cassette, traces = tmp / "c.json", tmp / "t.jsonl"
    with pytest.MonkeyPatch.context() as mp, run_stub() as stub:
        for name in _PROXIES:
            mp.delenv(name, raising=False)
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=traces,
            environ={"AZURE_OPENAI_ENDPOINT": stub.url, "AZURE_OPENAI_API_KEY": AZURE_KEY},
        )
        with GatewayThread(config) as gw:
            results = session(gw.env)
            summary = gw.stop()
    assert (summary.live, summary.misses) == (5, [])
    return cassette, results, list(stub.received)


def test_record_forwards_path_query_and_key_to_the_azure_upstream(recorded):
    _, results, received = recorded
    assert [(r.path, r.query) for r in received] == [
        ("/openai/deployments/embed-prod/embeddings", f"api-version={VERSION}"),
        ("/openai/deployments/instruct-prod/completions", f"api-version={VERSION}"),
        ("/openai/deployments/gpt4o-prod/chat/completions", f"api-version={VERSION}"),
        ("/openai/deployments/gpt4o-prod/chat/completions", f"api-version={VERSION}"),
        ("/openai/v1/chat/completions", ""),
    ]
    assert [r.headers.get("api-key") for r in received[:4]] == [AZURE_KEY] * 4
    assert received[4].headers["authorization"] == f"Bearer {AZURE_KEY}"
    assert results["chat"] == results["stream"] == results["v1"]
    assert results["chat"] == "stub reply to: weather in Lisbon?"
    assert results["completion"] == "stub reply to: say hi"


def test_recorded_as_openai_exchanges_with_deployment_and_api_version(recorded):
    cassette, _, _ = recorded
    interactions = load(cassette).interactions
    assert [(i.provider, i.operation, i.request.model, i.stream) for i in interactions] == [
        ("openai", "embeddings", "embed-prod", False),
        ("openai", "completions", "instruct-prod", False),
        ("openai", "chat", DEPLOYMENT, False),
        ("openai", "chat", DEPLOYMENT, True),
        ("openai", "chat", DEPLOYMENT, False),
    ]
    endpoints = [i.request.endpoint for i in interactions]
    assert (
        endpoints[2] == f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}"
    )
    assert endpoints[4] == "/v1/chat/completions"
    # the stream kept Azure's prompt-filter chunk, and the body the deployment's own model
    assert "prompt_filter_results" in interactions[3].response.events[0].data
    assert interactions[3].raw_request["model"] == "gpt-4o"


def test_the_api_key_reaches_no_file(recorded):
    cassette, _, _ = recorded
    for path in cassette.parent.iterdir():
        assert AZURE_KEY not in path.read_text(), path


def test_strict_replay_without_upstream_gives_the_same_results(recorded):
    cassette, results, _ = recorded
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette, environ={})) as gw:
        assert session(gw.env) == results
        summary = gw.stop()
    assert (summary.replayed, summary.live, summary.misses) == (5, 0, [])


def test_no_argument_client_uses_the_gateway_and_a_placeholder_key(recorded, monkeypatch):
    cassette, results, _ = recorded
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette, environ={})) as gw:
        for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"):
            monkeypatch.setenv(name, gw.env[name])
        monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
        assert gw.env["AZURE_OPENAI_API_KEY"] == "otel-replay-no-key"
        with openai.AzureOpenAI(max_retries=0) as client:
            client.embeddings.create(model="embed-prod", input="hello")
            client.completions.create(model="instruct-prod", prompt="say hi")
            assert chat(client) == results["chat"]
        assert gw.stop().misses == []


def test_another_api_version_still_replays(recorded):
    cassette, results, _ = recorded
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette, environ={})) as gw:
        assert session(gw.env, version="2025-04-01-preview") == results
        assert gw.stop().misses == []


def test_another_deployment_is_a_model_miss(recorded):
    cassette, _, _ = recorded
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette, environ={})) as gw:
        with azure(gw.env) as client, pytest.raises(openai.BadRequestError) as raised:
            chat(client, deployment="gpt4o-canary")
        summary = gw.stop()
    assert "replay miss: model changed (hash " in str(raised.value)
    assert summary.misses[0].startswith("replay miss: model changed (hash ")


def test_a_live_call_without_an_azure_endpoint_says_what_to_set(tmp_path):
    config = GatewayConfig(mode="record", cassette=tmp_path / "c.json", environ={})
    with GatewayThread(config) as gw, azure(gw.env) as client:
        with pytest.raises(openai.APIStatusError) as raised:
            chat(client)
        summary = gw.stop()
    assert (summary.live, len(summary.misses)) == (0, 1)
    assert "set AZURE_OPENAI_ENDPOINT" in summary.misses[0]
    assert raised.value.status_code == 502
    assert "set AZURE_OPENAI_ENDPOINT" in str(raised.value)
    assert "--upstream-azure" in str(raised.value)


def test_environment_and_upstream_resolution():
    url = "http://127.0.0.1:4000"
    caller = {"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com/"}
    env = agent_environment(url, None, "strict", caller)
    assert env["AZURE_OPENAI_ENDPOINT"] == url
    assert env["AZURE_OPENAI_API_KEY"] == "otel-replay-no-key"
    assert "AZURE_OPENAI_API_KEY" not in agent_environment(url, None, "record", {})
    own = agent_environment(url, None, "auto", {"AZURE_OPENAI_API_KEY": AZURE_KEY})
    assert "AZURE_OPENAI_API_KEY" not in own
    assert (
        upstream_bases(GatewayConfig(mode="record"), caller)["azure"]
        == caller["AZURE_OPENAI_ENDPOINT"]
    )
    named = GatewayConfig(mode="record", upstream_azure="https://other.openai.azure.com")
    assert upstream_bases(named, caller)["azure"] == "https://other.openai.azure.com"
    assert "azure" not in upstream_bases(GatewayConfig(mode="record"), {})
    path = "/openai/deployments/d/chat/completions"
    for base in ("https://r.openai.azure.com", "https://r.openai.azure.com/openai/v1/"):
        assert provider_url(base, "azure", path) == "https://r.openai.azure.com" + path
    assert provider_for(path, {"x-api-key": "k"}).name == "openai"


AGENT = textwrap.dedent(
    """
    import openai
    with openai.AzureOpenAI(max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt4o-prod", messages=[{"role": "user", "content": "hi from the CLI"}]
        )
    print(reply.choices[0].message.content)
    """
)


def test_cli_records_and_replays_an_azure_agent(tmp_path):
    cassette = tmp_path / "c.json"
    base = {k: v for k, v in os.environ.items() if not k.startswith("AZURE_OPENAI_")}
    base["OPENAI_API_VERSION"] = VERSION
    cli = [sys.executable, "-m", "otel_replay"]
    agent = ["--", sys.executable, "-c", AGENT]

    def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli, *args, *agent], capture_output=True, text=True, timeout=60, env=env
        )

    with run_stub() as stub:
        args = ["record", "--cassette", str(cassette), "--upstream-azure", stub.url]
        rec = run(args, {**base, "AZURE_OPENAI_API_KEY": AZURE_KEY})
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == "stub reply to: hi from the CLI"
    assert "1 live" in rec.stderr
    rep = run(["replay", "--cassette", str(cassette), "--mode", "strict"], base)
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "1 replayed · 0 live · 0 misses" in rep.stderr
    assert AZURE_KEY not in cassette.read_text()
    validate_cassette_file(cassette)


def test_a_cassette_of_openai_calls_replays_for_the_azure_client(tmp_path):
    """A cassette that knows only the operation and the model — recorded by the plain
    OpenAI client, or built from a production trace — answers ``AzureOpenAI`` calls whose
    deployment is that model."""
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gw:
            plain = openai.OpenAI(
                base_url=gw.env["OPENAI_BASE_URL"], api_key="sk-test", max_retries=0
            )
            with plain:
                reply = plain.chat.completions.create(model=DEPLOYMENT, messages=MESSAGES)
            gw.stop()
    [interaction] = load(cassette).interactions
    assert interaction.request.endpoint == "/v1/chat/completions"
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette, environ={})) as gw:
        with azure(gw.env) as client:
            with pytest.raises(openai.BadRequestError, match="model changed"):
                chat(client, deployment="gpt4o-canary")
            assert chat(client) == reply.choices[0].message.content
        summary = gw.stop()
    assert summary.replayed == 1


TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOi.the-callers-token"


@pytest.mark.parametrize(
    ("variable", "credential", "own"),
    [
        ("AZURE_OPENAI_API_KEY", {"api_key": AZURE_KEY}, True),
        ("AZURE_OPENAI_AD_TOKEN", {"azure_ad_token": TOKEN}, True),
        ("AZURE_OPENAI_AD_TOKEN", {"azure_ad_token": "forged"}, False),
    ],
)
def test_auto_forwards_a_miss_only_with_the_callers_azure_credential(
    recorded, tmp_path, variable, credential, own
):
    cassette = tmp_path / "c.json"
    cassette.write_bytes(recorded[0].read_bytes())
    with run_stub() as stub:
        config = GatewayConfig(
            mode="auto",
            cassette=cassette,
            upstream_azure=stub.url + "/openai",  # a base given with /openai also works
            environ={variable: AZURE_KEY if variable.endswith("KEY") else TOKEN},
        )
        with GatewayThread(config) as gw:
            client = openai.AzureOpenAI(
                azure_endpoint=gw.env["AZURE_OPENAI_ENDPOINT"],
                api_version=VERSION,
                max_retries=0,
                **credential,
            )
            with client:
                if own:
                    assert chat(client, "gpt4o-canary") == "stub reply to: weather in Lisbon?"
                else:
                    with pytest.raises(openai.BadRequestError, match="replay miss"):
                        chat(client, "gpt4o-canary")
            summary = gw.stop()
    assert (summary.live, len(stub.received)) == ((1, 1) if own else (0, 0))
    if own:
        assert stub.received[0].path == "/openai/deployments/gpt4o-canary/chat/completions"
        assert [i.request.model for i in load(cassette).interactions][-1] == "gpt4o-canary"
    for path in tmp_path.iterdir():  # the credential offered, even a forged one, is not kept
        text = path.read_text(encoding="utf-8", errors="replace")
        assert not any(secret in text for secret in (TOKEN, AZURE_KEY, *credential.values()))


def test_credentials_in_the_agents_own_spans_and_query_reach_no_file(tmp_path):
    """An Azure key is 32 hex digits, which no secret pattern can tell from an id: in the
    agent's own spans (header attributes, as HTTP instrumentations record them when asked
    to) it is redacted by the attribute's name; a key or signature the agent adds to the
    query string is forwarded but never recorded."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    signature = "sv=2024-01-01&sig=c2lnbmF0dXJlLXNlY3JldA"
    cassette, traces = tmp_path / "c.json", tmp_path / "t.jsonl"
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=traces,
            upstream_azure=stub.url,
            environ={"AZURE_OPENAI_API_KEY": AZURE_KEY},  # not in this process's environment
        )
        with GatewayThread(config) as gw:
            client = openai.AzureOpenAI(
                azure_endpoint=gw.env["AZURE_OPENAI_ENDPOINT"],
                api_key=AZURE_KEY,
                api_version=VERSION,
                default_query={"api-key": AZURE_KEY, "sig": signature},
                max_retries=0,
            )
            with client:
                chat(client)
            exporter = OTLPSpanExporter(
                endpoint=gw.env["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/traces"
            )
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            with provider.get_tracer("agent").start_as_current_span("POST") as span:
                span.set_attribute("http.request.header.api-key", [AZURE_KEY])
                span.set_attribute("http.request.header.authorization", f"Bearer {TOKEN}")
                span.set_attribute("http.request.header.content-type", ["application/json"])
                span.set_attribute("agent.note", f"configured with {AZURE_KEY}")
            provider.shutdown()
            summary = gw.stop()
    assert (summary.live, summary.spans_received) == (1, 1)
    assert "sig=" in stub.received[0].query and AZURE_KEY in stub.received[0].query
    [interaction] = load(cassette).interactions
    assert interaction.request.endpoint.endswith(f"?api-version={VERSION}")
    text = traces.read_text(encoding="utf-8")
    assert "[REDACTED:header:api-key]" in text and "application/json" in text
    assert "configured with [REDACTED:env:AZURE_OPENAI_API_KEY]" in text
    for path in tmp_path.iterdir():
        written = path.read_text(encoding="utf-8", errors="replace")
        for secret in (AZURE_KEY, TOKEN, "c2lnbmF0dXJlLXNlY3JldA"):
            assert secret not in written, (path.name, secret)
