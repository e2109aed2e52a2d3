"""The configurations in ``collector/``, each run as shipped by a real OpenTelemetry
Collector (``make go`` builds it from the pinned modules of ``collector/otelcol``): an
instrumented agent sends its telemetry over OTLP, the Collector writes it where the file
says, and what it wrote becomes a cassette the agent replays strictly with its upstream
gone. Every configuration in ``collector/`` is started here (the last test checks that
none is left out)."""

from __future__ import annotations

import json
from pathlib import Path

from backend_checks import agent_runs, otel_replay, replays_offline
from go_servers import COLLECTOR, otelcol
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from third_party_agents import FINAL_TEXT, instrumentor, run_openai_agent, traced

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp.codec import iter_spans, traces_from_json
from otel_replay.testing.stub import run_stub

TESTED = {"config.yaml", "loadbalancing.yaml", "forward.yaml"}
"""The configurations the tests below start."""


def lines(path: Path) -> list[ExportTraceServiceRequest]:
    return [traces_from_json(line) for line in path.read_text().splitlines() if line.strip()]


def span_names(path: Path) -> set[str]:
    return {span.name for request in lines(path) for _r, _s, span in iter_spans(request)}


def test_the_capture_configuration_writes_what_build_replays(tmp_path, monkeypatch):
    """``config.yaml``: spans and log records (content in events) through the filters into
    the file exporter's JSON lines; ``build`` joins them into a cassette."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    files = tmp_path / "capture"
    files.mkdir()  # the file exporter writes into a directory that is there
    with otelcol("config.yaml", tmp_path / "otelcol", OTEL_REPLAY_TRACE_DIR=str(files)) as col:
        (trace_id,) = agent_runs(
            col.http, 1, stream=True, noise=True, instrumentation="otel-openai-v2"
        )
    traces, logs = files / "traces.jsonl", files / "logs.jsonl"
    # the filter kept the two model calls: not the root span, not the span of no model call
    assert span_names(traces) == {"chat gpt-4o-mini"}
    assert len(logs.read_text().splitlines()) >= 1

    out = tmp_path / "incident.json"
    done = otel_replay("build", str(traces), str(logs), "--trace-id", trace_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert len(load(out).interactions) == 2
    config = GatewayConfig(mode="strict", cassette=out, upstream_openai="http://127.0.0.1:9/v1")
    with GatewayThread(config) as gw:
        replayed = run_openai_agent(gw.env["OPENAI_BASE_URL"], stream=True)
        summary = gw.stop()
    assert (summary.replayed, summary.live, summary.misses) == (2, 0, [])
    assert replayed.final_text == FINAL_TEXT


def many_traces(count: int) -> ExportTraceServiceRequest:
    """``count`` small traces of model-call spans (two spans each) the capture filter keeps."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add()
    spans.resource.attributes.add(key="service.name", value=AnyValue(string_value="batch-agent"))
    into = spans.scope_spans.add().spans
    for trace in range(count):
        for part in range(2):
            span = into.add(
                trace_id=(0xA000 + trace).to_bytes(16, "big"),
                span_id=(trace * 2 + part + 1).to_bytes(8, "big"),
                name="chat",
                start_time_unix_nano=1_700_000_000 * 10**9 + trace,
                end_time_unix_nano=1_700_000_000 * 10**9 + trace + 1000,
            )
            messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
            span.attributes.add(key="gen_ai.input.messages", value=AnyValue(string_value=messages))
    return request


def test_load_balancing_keeps_every_trace_whole_on_one_gateway(tmp_path):
    """``loadbalancing.yaml`` in front of two gateway Collectors running ``config.yaml``:
    each trace's spans all land in one gateway's file, and both gateways get traces."""
    dirs = [tmp_path / "gateway-a", tmp_path / "gateway-b"]
    for directory in dirs:
        directory.mkdir()
    with (
        otelcol("config.yaml", tmp_path / "a", OTEL_REPLAY_TRACE_DIR=str(dirs[0])) as a,
        otelcol("config.yaml", tmp_path / "b", OTEL_REPLAY_TRACE_DIR=str(dirs[1])) as b,
    ):
        gateways = f"[{a.grpc}, {b.grpc}]"
        env = {"OTEL_REPLAY_GATEWAYS": gateways, "OTEL_REPLAY_GATEWAYS_INSECURE": "true"}
        with otelcol("loadbalancing.yaml", tmp_path / "node", **env) as node:
            agent_ids = agent_runs(node.http, 2)
            _post(node.http, many_traces(64))
    where: dict[str, set[int]] = {}
    spans: dict[str, int] = {}
    for index, directory in enumerate(dirs):
        for request in lines(directory / "traces.jsonl"):
            for _r, _s, span in iter_spans(request):
                trace = span.trace_id.hex()
                where.setdefault(trace, set()).add(index)
                spans[trace] = spans.get(trace, 0) + 1
    assert all(len(at) == 1 for at in where.values()), where
    assert len(where) == 66 and all(spans[t] == 2 for t in where)
    assert {next(iter(at)) for at in where.values()} == {0, 1}

    for trace_id in agent_ids:
        (index,) = where[trace_id]
        out = tmp_path / f"{trace_id}.json"
        done = otel_replay("build", str(dirs[index]), "--trace-id", trace_id, "-o", str(out))
        assert done.returncode == 0, done.stderr
        replays_offline(out)


def _post(base: str, request: ExportTraceServiceRequest) -> None:
    import urllib.request

    answer = urllib.request.urlopen(
        urllib.request.Request(
            f"{base}/v1/traces",
            data=request.SerializeToString(),
            headers={"Content-Type": "application/x-protobuf"},
        ),
        timeout=30,
    )
    with answer:
        assert answer.status == 200


def test_the_gateway_is_the_forwarding_collectors_target_in_record(tmp_path):
    """``forward.yaml``: the agent's telemetry goes to a Collector next to it, whose
    OTLP/HTTP exporter (gzip) sends it on to the gateway of a ``record`` run; the gateway
    receives every span and matches each model call to one it served."""
    cassette = tmp_path / "recorded.json"
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=tmp_path / "recorded.jsonl",
            upstream_openai=stub.openai_url,
            grpc_port=None,
            environ={},
        )
        with GatewayThread(config) as gw:
            endpoint = gw.env["OTEL_EXPORTER_OTLP_ENDPOINT"]
            with otelcol(
                "forward.yaml", tmp_path / "otelcol", OTEL_REPLAY_OTLP_ENDPOINT=endpoint
            ) as col:
                with traced(Path(), [instrumentor("openinference-openai")], otlp=col.http):
                    assert run_openai_agent(gw.env["OPENAI_BASE_URL"]).final_text == FINAL_TEXT
            summary = gw.stop()
    assert (summary.live, summary.misses) == (2, [])
    assert summary.spans_received == 2, summary
    assert summary.bypassed == [], summary.bypassed
    names = span_names(tmp_path / "recorded.jsonl")
    assert "ChatCompletion" in names, names
    replays_offline(cassette)


def test_every_configuration_is_started():
    shipped = {path.name for path in COLLECTOR.glob("*.yaml")}
    assert shipped == TESTED
