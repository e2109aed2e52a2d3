"""The Gemini API through the real ``google-genai`` client: recorded through the gateway
against the stub upstream, then replayed strictly with the stub stopped, through the
command line (the agent finds the gateway by ``GOOGLE_GEMINI_BASE_URL`` alone)."""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from gemini_agents import WEATHER
from google import genai
from google.genai import errors, types
from schema_check import validate_cassette_file

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import Fault, run_stub

KEY = "AIzaSyD3mo-gemini-key-for-tests-0123456"  # the shape of a Gemini API key
MODEL = "gemini-2.5-flash"
BUSY = "gemini-2.5-pro"  # the model the stub refuses
_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

AGENT = textwrap.dedent(
    '''
    """A Gemini agent: a plain turn, a streamed one, a tool-call round trip, token counting,
    embeddings and a call the provider refuses; prints what it got as JSON."""
    import json
    import sys

    from google import genai
    from google.genai import errors, types

    MODEL = "gemini-2.5-flash"


    # WEATHER


    def main(key):
        client = genai.Client(api_key=key)
        out = {}
        config = types.GenerateContentConfig(system_instruction="Be brief.", temperature=0.2)
        out["plain"] = client.models.generate_content(
            model=MODEL, contents="hello there", config=config
        ).text
        stream = client.models.generate_content_stream(model=MODEL, contents="stream me")
        out["stream"] = [chunk.text for chunk in stream]
        tools = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[WEATHER])])
        question = types.Content(role="user", parts=[types.Part(text="Lisbon")])
        first = client.models.generate_content(model=MODEL, contents=[question], config=tools)
        call = first.function_calls[0]
        out["call"] = [call.name, call.args]
        answer = types.Part.from_function_response(name=call.name, response={"temp": 21})
        reply = types.Content(role="user", parts=[answer])
        history = [question, first.candidates[0].content, reply]
        stream = client.models.generate_content_stream(model=MODEL, contents=history, config=tools)
        out["after_tool"] = "".join(chunk.text or "" for chunk in stream)
        out["tokens"] = client.models.count_tokens(model=MODEL, contents="count me").total_tokens
        vectors = client.models.embed_content(model="text-embedding-004", contents=["a", "b"])
        out["embeddings"] = [e.values for e in vectors.embeddings]
        try:
            client.models.generate_content(model="gemini-2.5-pro", contents="too many")
        except errors.APIError as exc:
            out["error"] = [exc.code, exc.status, exc.message]
        print(json.dumps(out))


    main(sys.argv[1])
    '''
).replace("# WEATHER", WEATHER)


def run_agent(script: Path, env: dict[str, str]) -> dict[str, Any]:
    """The agent in this process (the replay runs it as a process of its own), with the
    variables the gateway gives it."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        for name, value in env.items():
            mp.setenv(name, value)
        mp.setattr(sys, "argv", [str(script), KEY])
        runpy.run_path(str(script), run_name="__main__")
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in _PROXIES}
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "CI"):
        env.pop(name, None)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One recording against the stub, which refuses the call to the other model: the
    cassette, traces, answers and what the stub received."""
    tmp = tmp_path_factory.mktemp("gemini")
    script = tmp / "agent.py"
    script.write_text(AGENT)
    cassette, traces = tmp / "c.json", tmp / "t.jsonl"
    refused = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    with run_stub() as stub:
        stub.enqueue(Fault("status", status=429, body=refused, path=f"{BUSY}:generateContent"))
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=traces,
            environ={"GOOGLE_GEMINI_BASE_URL": stub.url},
        )
        with GatewayThread(config) as gw:
            answers = run_agent(script, gw.env)
            summary = gw.stop()
        received = list(stub.received)
    return {
        "cassette": cassette,
        "traces": traces,
        "answers": answers,
        "summary": summary,
        "received": received,
        "script": script,
        "tmp": tmp,
    }


def test_record_forwards_every_method_with_the_key_to_the_gemini_upstream(recorded):
    received = recorded["received"]
    assert [(r.path, r.query) for r in received] == [
        (f"/v1beta/models/{MODEL}:generateContent", ""),
        (f"/v1beta/models/{MODEL}:streamGenerateContent", "alt=sse"),
        (f"/v1beta/models/{MODEL}:generateContent", ""),
        (f"/v1beta/models/{MODEL}:streamGenerateContent", "alt=sse"),
        (f"/v1beta/models/{MODEL}:countTokens", ""),
        ("/v1beta/models/text-embedding-004:batchEmbedContents", ""),
        (f"/v1beta/models/{BUSY}:generateContent", ""),
    ]
    assert all(r.headers.get("x-goog-api-key") == KEY for r in received)
    answers = recorded["answers"]
    assert answers["plain"] == "stub reply to: hello there"
    assert "".join(answers["stream"]) == "stub reply to: stream me"
    assert len(answers["stream"]) > 1  # streamed chunk by chunk through the gateway
    assert answers["call"] == ["get_weather", {"city": "Lisbon"}]
    assert answers["after_tool"] == 'stub reply to: {"temp": 21}'
    assert answers["error"] == [429, "RESOURCE_EXHAUSTED", "quota"]
    assert (recorded["summary"].live, recorded["summary"].misses) == (7, [])


