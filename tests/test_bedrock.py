"""AWS Bedrock Runtime through the real ``boto3`` client: Converse, ConverseStream (AWS
event streams), InvokeModel and InvokeModelWithResponseStream for an Anthropic model, a
tool call and a recorded error — recorded through the gateway against a stub Bedrock
(each live call re-signed with the gateway's own credentials), replayed strictly with the
stub stopped. No AWS credential reaches a file."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import openai
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EventStreamError
from conftest import files_text

from otel_replay.cassette.model import load
from otel_replay.frontends.api import patched_environ
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import Fault, Received, run_stub

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
BUSY_MODEL = "anthropic.claude-busy-v1:0"  # the stub answers it with a throttling error
REGION = "eu-west-1"
# the agent's own key pair (it signs for the gateway) and the gateway's (it re-signs)
AGENT = {
    "AWS_ACCESS_KEY_ID": "AKIAAGENTAGENTAGENT7",
    "AWS_SECRET_ACCESS_KEY": "agentSecretAgentSecretAgentSecretAgent01",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEAgentSessionToken0123456789abcdef",
}
GATEWAY = {
    "AWS_ACCESS_KEY_ID": "AKIAGATEWAYGATEWAY42",
    "AWS_SECRET_ACCESS_KEY": "gatewaySecretGatewaySecretGatewaySecr02",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEGatewaySessionToken9876543210fedcba",
}
WEATHER = {
    "toolSpec": {
        "name": "get_weather",
        "description": "Weather for a city",
        "inputSchema": {
            "json": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }
        },
    }
}
NO_RETRY = Config(retries={"total_max_attempts": 1, "mode": "standard"})


def client() -> Any:
    """The agent's client, configured by the environment only (endpoint, keys): a session
    of its own, since boto3's default one keeps the credentials it first found."""
    return boto3.session.Session().client("bedrock-runtime", region_name=REGION, config=NO_RETRY)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def anthropic_body(text: str) -> str:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": []}
    body["messages"] = [{"role": "user", "content": text}]
    return json.dumps(body)


def agent() -> dict[str, Any]:
    """Every call a Bedrock agent makes, and what it got."""
    bedrock, out = client(), {}
    # a tool call, answered and sent back
    messages = [user("weather in Lisbon?")]
    first = bedrock.converse(modelId=MODEL, messages=messages, toolConfig={"tools": [WEATHER]})
    use = first["output"]["message"]["content"][0]["toolUse"]
    out["tool_call"] = (first["stopReason"], use["name"], use["input"])
    result = {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "sunny"}]}}
    messages += [first["output"]["message"], {"role": "user", "content": [result]}]
    final = bedrock.converse(modelId=MODEL, messages=messages, toolConfig={"tools": [WEATHER]})
    out["answer"] = final["output"]["message"]["content"][0]["text"]
    out["usage"] = final["usage"]["outputTokens"]
    # streamed: text, then a tool call
    stream = bedrock.converse_stream(modelId=MODEL, messages=[user("stream me")])
    events = list(stream["stream"])
    out["streamed"] = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e
    )
    out["stream_end"] = (events[-2]["messageStop"]["stopReason"], "metadata" in events[-1])
    tools = bedrock.converse_stream(
        modelId=MODEL, messages=[user("Oslo")], toolConfig={"tools": [WEATHER]}
    )
    partial = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in tools["stream"]
               if "contentBlockDelta" in e]  # fmt: skip
    out["streamed_tool"] = json.loads("".join(partial))
    # InvokeModel in Anthropic's format, plain and streamed
    plain = bedrock.invoke_model(modelId=MODEL, body=anthropic_body("invoke me"))
    out["invoked"] = json.loads(plain["body"].read())["content"][0]["text"]
    streamed = bedrock.invoke_model_with_response_stream(
        modelId=MODEL, body=anthropic_body("invoke a stream")
    )
    chunks = [json.loads(e["chunk"]["bytes"]) for e in streamed["body"]]
    out["invoked_stream"] = "".join(
        c["delta"]["text"] for c in chunks if c["type"] == "content_block_delta"
    )
    out["error"] = busy(bedrock)
    return out


