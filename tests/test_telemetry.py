"""The agent's own telemetry in tests: import-time exporters reach the session's gateway,
``run.spans`` holds the agent's span tree, trace snapshots catch a changed tree.

The inner sessions run in a subprocess (``runpytest_subprocess``): the OpenTelemetry SDK
sets its global providers once per process, and the point is a module that sets them up
at import time, the way applications do. The agent is instrumented for real: the
``openai`` SDK under ``opentelemetry-instrumentation-openai-v2`` for the model call, and
``invoke_agent`` / ``execute_tool`` spans of its own; the stub upstream is the provider.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from otel_replay.testing.stub import run_stub

pytest_plugins = ["pytester"]

# The agent module: its exporter is built when the module is imported, before any block.
AGENT = textwrap.dedent(
    """
    import json, os, urllib.request

    import openai
    from google.protobuf import json_format
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class JsonSpanExporter(SpanExporter):
        # OTLP/HTTP with JSON bodies, reading the endpoint the way the SDK's exporters do
        def __init__(self):
            self.url = os.environ.get(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://localhost:4318/v1/traces"
            )

        def export(self, spans):
            body = json_format.MessageToJson(encode_spans(spans)).encode()
            request = urllib.request.Request(
                self.url, body, {"Content-Type": "application/json"}, method="POST"
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                ok = response.status == 200
            return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    EXPORTER = os.environ["AGENT_EXPORTER"]
    if EXPORTER == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    elif EXPORTER == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    else:
        OTLPSpanExporter = JsonSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    # a metric reader exports once more as the process exits: the gateway is still there
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(), 3_600_000)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    RUNS = metrics.get_meter("weather-agent").create_counter("agent.runs")
    OpenAIInstrumentor().instrument()
    tracer = trace.get_tracer("weather-agent")
    with tracer.start_as_current_span("startup"):  # before any block: kept for the session
        pass

    def agent(question):
        changed = os.environ.get("AGENT_CHANGE", "")
        RUNS.add(1)
        with tracer.start_as_current_span("invoke_agent weather") as span:
            span.set_attribute("gen_ai.operation.name", "invoke_agent")
            span.set_attribute("gen_ai.agent.name", "weather")
            with tracer.start_as_current_span("execute_tool get_weather") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "get_weather")
                tool.set_attribute("flaky.random", os.urandom(3).hex())
                tool.set_attribute("city", "Porto" if "attribute" in changed else "Lisbon")
            if "span" in changed:
                with tracer.start_as_current_span("execute_tool get_time"):
                    pass
            with openai.OpenAI(max_retries=0) as client:
                reply = client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
                )
            return reply.choices[0].message.content
    """
)

# Recorded, then replayed strictly in the same session (the cassette is written when the
# record block ends); test_changed_agent replays an agent that added a span and changed an
# attribute.
TEST = textwrap.dedent(
    """
    import pytest
    from agent import agent

    @pytest.mark.parametrize("mode", ["record", "strict"])
    def test_agent(otel_replay, otel_replay_telemetry, mode):
        with otel_replay("weather", mode=mode) as run:
            assert agent("hi") == "stub reply to: hi"
        assert run.summary.spans_received == 3
        spans = run.spans
        assert not spans.named("startup")
        assert otel_replay_telemetry.spans.one("startup").parent is None
        root = spans.one("invoke_agent weather")
        tool = spans.one("execute_tool get_weather")
        chat = spans.one("chat gpt-4o-mini")
        assert root.parent is None and spans.roots == [root]
        assert tool.parent is root and chat.parent is root
        assert root.children == [tool, chat]
        assert (root.kind, chat.kind) == ("INTERNAL", "CLIENT")
        assert chat.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert tool.attributes["gen_ai.tool.name"] == "get_weather"
        assert root.trace_id == chat.trace_id and len(root.span_id) == 16
        points = {p.name for p in run.metrics}  # the agent's and the instrumentation's
        assert {"agent.runs", "gen_ai.client.token.usage"} <= points
        print("TREE", mode, spans.tree().replace(chr(10), " / "))
        run.assert_snapshot(ignore=["flaky.*"])

    def test_changed_agent(otel_replay, monkeypatch):
        monkeypatch.setenv("AGENT_CHANGE", "span,attribute")
        with otel_replay("weather", mode="strict") as run:
            agent("hi")
        run.assert_snapshot(ignore=["flaky.*"])
    """
)

# What a slow exporter would say: it retried, or gave up, or could not connect.
EXPORTER_TROUBLE = ("Transient error", "Failed to export", "retrying", "Connection refused")


# Plugins the inner sessions do not need (they only cost start-up time), and the logging
# plugin: without it the exporters' warnings reach stderr, where they are checked.
QUIET = [f"-p no:{name}" for name in ("logging", "cacheprovider", "hypothesispytest")]
QUIET += [f"-p no:{name}" for name in ("langsmith_plugin", "xdist", "xdist.looponfail", "anyio")]


def inner_session(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(agent=AGENT, test_agent=TEST)


def run_inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*QUIET, "-s", *args)


def assert_no_exporter_trouble(result: pytest.RunResult) -> None:
    said = "\n".join(result.outlines + result.errlines)
    for phrase in EXPORTER_TROUBLE:
        assert phrase not in said, said


def record_and_replay(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner session against a stub upstream (it sees the record block's one call)."""
    with run_stub() as stub:
        result = run_inner(pytester, f"--otel-replay-upstream-openai={stub.openai_url}", *args)
        assert len(stub.received) == 1
    return result


