"""Reading the agent's telemetry in process: ``run.spans`` / ``logs`` / ``metrics`` from the
Python API, ``run.flush()``, ``redirect_telemetry()``, a block's window by time and by
trace context, the snapshot's normalisation and diff, and the GenAI conventions check.

Telemetry clients are the OpenTelemetry SDK's own OTLP exporters; their providers are
local to each test (the SDK's global providers can be set once a process), so the test
hands them to ``run.flush()``.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_replay import ConfigError, redirect_telemetry
from otel_replay.frontends import api
from otel_replay.otlp.received import Received, linked, spans_of
from otel_replay.reports.conventions import genai_problems
from otel_replay.reports.snapshot import compare, render, snapshot
from otel_replay.testing.stub import run_stub

pytest_plugins = ["pytester"]


@pytest.fixture
def stub_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-telemetry-read-0000")
    with run_stub() as stub:
        yield stub.openai_url


def test_a_block_reads_spans_logs_and_metrics_after_flush(tmp_path: Path, stub_key: str) -> None:
    """Spans (with parents), log records (with their span) and metric points exported
    inside a record block; ``flush`` says what it waited for."""
    with api.record(tmp_path / "c.json", upstream_openai=stub_key) as run:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(GrpcSpans()))  # the HTTP port
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(), 3_600_000)
        meter_provider = MeterProvider(metric_readers=[reader])
        tracer = tracer_provider.get_tracer("agent")
        with tracer.start_as_current_span("invoke_agent helper"):
            with tracer.start_as_current_span("execute_tool lookup") as tool:
                tool.add_event("looked up", {"rows": 2})
                logger_provider.get_logger("agent").emit(body="found 2 rows")
            with openai.OpenAI(max_retries=0) as client:
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
                )
        meter_provider.get_meter("agent").create_counter("tool.calls").add(3, {"tool": "lookup"})
        flushed = run.flush(tracer_provider, logger_provider, meter_provider)
        for provider in (tracer_provider, logger_provider, meter_provider):
            provider.shutdown()
    # (after the global providers, when a module of this process has set them)
    assert flushed.flushed[-3:] == ["TracerProvider", "LoggerProvider", "MeterProvider"]
    assert (flushed.spans, flushed.logs, flushed.metric_points) == (2, 1, 1)
    assert "TracerProvider, LoggerProvider, MeterProvider; the block holds 2 spans" in str(flushed)
    root, tool = run.spans.one("invoke_agent helper"), run.spans.one("execute_tool lookup")
    assert tool.parent is root and root.children == [tool] and tool.ancestors == [root]
    assert [(e.name, e.attributes) for e in tool.events] == [("looked up", {"rows": 2})]
    assert run.spans.tree() == "invoke_agent helper [INTERNAL]\n  execute_tool lookup [INTERNAL]"
    [log] = run.logs
    assert (log.body, log.span_id, log.trace_id) == ("found 2 rows", tool.span_id, tool.trace_id)
    point, again = run.metrics  # the shutdown exported the cumulative sum once more
    assert again.value == point.value
    assert (point.name, point.kind, point.value, point.attributes) == (
        "tool.calls",
        "sum",
        3,
        {"tool": "lookup"},
    )
    assert run.summary is not None and run.summary.spans_received == 2


def test_redirect_telemetry_reaches_exporters_built_before_the_block(
    tmp_path: Path, stub_key: str
) -> None:
    """Outside pytest: an exporter built after ``redirect_telemetry()`` and before the
    block delivers to the redirection's gateway; the block reads its part of it, what
    arrived outside the block stays on the redirection."""
    with redirect_telemetry() as redirected:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        tracer = provider.get_tracer("app")
        with tracer.start_as_current_span("before"):
            pass
        provider.force_flush()  # not a global provider: the block cannot flush it itself
        with api.record(tmp_path / "c.json", upstream_openai=stub_key) as run:
            with tracer.start_as_current_span("inside"):
                pass
            run.flush(provider)
        provider.shutdown()
        assert [s.name for s in run.spans] == ["inside"]
        assert sorted(s.name for s in redirected.spans) == ["before", "inside"]
        assert os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] == redirected.url
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in os.environ  # restored


def _request(*spans: tuple[str, bytes, bytes, bytes]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for name, trace_id, span_id, parent in spans:
        span = scope.spans.add(name=name, trace_id=trace_id, span_id=span_id)
        span.parent_span_id = parent
    return request


def test_a_window_owns_what_arrived_during_it_and_later_in_its_traces() -> None:
    t1, t2 = b"\x01" * 16, b"\x02" * 16
    received = Received()
    received.tap("traces", _request(("earlier", t1, b"\x01" * 8, b"")))
    window = received.window(received.mark())
    received.tap("traces", _request(("child", t1, b"\x03" * 8, b"\x04" * 8)))
    window.close()
    received.tap("traces", _request(("late parent", t1, b"\x04" * 8, b"")))
    received.tap("traces", _request(("unrelated", t2, b"\x05" * 8, b"")))
    assert [s.name for s in window.spans] == ["child", "late parent"]
    assert window.spans.one("child").parent is window.spans.one("late parent")
    assert received.window().spans.one("earlier").children == []


def test_ids_that_loop_do_not_hang_the_tree() -> None:
    t = b"\x01" * 16
    spans = spans_of(
        _request(("a", t, b"\x01" * 8, b"\x02" * 8), ("b", t, b"\x02" * 8, b"\x01" * 8))
    )
    tree = linked(spans)
    assert len(tree.roots) == 1 and len(list(tree.walk())) == 2


def test_a_deep_chain_links_in_linear_time_and_is_too_deep_for_a_snapshot() -> None:
    t = b"\x01" * 16
    ids = [(i + 1).to_bytes(8, "big") for i in range(5_000)]
    chain = [(f"s{i}", t, ids[i], ids[i - 1] if i else b"") for i in range(len(ids))]
    tree = linked(spans_of(_request(*chain)))
    assert len(tree.roots) == 1 and max(depth for _, depth in tree.walk()) == 4_999
    with pytest.raises(ConfigError, match="nests 5000 levels deep; a trace snapshot keeps"):
        snapshot(tree, lambda v: v)


def _spans(**attributes: Any) -> Any:
    t = b"\x01" * 16
    tree = linked(
        spans_of(_request(("root", t, b"\x01" * 8, b""), ("chat m", t, b"\x02" * 8, b"\x01" * 8)))
    )
    tree.one("chat m").attributes.update(attributes)
    return tree


def test_snapshots_normalise_volatile_values_and_diff_as_a_tree() -> None:
    def same(v: Any) -> Any:
        return v

    one = snapshot(
        _spans(**{"server.port": 41000, "url": "http://127.0.0.1:41000/v1", "seed": "a"}), same
    )
    two = snapshot(
        _spans(**{"server.port": 52000, "url": "http://127.0.0.1:52000/v1", "seed": "b"}),
        same,
        ignore=["seed"],
    )
    assert compare(one, two, "x.spans.json") is None  # ports normalised, seed ignored
    three = snapshot(_spans(**{"url": "http://127.0.0.1:1/v1", "extra": True}), same)
    diff = compare(one, three, "x.spans.json")
    assert diff is not None
    assert "+  | extra = true" in diff.replace("    ", "")
    assert render(three)[0] == "root [UNSPECIFIED]"


def test_genai_problems_name_the_span_what_is_missing_and_the_fix() -> None:
    tree = _spans(**{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
    problems = genai_problems(tree)
    assert len(problems) == 3
    assert "span 'chat m'" in problems[0] and "gen_ai.provider.name" in problems[0]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in problems[1]
    complete = _spans(
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "m",
            "gen_ai.input.messages": "[]",
            "gen_ai.output.messages": "[]",
        }
    )
    assert genai_problems(complete) == []
    assert genai_problems(_spans(**{"gen_ai.operation.name": "invoke_agent"})) == []


def test_the_genai_check_flag_fails_a_block_with_incomplete_model_spans(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_inner=textwrap.dedent(
            """
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor

            def test_model_span(otel_replay):
                provider = TracerProvider()
                provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
                with otel_replay("none") as run:
                    with provider.get_tracer("t").start_as_current_span("chat m") as span:
                        span.set_attribute("gen_ai.operation.name", "chat")
                provider.shutdown()
                assert len(run.spans) == 1
            """
        )
    )
    args = ("-p", "no:hypothesispytest", "--otel-replay=record", "--otel-replay-check-genai")
    result = pytester.runpytest_inprocess(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*otel-replay GenAI conventions: span 'chat m' (t) lacks gen_ai.provider.name*"]
    )
    without = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--otel-replay=record")
    without.assert_outcomes(passed=1)


class _StuckProvider:
    """A provider whose exporter never finishes (or whose flush fails outright)."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        if self.fail:
            raise RuntimeError("exporter crashed")
        return False


