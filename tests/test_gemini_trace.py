"""A production trace of a Gemini agent becomes a cassette: the agent, instrumented with
the Google GenAI OpenTelemetry instrumentation (message content captured), talks to the
provider directly (the stub standing in) and exports its spans; ``build`` turns them into
a cassette, and the unchanged agent then replays strictly through the gateway."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from gemini_agents import INSTRUMENTED, WEATHER
from schema_check import validate_cassette_file

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import run_stub

AGENT = (
    INSTRUMENTED
    + WEATHER
    + textwrap.dedent(
        """
        import sys

        from google import genai

        direct = sys.argv[1]
        options = types.HttpOptions(base_url=direct) if direct != "-" else None
        key = "AIzaSyTrace-test-gemini-key-0000000001"
        client = genai.Client(api_key=key, http_options=options)
        config = types.GenerateContentConfig(
            system_instruction="Be brief.", tools=[types.Tool(function_declarations=[WEATHER])]
        )
        question = types.Content(role="user", parts=[types.Part(text="Lisbon")])
        models, model = client.models, "gemini-2.5-flash"
        first = models.generate_content(model=model, contents=[question], config=config)
        call = first.function_calls[0]
        answer = types.Part.from_function_response(name=call.name, response={"temp": 21})
        reply = types.Content(role="user", parts=[answer])
        history = [question, first.candidates[0].content, reply]
        final = models.generate_content(model=model, contents=history, config=config)
        print(call.name, call.args["city"], final.text)
        provider.shutdown()
        """
    )
)
CONTENT = {
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
}


def agent_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_"))}
    env.update(NO_PROXY="127.0.0.1,localhost", **CONTENT, **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def test_a_trace_of_the_instrumented_client_builds_a_cassette_that_replays(tmp_path: Path):
    script, traces, cassette = tmp_path / "agent.py", tmp_path / "t.jsonl", tmp_path / "c.json"
    script.write_text(AGENT)
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=None, traces=traces, grpc_port=None)
        with GatewayThread(config) as gw:  # a collector: it only receives the spans
            telemetry = {k: v for k, v in gw.env.items() if k.startswith("OTEL_EXPORTER")}
            command = [sys.executable, str(script), stub.url]
            live = subprocess.run(
                command, env=agent_env(**telemetry), capture_output=True, text=True, timeout=120
            )
            summary = gw.stop()
    assert live.returncode == 0, live.stderr
    assert live.stdout.strip() == 'get_weather Lisbon stub reply to: {"temp": 21}'
    assert summary.spans_received == 2

    build = [sys.executable, "-m", "otel_replay.frontends.cli", "build", str(traces)]
    built = subprocess.run([*build, "-o", str(cassette)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    validate_cassette_file(cassette)
    exchanges = load(cassette).interactions
    assert [(ex.provider, ex.source) for ex in exchanges] == [("gcp.gemini", "genai-semconv")] * 2
    call = exchanges[0].response.body["candidates"][0]["content"]["parts"][0]["functionCall"]
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Lisbon"})

    replay = [sys.executable, "-m", "otel_replay.frontends.cli", "replay", "--mode", "strict"]
    replay += ["--cassette", str(cassette), "--", sys.executable, str(script), "-"]
    done = subprocess.run(replay, env=agent_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == live.stdout
    assert "2 replayed · 0 live · 0 misses · 2 spans received" in done.stderr