@pytest.mark.parametrize("exporter", ["http/protobuf", "http/json", "grpc"])
def test_import_time_exporters_deliver_in_record_and_strict_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, exporter: str
) -> None:
    """The exporter is built at import time, before any block: its spans reach the
    session's gateway, the block reads them as a tree, no exporter retries or times out
    (not even as the process exits). The gRPC exporter is not told to use gRPC's port (no
    OTEL_EXPORTER_OTLP_PROTOCOL): it reaches the receiver through the HTTP port."""
    inner_session(pytester)
    monkeypatch.setenv("AGENT_EXPORTER", exporter)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-telemetry-0000")
    result = record_and_replay(pytester, "-k", "not changed")
    result.assert_outcomes(passed=2)
    tree = "invoke_agent weather [INTERNAL] /   execute_tool get_weather [INTERNAL] /   chat"
    for mode in ("record", "strict"):
        assert f"TREE {mode} {tree} gpt-4o-mini [CLIENT]" in result.stdout.str()
    result.stdout.fnmatch_lines(["*1 replayed · 1 live · 0 misses · 6 spans received*"])
    assert_no_exporter_trouble(result)
    snapshot = pytester.path / "cassettes" / "weather.spans.json"
    saved = json.loads(snapshot.read_text())["spans"]
    assert [child["name"] for child in saved[0]["children"]] == [
        "execute_tool get_weather",
        "chat gpt-4o-mini",
    ]


def test_snapshot_fails_with_a_tree_diff_when_the_agent_changes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written in record mode and passing in replay; an added span and a changed attribute
    fail the test with a tree diff; an ignored flaky attribute does not; the update option
    accepts the change."""
    inner_session(pytester)
    monkeypatch.setenv("AGENT_EXPORTER", "http/protobuf")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-telemetry-0000")
    result = record_and_replay(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*SnapshotMismatch: trace snapshot *weather.spans.json differs*",
            '*-      | city = "Lisbon"*',
            '*+      | city = "Porto"*',
            "*+    execute_tool get_time [[]INTERNAL]*",
            "*--otel-replay-update-snapshots*",
            "FAILED test_agent.py::test_changed_agent*",
        ]
    )
    snapshot = pytester.path / "cassettes" / "weather.spans.json"
    text = snapshot.read_text()
    assert "flaky.random" not in text  # ignored
    assert '"gen_ai.response.id": "<id:1>"' in text  # the matching rules' placeholder

    updated = run_inner(pytester, "-k", "changed", "--otel-replay-update-snapshots")
    updated.assert_outcomes(passed=1)
    assert '"Porto"' in snapshot.read_text() and "get_time" in snapshot.read_text()


def test_snapshot_path_sits_beside_the_cassette(tmp_path: Path) -> None:
    from otel_replay.reports.snapshot import snapshot_path

    assert snapshot_path(tmp_path / "weather.json") == tmp_path / "weather.spans.json"