def test_a_provider_that_does_not_flush_is_reported_not_raised(
    tmp_path: Path, stub_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    with api.record(tmp_path / "c.json", upstream_openai=stub_key) as run:
        flushed = run.flush(_StuckProvider(False), _StuckProvider(True), timeout=0.1)
    assert flushed.timed_out == ["_StuckProvider", "_StuckProvider"]
    assert "not flushed in time: _StuckProvider, _StuckProvider" in str(flushed)
    assert "did not export within 0.1 s" in caplog.text and "exporter crashed" in caplog.text


def test_a_snapshot_never_holds_a_secret(tmp_path: Path, stub_key: str) -> None:
    """An attribute carrying the caller's key is written as its placeholder."""
    key = os.environ["OPENAI_API_KEY"]
    cassette = tmp_path / "c.json"
    with api.record(cassette, upstream_openai=stub_key) as run:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        with provider.get_tracer("app").start_as_current_span("configure") as span:
            span.set_attribute("app.settings", f"model=gpt-4o-mini key={key}")
        run.flush(provider)
        provider.shutdown()
    text = run.assert_snapshot().read_text()
    assert key not in text and '"app.settings": "model=gpt-4o-mini key=[REDACTED' in text


def test_otlp_points_at_the_session_gateway_before_conftests_are_imported(
    pytester: pytest.Pytester,
) -> None:
    """A conftest's import-time set-up already sees the session's gateway (every signal);
    ``--otel-replay=off`` and ``--otel-replay-telemetry=blocks`` leave the variables alone."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(
        "import os\nAT_IMPORT = {k: v for k, v in os.environ.items() if 'OTLP' in k}\n"
    )
    pytester.makepyfile(
        test_inner=textwrap.dedent(
            """
            import sys

            def test_seen_at_import(request):
                seen = sys.modules["conftest"].AT_IMPORT
                if request.config.getoption("otel_replay_telemetry") == "blocks" or (
                    request.config.getoption("otel_replay_mode") == "off"
                ):
                    assert seen == {}
                    return
                url = request.getfixturevalue("otel_replay_telemetry").url
                assert seen["OTEL_EXPORTER_OTLP_ENDPOINT"] == url
                for signal in ("traces", "logs", "metrics"):
                    endpoint = seen[f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"]
                    assert endpoint == f"{url}/v1/{signal}"
            """
        )
    )
    for args in ((), ("--otel-replay=off",), ("--otel-replay-telemetry=blocks",)):
        result = pytester.runpytest_inprocess("-p", "no:hypothesispytest", *args)
        result.assert_outcomes(passed=1)
    assert not any("OTLP" in name for name in os.environ)  # restored when each session ended
