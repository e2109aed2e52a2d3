"""The pytest plugin points the real ``google-genai`` client at the gateway: recorded with
``--otel-replay-upstream-gemini`` against the stub, replayed strictly with it stopped."""

from __future__ import annotations

import json
import textwrap

import pytest
from google import genai  # noqa: F401  imported once here: inner in-process runs reuse it

from otel_replay.testing.stub import run_stub

TESTS = textwrap.dedent(
    """
    import os

    from google import genai


    def test_gemini(otel_replay):
        with otel_replay("gemini") as gw:
            assert os.environ["GOOGLE_GEMINI_BASE_URL"] == gw.url
            with genai.Client() as client:  # its key and its base URL from the environment
                models = client.models
                text = models.generate_content(model="gemini-2.5-flash", contents="hi").text
                chunks = models.generate_content_stream(model="gemini-2.5-flash", contents="yo")
                streamed = "".join(chunk.text for chunk in chunks)
        assert (text, streamed) == ("stub reply to: hi", "stub reply to: yo")
    """
)


def test_the_plugin_records_and_replays_a_gemini_agent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_gemini_block=TESTS)
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyPlugin-test-gemini-key-000000001")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with run_stub() as stub:
        upstream = f"--otel-replay-upstream-gemini={stub.url}"
        result = pytester.runpytest_inprocess(
            "-p", "no:hypothesispytest", "--otel-replay=record", upstream
        )
        assert [r.path for r in stub.received] == [
            "/v1beta/models/gemini-2.5-flash:generateContent",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        ]
    result.assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "gemini.json"
    assert len(json.loads(cassette.read_text())["interactions"]) == 2
    monkeypatch.delenv("GEMINI_API_KEY")  # replay needs no key: the plugin gives a placeholder
    replayed = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--otel-replay=strict")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*2 replayed · 0 live · 0 misses*"])


BYPASSING = textwrap.dedent(
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor


    def test_bypass(otel_replay):
        with otel_replay("empty") as gw:
            provider = TracerProvider()
            exporter = OTLPSpanExporter(endpoint=gw.url + "/v1/traces")
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            # the agent's instrumented client made this call somewhere else, and was answered
            attributes = {"gen_ai.provider.name": "gcp.gemini", "gen_ai.operation.name": "chat"}
            attributes["gen_ai.response.id"] = "resp-1"
            with provider.get_tracer("agent").start_as_current_span(
                "chat gemini-2.5-flash", attributes=attributes
            ):
                pass
            provider.shutdown()
    """
)


def test_a_block_whose_agent_bypassed_the_gateway_fails_in_strict(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_bypassing_block=BYPASSING)
    cassettes = pytester.path / "cassettes"
    cassettes.mkdir()
    (cassettes / "empty.json").write_text('{"version": 1, "source": {}, "interactions": []}')
    result = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--otel-replay=strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*model calls bypassed the gateway*gcp.gemini call 'chat gemini-2.5-flash'*"]
    )