def busy(bedrock: Any) -> tuple[str, str] | None:
    """A call the provider answered with an error (recorded, so it replays)."""
    try:
        bedrock.converse(modelId=BUSY_MODEL, messages=[user("busy?")])
    except ClientError as exc:
        return exc.response["Error"]["Code"], exc.response["Error"]["Message"]
    return None


@contextmanager
def gateway(config: GatewayConfig, agent_env: dict[str, str]) -> Iterator[GatewayThread]:
    with GatewayThread(config) as gw, patched_environ({**gw.env, **agent_env}):
        yield gw


BUSY = Fault(
    "status",
    429,
    {"message": "Too many requests, please wait before trying again."},
    {"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/"},
    path=BUSY_MODEL + "/converse",
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list]:
    """One recording against a stub Bedrock: the cassette, the answers, what the stub got."""
    tmp = tmp_path_factory.mktemp("bedrock")
    cassette, traces = tmp / "bedrock.json", tmp / "bedrock.jsonl"
    with pytest.MonkeyPatch.context() as mp, run_stub() as stub:
        for name, value in ISOLATED.items():
            mp.setenv(name, value)
        environ = {**GATEWAY, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": stub.url}
        config = GatewayConfig(mode="record", cassette=cassette, traces=traces, environ=environ)
        with gateway(config, AGENT) as gw:
            stub.enqueue(BUSY)
            results = agent()
            summary = gw.stop()
    assert (summary.live, summary.misses) == (7, [])
    return cassette, results, list(stub.received)


ISOLATED = {
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


def verify_signature(stub_url: str, received: Received, secret: str, token: str) -> str:
    """Check a received request's SigV4 signature with ``secret``; returns its scope."""
    found = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
        r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
        received.headers["authorization"],
    )
    assert found is not None, received.headers["authorization"]
    key, _, region, service, signed, signature = found.groups()
    headers = {name: received.headers[name] for name in signed.split(";")}
    request = AWSRequest(
        method=received.method, url=stub_url + received.raw_path, data=received.raw, headers=headers
    )
    request.context["timestamp"] = received.headers["x-amz-date"]
    signer = SigV4Auth(Credentials(key, secret, token), service, region)
    canonical = signer.canonical_request(request)
    assert signer.signature(signer.string_to_sign(request, canonical), request) == signature
    return f"{key}/{region}/{service}"


# --- record -------------------------------------------------------------------------------


EXPECTED = {
    "tool_call": ("tool_use", "get_weather", {"city": "weather in Lisbon?"}),
    "answer": "stub reply to: sunny",
    "streamed": "stub reply to: stream me",
    "stream_end": ("end_turn", True),
    "streamed_tool": {"city": "Oslo"},
    "invoked": "stub reply to: invoke me",
    "invoked_stream": "stub reply to: invoke a stream",
    "error": ("ThrottlingException", "Too many requests, please wait before trying again."),
}


def test_record_answers_the_agent_as_the_provider_did(recorded):
    _, results, _ = recorded
    assert {k: v for k, v in results.items() if k != "usage"} == EXPECTED


def test_live_calls_are_re_signed_with_the_gateways_own_credentials(recorded):
    _, _, received = recorded
    assert [r.raw_path.rsplit("/", 1)[1] for r in received] == [
        "converse",
        "converse",
        "converse-stream",
        "converse-stream",
        "invoke",
        "invoke-with-response-stream",
        "converse",
    ]
    for request in received:
        # the model id as boto3 encodes it, and a signature that holds for what arrived
        assert "v1%3A0" in request.raw_path
        stub_url = "http://" + request.headers["host"]
        scope = verify_signature(
            stub_url, request, GATEWAY["AWS_SECRET_ACCESS_KEY"], GATEWAY["AWS_SESSION_TOKEN"]
        )
        assert scope == f"{GATEWAY['AWS_ACCESS_KEY_ID']}/{REGION}/bedrock"
        assert request.headers["x-amz-security-token"] == GATEWAY["AWS_SESSION_TOKEN"]
        assert AGENT["AWS_ACCESS_KEY_ID"] not in json.dumps(request.headers)


def test_recorded_as_bedrock_exchanges_and_spans(recorded):
    cassette, _, _ = recorded
    interactions = load(cassette).interactions
    assert [(i.provider, i.operation, i.stream, i.response.status) for i in interactions] == [
        ("aws.bedrock", "converse", False, 200),
        ("aws.bedrock", "converse", False, 200),
        ("aws.bedrock", "converse", True, 200),
        ("aws.bedrock", "converse", True, 200),
        ("aws.bedrock", "invoke", False, 200),
        ("aws.bedrock", "invoke", True, 200),
        ("aws.bedrock", "converse", False, 429),
    ]
    first = interactions[0].request
    assert (first.endpoint, first.model) == (f"/model/{MODEL}/converse", MODEL)
    assert first.tools[0]["name"] == "get_weather"
    assert interactions[1].request.messages[2]["parts"][0]["type"] == "tool_call_response"
    assert interactions[2].request.endpoint == f"/model/{MODEL}/converse"  # stream or not
    assert [e.event for e in interactions[2].response.events][:2] == [
        "messageStart",
        "contentBlockDelta",
    ]
    assert interactions[6].response.headers["x-amzn-errortype"].startswith("Throttling")
    spans = [
        span
        for line in cassette.with_suffix(".jsonl").read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    attrs = [{a["key"]: a["value"] for a in span["attributes"]} for span in spans]
    assert {a["gen_ai.provider.name"]["stringValue"] for a in attrs} == {"aws.bedrock"}
    assert spans[0]["name"] == f"chat {MODEL}"
    output = json.loads(attrs[2]["gen_ai.output.messages"]["stringValue"])
    assert output[0]["parts"][0]["content"] == "stub reply to: stream me"


def test_no_aws_credential_reaches_a_file(recorded):
    cassette, _, _ = recorded
    text = files_text(cassette.parent)
    assert "get_weather" in text
    for secret in [*AGENT.values(), *GATEWAY.values()]:
        assert secret not in text


# --- replay -------------------------------------------------------------------------------


def test_strict_replay_with_the_stub_stopped_needs_no_aws_credentials(recorded, tmp_path):
    cassette, results, _ = recorded
    config = GatewayConfig(mode="strict", cassette=cassette, environ={})
    with gateway(config, {}) as gw:
        assert os.environ["AWS_ACCESS_KEY_ID"] == "otel-replay-no-key"
        assert os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] == gw.server.url
        replayed = agent()
        summary = gw.stop()
    assert replayed == results
    assert (summary.replayed, summary.live, summary.misses) == (7, 0, [])


def test_a_client_that_names_no_region_replays_strictly(recorded):
    """As in CI with no AWS configuration at all: strict replay gives a region."""
    config = GatewayConfig(mode="strict", cassette=recorded[0], environ={})
    with gateway(config, {}) as gw:
        bedrock = boto3.session.Session().client("bedrock-runtime", config=NO_RETRY)
        reply = bedrock.converse(modelId=MODEL, messages=[user("stream me")])
        summary = gw.stop()
    assert reply["output"]["message"]["content"][0]["text"] == "stub reply to: stream me"
    assert (summary.replayed, summary.misses) == (1, [])


def test_a_miss_is_a_client_error_in_awss_own_form(recorded):
    cassette, _, _ = recorded
    config = GatewayConfig(mode="strict", cassette=cassette, environ={})
    with gateway(config, {}) as gw:
        with pytest.raises(ClientError) as caught:
            client().converse(modelId=MODEL, messages=[user("something never recorded")])
        summary = gw.stop()
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert error["Message"].startswith("replay miss: messages changed")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert len(summary.misses) == 1


def test_a_live_call_without_aws_credentials_says_what_to_set(tmp_path):
    config = GatewayConfig(mode="record", cassette=tmp_path / "c.json", environ={})
    with gateway(config, {}) as gw:
        # the agent's keys are its own: the gateway never signs with them
        bedrock = boto3.client(
            "bedrock-runtime",
            region_name=REGION,
            aws_access_key_id=AGENT["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AGENT["AWS_SECRET_ACCESS_KEY"],
            config=NO_RETRY,
        )
        with pytest.raises(ClientError) as caught:
            bedrock.converse(modelId=MODEL, messages=[user("hi")])
        summary = gw.stop()
    message = caught.value.response["Error"]["Message"]
    assert "no AWS credentials to sign the live call with" in message
    assert "AWS_ACCESS_KEY_ID" in message
    assert len(summary.misses) == 1


# --- an AWS key pair never goes astray ----------------------------------------------------


def test_an_aws_key_pair_sent_to_another_provider_is_not_forwarded_nor_saved(tmp_path):
    cassette = tmp_path / "c.json"
    signature = (
        f"AWS4-HMAC-SHA256 Credential={AGENT['AWS_ACCESS_KEY_ID']}/20261130/{REGION}/bedrock/"
        f"aws4_request, SignedHeaders=host;x-amz-date, Signature={'ab' * 32}"
    )
    leaked = (
        f"aws_access_key_id={AGENT['AWS_ACCESS_KEY_ID']} "
        f"aws_secret_access_key={AGENT['AWS_SECRET_ACCESS_KEY']}"
    )
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=tmp_path / "t.jsonl",
            environ={"OPENAI_BASE_URL": stub.openai_url, **GATEWAY},
        )
        with gateway(config, AGENT) as gw:
            amz = {
                "X-Amz-Security-Token": AGENT["AWS_SESSION_TOKEN"],
                "X-Amz-Date": "20261130T000000Z",
            }
            refused = []
            for headers in (amz, {"Authorization": signature}):
                with openai.OpenAI(
                    base_url=gw.env["OPENAI_BASE_URL"],
                    api_key="sk-proj-openaiopenaiopenai0123",
                    default_headers=headers,
                    max_retries=0,
                ) as client:
                    try:
                        client.chat.completions.create(
                            model="gpt-4o", messages=[{"role": "user", "content": leaked}]
                        )
                    except openai.APIStatusError as exc:
                        refused.append((exc.status_code, str(exc)))
            summary = gw.stop()
    # a session token alone is left out of the forward; an AWS signature in place of the
    # OpenAI key is the wrong API's credential: refused, counted, never forwarded
    assert summary.live == 1 and len(summary.misses) == 1
    assert refused == [(421, refused[0][1])] and "holds an AWS" in refused[0][1]
    (with_token,) = stub.received
    assert "x-amz-security-token" not in with_token.headers
    assert with_token.headers["authorization"] == "Bearer sk-proj-openaiopenaiopenai0123"
    text = files_text(tmp_path)
    assert "stub reply to:" in text
    for secret in AGENT.values():
        assert secret not in text


def test_auto_forwards_a_miss_only_when_signed_with_the_callers_own_key(recorded, tmp_path):
    cassette = tmp_path / "c.json"
    cassette.write_bytes(recorded[0].read_bytes())
    new = [user("never recorded")]
    with run_stub() as stub:
        environ = {**GATEWAY, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": stub.url}
        config = GatewayConfig(mode="auto", cassette=cassette, environ=environ)
        with gateway(config, AGENT) as gw:  # the agent's own key pair: not the caller's
            with pytest.raises(ClientError, match="replay miss: messages changed"):
                client().converse(modelId=MODEL, messages=new)
            assert len(gw.stop().misses) == 1
        with gateway(config, GATEWAY) as gw:
            reply = client().converse(modelId=MODEL, messages=new)
            summary = gw.stop()
    assert reply["output"]["message"]["content"][0]["text"] == "stub reply to: never recorded"
    assert (summary.live, summary.misses, len(stub.received)) == (1, [], 1)
    assert len(load(cassette).interactions) == 8


def test_the_pytest_plugin_replays_a_boto3_agent(recorded, pytester: pytest.Pytester):
    cassette, results, _ = recorded
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        f"""
        import os
        from test_bedrock import agent

        def test_bedrock(otel_replay):
            with otel_replay({str(cassette)!r}, mode="strict"):
                assert os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"].startswith("http://127.")
                assert agent() == {results!r}
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)


def test_a_streamed_recording_answers_a_plain_call_and_the_other_way_round(recorded):
    cassette, _, _ = recorded
    config = GatewayConfig(mode="strict", cassette=cassette, environ={})
    with gateway(config, {}) as gw:
        bedrock = client()
        plain = bedrock.converse(modelId=MODEL, messages=[user("stream me")])
        stream = bedrock.converse_stream(modelId=MODEL, messages=[user("weather in Lisbon?")],
                                         toolConfig={"tools": [WEATHER]})  # fmt: skip
        events = list(stream["stream"])
        summary = gw.stop()
    assert plain["output"]["message"]["content"] == [{"text": "stub reply to: stream me"}]
    assert plain["stopReason"] == "end_turn" and plain["usage"]["outputTokens"] == 5
    start = events[1]["contentBlockStart"]["start"]["toolUse"]
    assert start["name"] == "get_weather"
    delta = events[2]["contentBlockDelta"]["delta"]["toolUse"]["input"]
    assert json.loads(delta) == {"city": "weather in Lisbon?"}
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    assert (summary.replayed, summary.misses) == (2, [])


def test_an_exception_inside_a_stream_replays_as_the_same_error(tmp_path):
    cassette = tmp_path / "c.json"

    def ask() -> tuple[list[str], str]:
        bedrock = client()
        stream = bedrock.converse_stream(modelId=MODEL, messages=[user("cut me off")])
        seen: list[str] = []
        with pytest.raises(EventStreamError) as caught:
            seen.extend(next(iter(event)) for event in stream["stream"])
        stream["stream"].close()
        bedrock.close()
        return seen, caught.value.response["Error"]["Code"]

    with run_stub() as stub:
        stub.enqueue(
            Fault("stream_exception", after_events=3, headers={"exception": "throttlingException"})
        )
        environ = {**GATEWAY, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": stub.url}
        with gateway(GatewayConfig(mode="record", cassette=cassette, environ=environ), AGENT) as gw:
            recorded = ask()
            gw.stop()
    with gateway(GatewayConfig(mode="strict", cassette=cassette, environ={}), {}) as gw:
        replayed = ask()
        summary = gw.stop()
    assert recorded == replayed
    assert replayed == (
        ["messageStart", "contentBlockDelta", "contentBlockDelta"],
        "throttlingException",
    )
    assert (summary.replayed, summary.misses) == (1, [])


def test_the_anthropic_sdks_bedrock_client_records_and_replays(tmp_path):
    """``AnthropicBedrock`` reads ``ANTHROPIC_BEDROCK_BASE_URL``, which the gateway sets
    beside botocore's variable; it signs with the agent's keys and the gateway re-signs."""
    from anthropic import AnthropicBedrock

    def ask() -> list[str]:
        client = AnthropicBedrock(aws_region=REGION, max_retries=0)
        question = [{"role": "user", "content": "bedrock via anthropic"}]
        plain = client.messages.create(model=MODEL, max_tokens=32, messages=question)
        with client.messages.stream(model=MODEL, max_tokens=32, messages=question) as stream:
            streamed = "".join(stream.text_stream)
        return [plain.content[0].text, streamed]  # type: ignore[union-attr]

    cassette = tmp_path / "c.json"
    with pytest.MonkeyPatch.context() as mp, run_stub() as stub:
        for name, value in ISOLATED.items():
            mp.setenv(name, value)
        environ = {**GATEWAY, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": stub.url}
        with gateway(GatewayConfig(mode="record", cassette=cassette, environ=environ), AGENT):
            answers = ask()
        paths = [r.path for r in stub.received]
        config = GatewayConfig(mode="strict", cassette=cassette, environ={})
        with gateway(config, {}) as gw:
            assert os.environ["ANTHROPIC_BEDROCK_BASE_URL"] == gw.server.url
            replayed = ask()
            summary = gw.stop()
    assert answers == ["stub reply to: bedrock via anthropic"] * 2
    assert paths == [f"/model/{MODEL}/invoke", f"/model/{MODEL}/invoke-with-response-stream"]
    assert replayed == answers
    assert (summary.replayed, summary.live, summary.misses) == (2, 0, [])
    assert "AKIAAGENT" not in cassette.read_text() and "AKIAGATEWAY" not in cassette.read_text()