def test_the_cassette_holds_gemini_exchanges_and_no_key(recorded):
    cassette, traces = recorded["cassette"], recorded["traces"]
    validate_cassette_file(cassette)
    for path in (cassette, traces):
        assert KEY not in path.read_text()
    exchanges = load(cassette).interactions
    assert {ex.provider for ex in exchanges} == {"gcp.gemini"}
    assert [ex.operation for ex in exchanges] == [
        "chat",
        "chat",
        "chat",
        "chat",
        "count_tokens",
        "embeddings",
        "chat",
    ]
    first = exchanges[0].request
    assert first.model == MODEL
    assert first.system == [{"type": "text", "content": "Be brief."}]
    assert first.params["generationConfig"] == {"temperature": 0.2}
    call = exchanges[3].request.messages[1]["parts"][0]
    assert (call["type"], call["name"]) == ("tool_call", "get_weather")
    assert exchanges[-1].response.status == 429
    spans = [json.loads(line) for line in traces.read_text().splitlines()]
    names = {
        attr["value"]["stringValue"]
        for doc in spans
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for attr in span["attributes"]
        if attr["key"] == "gen_ai.provider.name"
    }
    assert names == {"gcp.gemini"}


def test_strict_replay_with_the_stub_stopped_gives_the_same_answers(recorded):
    tmp, script = recorded["tmp"], recorded["script"]
    env = clean_env(tmp, CI="true")
    command = [sys.executable, "-m", "otel_replay.frontends.cli", "replay"]
    command += ["--cassette", str(recorded["cassette"]), "--", sys.executable, str(script), KEY]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == recorded["answers"]
    assert "7 replayed · 0 live · 0 misses" in done.stderr


def test_a_miss_is_a_google_error_the_client_raises_and_the_run_counts(recorded):
    config = GatewayConfig(mode="strict", cassette=recorded["cassette"], environ={})
    with GatewayThread(config) as gw:
        client = genai.Client(
            api_key=KEY,
            http_options=types.HttpOptions(base_url=gw.env["GOOGLE_GEMINI_BASE_URL"]),
        )
        with pytest.raises(errors.ClientError) as caught:
            client.models.generate_content(model=MODEL, contents="never recorded")
        # the v1 form of a recorded v1beta call is the same call
        stable = genai.Client(
            api_key=KEY,
            http_options=types.HttpOptions(
                base_url=gw.env["GOOGLE_GEMINI_BASE_URL"], api_version="v1"
            ),
        )
        tokens = stable.models.count_tokens(model=MODEL, contents="count me").total_tokens
        summary = gw.stop()
    assert caught.value.code == 400 and caught.value.status == "INVALID_ARGUMENT"
    assert caught.value.message is not None and "replay miss" in caught.value.message
    assert tokens == recorded["answers"]["tokens"]
    assert (summary.replayed, len(summary.misses)) == (1, 1)


def test_auto_forwards_a_miss_only_with_the_callers_own_gemini_key(recorded, tmp_path):
    cassette = tmp_path / "c.json"
    cassette.write_bytes(recorded["cassette"].read_bytes())
    with run_stub() as stub:
        environ = {"GEMINI_API_KEY": KEY}
        config = GatewayConfig(mode="auto", cassette=cassette, grpc_port=None, environ=environ)
        config.upstreams = {"gemini": stub.url}
        with GatewayThread(config) as gw:
            base = types.HttpOptions(base_url=gw.env["GOOGLE_GEMINI_BASE_URL"])
            with genai.Client(api_key=KEY, http_options=base) as own:
                text = own.models.generate_content(model=MODEL, contents="new question").text
            other = "AIzaSyOther-gemini-key-not-the-callers-01"
            with genai.Client(api_key=other, http_options=base) as stranger:
                with pytest.raises(errors.ClientError):
                    stranger.models.generate_content(model=MODEL, contents="another one")
            summary = gw.stop()
        received = [(r.path, r.headers.get("x-goog-api-key")) for r in stub.received]
    assert text == "stub reply to: new question"
    assert received == [(f"/v1beta/models/{MODEL}:generateContent", KEY)]
    assert (summary.live, len(summary.misses)) == (1, 1)
    assert len(load(cassette).interactions) == len(load(recorded["cassette"]).interactions) + 1
    assert KEY not in cassette.read_text()
