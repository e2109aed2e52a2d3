"""``build --from clickhouse+…``: a real agent's spans, written into the Collector
ClickHouse exporter's own table (chDB running its schema, behind ClickHouse's HTTP
interface) as the exporter writes them, come back as a cassette the agent replays
strictly with its upstream gone — one trace, several traces into one cassette, or one
cassette per trace; and what a ClickHouse cannot answer is one line, exit 2."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from backend_checks import one_line, replays_offline
from backend_checks import otel_replay as run_cli
from clickhouse_server import PASSWORD, USER, ClickHouse, clickhouse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from third_party_agents import FINAL_TEXT, instrumentor, run_openai_agent, traced

from otel_replay.cassette.model import load
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.codec import iter_spans, traces_from_json
from otel_replay.readers import Selection
from otel_replay.sources import open_source
from otel_replay.sources.clickhouse import query_text
from otel_replay.sources.rows import coerce, span_of
from otel_replay.testing.exporter_rows import exporter_rows
from otel_replay.testing.stub import run_stub

SEMCONV = "weather-agent-semconv"  # the service of the GenAI-semconv-instrumented runs


def agent_traces(
    directory: Path, runs: int, instrumentation: str = "openinference-openai", **service: str
) -> list[ExportTraceServiceRequest]:
    """``runs`` runs of the instrumented agent, each under its own root span (one trace
    a run), against the stub upstream."""
    with run_stub() as stub, traced(directory, [instrumentor(instrumentation)], **service) as out:
        tracer = out.tracer_provider.get_tracer("weather-agent")
        for _ in range(runs):
            with tracer.start_as_current_span("weather-agent run"):
                assert run_openai_agent(stub.openai_url).final_text == FINAL_TEXT
    return [traces_from_json(line) for line in out.traces.read_text().splitlines()]


def semconv_traces(directory: Path) -> list[ExportTraceServiceRequest]:
    """One run instrumented with the GenAI semantic conventions (content on the spans:
    messages as JSON text, finish reasons an array, token counts integers)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
        env.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
        return agent_traces(directory, 1, "otel-openai-v2", service=SEMCONV)


def noise(count: int) -> ExportTraceServiceRequest:
    """Another service's spans, none of them a model call."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add()
    spans.resource.attributes.add(key="service.name", value=AnyValue(string_value="billing"))
    into = spans.scope_spans.add().spans
    for i in range(count):
        into.add(
            trace_id=(10**6 + i).to_bytes(16, "big"),
            span_id=(i + 1).to_bytes(8, "big"),
            name="GET /invoice",
            start_time_unix_nano=1_700_000_000 * 10**9 + i,
            end_time_unix_nano=1_700_000_000 * 10**9 + i + 1000,
        )
    return request


@pytest.fixture(scope="session")
def filled(tmp_path_factory) -> Iterator[tuple[ClickHouse, list[str]]]:
    """A ClickHouse holding two agent traces and another service's spans; the agent's
    trace ids, oldest first."""
    directory = tmp_path_factory.mktemp("clickhouse")
    requests = agent_traces(tmp_path_factory.mktemp("openinference"), runs=2)
    ids = list(dict.fromkeys(s.trace_id.hex() for r in requests for _, _, s in iter_spans(r)))
    everything = [*requests, *semconv_traces(tmp_path_factory.mktemp("semconv")), noise(600)]
    with clickhouse(directory) as server:
        server.insert("otel.otel_traces", (row for r in everything for row in exporter_rows(r)))
        yield server, ids


def otel_replay(*args: str, password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, CLICKHOUSE_USER=USER, CLICKHOUSE_PASSWORD=password)


def test_one_trace_replays_offline(filled, tmp_path):
    server, ids = filled
    out = tmp_path / "incident.json"
    done = otel_replay(
        "build", "--from", f"clickhouse+{server.url}/otel", "--trace-id", ids[1], "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    cassette = load(out)
    assert {i.trace_id for i in cassette.interactions} == {ids[1]}
    assert cassette.source["from"] == f"clickhouse at {server.url}/otel"
    replays_offline(out)


def test_many_traces_from_one_query(filled, tmp_path):
    server, ids = filled
    both = tmp_path / "both.json"
    args = ["--from", f"clickhouse+{server.url}/otel?table=otel_traces"]
    done = otel_replay("build", *args, "--trace-id", ids[0], "--trace-id", ids[1], "-o", str(both))
    assert done.returncode == 0, done.stderr
    assert len(load(both).interactions) == 4
    replays_offline(both, runs=2)

    folder = tmp_path / "incidents"
    done = otel_replay("build", *args, "--service", "weather-agent", "-o", f"{folder}/")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{i}.json" for i in ids)
    for cassette in folder.iterdir():
        replays_offline(cassette)


def test_a_long_pull_reports_progress_in_batches(filled, monkeypatch):
    server, _ids = filled
    monkeypatch.setenv("CLICKHOUSE_USER", USER)
    monkeypatch.setenv("CLICKHOUSE_PASSWORD", PASSWORD)
    pull = open_source(f"clickhouse+{server.url}", Selection(services=frozenset({"billing"})))
    assert pull.name == f"clickhouse at {server.url}"
    pull = open_source(f"clickhouse+{server.url}/otel", Selection(services=frozenset({"billing"})))
    seen: list[tuple[int, int]] = []
    sizes = [len(list(iter_spans(r))) for r in pull.requests(lambda *p: seen.append(p))]
    assert sizes == [512, 88]  # rows gathered into export requests as they stream
    assert [total for _, total in seen] == [0, 0]  # the size is not known ahead
    assert 0 < seen[0][0] < seen[1][0] == pull.read


def test_semantic_convention_attributes_come_back_from_text(filled, tmp_path):
    """The GenAI conventions' reader rebuilds the calls from attributes the exporter kept
    as text: messages as JSON, finish reasons as an array, token counts as numbers."""
    server, _ids = filled
    out = tmp_path / "semconv.json"
    done = otel_replay(
        "build", "--from", f"clickhouse+{server.url}/otel", "--service", SEMCONV, "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    calls = load(out).interactions
    assert [c.response.body["choices"][0]["finish_reason"] for c in calls] == ["tool_calls", "stop"]
    replays_offline(out)


def test_doctor_counts_the_calls_of_a_service(filled):
    server, _ids = filled
    done = otel_replay(
        "doctor", "--from", f"clickhouse+{server.url}/otel", "--service", "weather-agent"
    )
    assert done.returncode == 0, done.stderr
    assert "4 model calls" in done.stdout


def test_what_clickhouse_cannot_answer_isone_line(filled, tmp_path):
    server, ids = filled
    out = str(tmp_path / "x.json")
    at = f"clickhouse+{server.url}/otel"
    refused = one_line(
        otel_replay("build", "--from", at, "--trace-id", ids[0], "-o", out, password="wrong")
    )
    assert refused.startswith(
        f"otel-replay: clickhouse at {server.url}/otel: refused the credentials (HTTP 403"
    )
    assert "CLICKHOUSE_USER / CLICKHOUSE_PASSWORD" in refused and "wrong" not in refused
    missing = "f" * 32
    unknown = one_line(otel_replay("build", "--from", at, "--trace-id", missing, "-o", out))
    assert unknown == f"otel-replay: clickhouse at {server.url}/otel: no trace {missing}"
    no_table = one_line(
        otel_replay("build", "--from", at + "?table=spans", "--trace-id", ids[0], "-o", out)
    )
    assert "no such database or table (otel.spans)" in no_table
    server.query(
        "CREATE VIEW IF NOT EXISTS otel.failing AS SELECT * FROM otel.otel_traces"
        " WHERE throwIf(ServiceName = 'billing', 'disk on fire') = 0"
    )
    failing = f"{at}?table=failing"
    line = one_line(otel_replay("build", "--from", failing, "--service", "billing", "-o", out))
    assert line.startswith(f"otel-replay: clickhouse at {server.url}/otel: ")
    assert "Code: 395. DB::Exception: disk on fire" in line
    assert not Path(out).exists()


def test_the_query_selects_on_the_table_keys():
    selection = Selection(
        trace_ids=frozenset({"ab" * 16}),
        services=frozenset({"o'brien"}),
        since_ns=1_700_000_000_000_000_000,
        until_ns=1_700_000_100_000_000_000,
    )
    sql = query_text("otel", "otel_traces", selection, None, by_trace=True)
    assert f"TraceId IN ('{'ab' * 16}')" in sql
    assert "ServiceName IN ('o\\'brien')" in sql
    assert "Timestamp >= fromUnixTimestamp64Nano(1700000000000000000)" in sql
    assert "Timestamp < fromUnixTimestamp64Nano(1700000100000000000)" in sql
    assert sql.endswith("ORDER BY TraceId, Timestamp\nFORMAT JSONEachRow")
    assert "WHERE" not in query_text("otel", "otel_traces", Selection(), None, by_trace=False)


def _value(**kwargs) -> AnyValue:
    return AnyValue(**kwargs)


def test_attribute_values_come_back_from_the_exporter_text():
    request = ExportTraceServiceRequest()
    span = (
        request.resource_spans.add()
        .scope_spans.add()
        .spans.add(
            trace_id=b"\x01" * 16,
            span_id=b"\x02" * 8,
            name="chat",
            kind=3,
            start_time_unix_nano=5,
            end_time_unix_nano=9,
        )
    )
    values = {
        "text": _value(string_value="hello"),
        "json object": _value(string_value='{"a": [1, 2]}'),
        "int": _value(int_value=-42),
        "float": _value(double_value=0.25),
        "bool": _value(bool_value=True),
        "reasons": _value(array_value=ArrayValue(values=[_value(string_value="stop")])),
    }
    span.attributes.extend(KeyValue(key=k, value=v) for k, v in values.items())
    event = span.events.add(name="gen_ai.choice", time_unix_nano=7)
    event.attributes.add(key="index", value=_value(int_value=0))
    span.links.add(trace_id=b"\x03" * 16, span_id=b"\x04" * 8)
    span.status.code = 2
    (row,) = exporter_rows(request)
    row["StartNs"], row["EventTimes"] = 5, ["7"]  # as the query's columns answer them
    row["EventNames"], row["EventAttributes"] = row["Events.Name"], row["Events.Attributes"]
    row["LinkTraceIds"], row["LinkSpanIds"] = row["Links.TraceId"], row["Links.SpanId"]
    row["LinkStates"], row["LinkAttributes"] = row["Links.TraceState"], row["Links.Attributes"]
    back = span_of(row)
    assert attributes_to_dict(back.attributes) == attributes_to_dict(span.attributes)
    assert (back.kind, back.status.code, back.end_time_unix_nano) == (3, 2, 9)
    assert attributes_to_dict(back.events[0].attributes) == {"index": 0}
    assert back.events[0].time_unix_nano == 7
    assert back.links[0].span_id == b"\x04" * 8
    assert [coerce(t) for t in ("007", "1e3", "-", "[1, {}]", "True")] == [
        "007",
        1000.0,
        "-",
        "[1, {}]",
        "True",
    ]
