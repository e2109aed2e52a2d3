"""OTLP codec: protobuf ⇄ Collector-style OTLP JSON, file reading, attribute helpers."""

from __future__ import annotations

import base64
import gzip
import json
import math
from pathlib import Path

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core.errors import TraceFormatError
from otel_replay.otlp import attributes as otlp_attributes
from otel_replay.otlp import codec
from otel_replay.otlp import files as otlp_files

TRACE_ID = bytes(range(1, 17))
SPAN_ID = bytes(range(1, 9))


def make_request(*names: str, trace_id: bytes = TRACE_ID) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend(otlp_attributes.dict_to_attributes({"service.name": "agent"}))
    ss = rs.scope_spans.add()
    ss.scope.name = "test"
    for i, name in enumerate(names, 1):
        ss.spans.add(
            trace_id=trace_id,
            span_id=bytes([i] * 8),
            parent_span_id=SPAN_ID if i > 1 else b"",
            name=name,
            kind=Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=1_700_000_000_000_000_000 + i,
            end_time_unix_nano=1_700_000_000_000_000_999 + i,
        )
    return request


def test_to_json_is_the_collector_file_exporter_form() -> None:
    request = make_request("chat gpt-4o", "tool")
    span = request.resource_spans[0].scope_spans[0].spans[1]
    span.status.code = Status.STATUS_CODE_ERROR
    span.links.add(trace_id=bytes(16 * [0xAB]), span_id=bytes(8 * [0xCD]))
    doc = codec.to_json(request)
    out = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert out[0]["traceId"] == TRACE_ID.hex()
    assert out[0]["spanId"] == "0101010101010101"
    assert "parentSpanId" not in out[0]
    assert out[1]["parentSpanId"] == SPAN_ID.hex()
    assert out[1]["kind"] == 3
    assert out[1]["status"] == {"code": 2}
    assert out[1]["startTimeUnixNano"] == "1700000000000000002"
    assert out[1]["links"] == [{"traceId": "ab" * 16, "spanId": "cd" * 8}]
    line = codec.json_line(request)
    assert "\n" not in line and json.loads(line) == doc


def test_logs_and_metrics_ids_are_hex() -> None:
    logs = ExportLogsServiceRequest()
    record = logs.resource_logs.add().scope_logs.add().log_records.add()
    record.trace_id, record.span_id = TRACE_ID, SPAN_ID
    record.body.string_value = "hello"
    doc = codec.to_json(logs)
    assert doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["traceId"] == TRACE_ID.hex()
    assert codec.logs_from_json(codec.json_line(logs)) == logs

    metrics = ExportMetricsServiceRequest()
    metric = metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="m")
    point = metric.sum.data_points.add(as_int=7)
    point.exemplars.add(trace_id=TRACE_ID, span_id=SPAN_ID, as_double=1.0)
    doc = codec.to_json(metrics)
    exemplar = doc["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["sum"]["dataPoints"][0][
        "exemplars"
    ][0]
    assert exemplar["spanId"] == SPAN_ID.hex()
    assert codec.metrics_from_json(doc) == metrics
    assert codec.count_metric_points(metrics) == 1


def test_from_json_tolerates_base64_ids_and_snake_case() -> None:
    request = make_request("a", "b")
    plain = json_format.MessageToDict(request, preserving_proto_field_name=True)
    assert plain["resource_spans"][0]["scope_spans"][0]["spans"][0]["trace_id"] == (
        base64.b64encode(TRACE_ID).decode()
    )
    assert codec.traces_from_json(plain) == request
    assert codec.traces_from_json(json.dumps(plain).encode()) == request


def test_from_json_does_not_modify_a_dict_argument() -> None:
    doc = codec.to_json(make_request("a"))
    before = json.dumps(doc)
    codec.traces_from_json(doc)
    assert json.dumps(doc) == before


def _one_span(span_json: str) -> bytes:
    return json.dumps(
        {"resourceSpans": [{"scopeSpans": [{"spans": [json.loads(span_json)]}]}]}
    ).encode()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"resourceSpans": 5}', "not an OTLP traces request"),
        (_one_span('{"traceId": "zz!!"}'), "neither hex nor base64"),
        (_one_span('{"startTimeUnixNano": "x"}'), "startTimeUnixNano"),
        (b"\xff\xfe", "invalid JSON"),
    ],
)
def test_bad_json_is_a_trace_format_error(data: bytes, problem: str) -> None:
    with pytest.raises(TraceFormatError, match=problem) as info:
        codec.traces_from_json(data, source="body")
    assert info.value.source == "body"


def test_bad_protobuf_is_a_trace_format_error() -> None:
    body = make_request("a").SerializeToString()
    with pytest.raises(TraceFormatError, match="invalid OTLP traces protobuf"):
        codec.traces_from_proto(body[:-5])


def test_partial_success_validation_drops_only_bad_spans() -> None:
    request = make_request("good", "short", "zero")
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].span_id = b"\x01\x02\x03"
    spans[2].trace_id = bytes(16)
    rejected, why = codec.drop_invalid_spans(request)
    assert rejected == 2
    assert "spanId is 3 bytes, not 8" in why and "short" in why
    assert [s.name for s in codec.iter_spans(request) for s in [s[2]]] == ["good"]


def test_iter_spans_yields_resource_and_scope() -> None:
    [(resource, scope, span)] = list(codec.iter_spans(make_request("only")))
    assert otlp_attributes.attributes_to_dict(resource.attributes) == {"service.name": "agent"}
    assert scope.name == "test" and span.name == "only"


def test_attribute_helpers_round_trip_every_value_type() -> None:
    value = {
        "s": "text",
        "b": True,
        "i": -(2**63),
        "d": 2.5,
        "bytes": b"\x00\xff",
        "list": [1, "two", [3.0], {"k": False}],
        "map": {"nested": {"deeper": "yes"}},
        "none": None,
    }
    attributes = otlp_attributes.dict_to_attributes(value)
    assert otlp_attributes.attributes_to_dict(attributes) == value
    huge = otlp_attributes.dict_to_attributes({"n": 2**70})[0]
    assert huge.value.string_value == str(2**70)


# --- property: protobuf -> OTLP JSON -> protobuf is lossless ------------------------------

texts = st.text(max_size=12)
scalars = st.one_of(
    texts.map(lambda s: AnyValue(string_value=s)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.integers(-(2**63), 2**63 - 1).map(lambda i: AnyValue(int_value=i)),
    st.floats(allow_nan=False).map(lambda f: AnyValue(double_value=f)),
    st.binary(max_size=8).map(lambda b: AnyValue(bytes_value=b)),
)
any_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda vs: AnyValue(array_value=ArrayValue(values=vs))),
        st.lists(st.tuples(texts, inner), max_size=3).map(
            lambda kvs: AnyValue(
                kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])
            )
        ),
    ),
    max_leaves=6,
)
attribute_lists = st.lists(st.builds(KeyValue, key=texts, value=any_values), max_size=4)
u64 = st.integers(0, 2**64 - 1)


@st.composite
def spans(draw: st.DrawFn) -> Span:
    span = Span(
        trace_id=draw(st.binary(min_size=16, max_size=16)),
        span_id=draw(st.binary(min_size=8, max_size=8)),
        parent_span_id=draw(st.sampled_from([b"", *[bytes([n] * 8) for n in (1, 255)]])),
        trace_state=draw(texts),
        flags=draw(st.integers(0, 2**32 - 1)),
        name=draw(texts),
        kind=draw(st.integers(0, 5)),
        start_time_unix_nano=draw(u64),
        end_time_unix_nano=draw(u64),
        attributes=draw(attribute_lists),
        dropped_attributes_count=draw(st.integers(0, 2**32 - 1)),
    )
    for _ in range(draw(st.integers(0, 2))):
        span.events.add(
            time_unix_nano=draw(u64), name=draw(texts), attributes=draw(attribute_lists)
        )
    for _ in range(draw(st.integers(0, 2))):
        span.links.add(
            trace_id=draw(st.binary(min_size=16, max_size=16)),
            span_id=draw(st.binary(min_size=8, max_size=8)),
            trace_state=draw(texts),
            attributes=draw(attribute_lists),
        )
    span.status.code = draw(st.integers(0, 2))
    span.status.message = draw(texts)
    return span


@settings(max_examples=50, deadline=None)
@given(st.lists(spans(), min_size=1, max_size=3), attribute_lists)
def test_protobuf_json_protobuf_is_lossless(span_list: list[Span], resource: list[KeyValue]):
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.extend(resource)
    rs.scope_spans.add().spans.extend(span_list)
    back = codec.traces_from_json(codec.json_line(request))
    assert back == request
    assert back.SerializeToString(deterministic=True) == request.SerializeToString(
        deterministic=True
    )


def test_infinite_doubles_round_trip() -> None:
    attributes = otlp_attributes.dict_to_attributes({"inf": math.inf, "ninf": -math.inf})
    request = make_request("x")
    request.resource_spans[0].scope_spans[0].spans[0].attributes.extend(attributes)
    assert codec.traces_from_json(codec.json_line(request)) == request


# --- files -------------------------------------------------------------------------------


def write_lines(path: Path, requests: list[ExportTraceServiceRequest]) -> None:
    path.write_text("".join(codec.json_line(r) + "\n" for r in requests), encoding="utf-8")


def names(requests: object) -> list[str]:
    return [span.name for r in requests for _, _, span in codec.iter_spans(r)]  # type: ignore[attr-defined]


def test_reads_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(path, [make_request("a"), make_request("b", "c")])
    assert names(otlp_files.iter_trace_requests(path)) == ["a", "b", "c"]


def test_reads_a_pretty_printed_document(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(codec.to_json(make_request("a", "b")), indent=2))
    assert names(otlp_files.iter_trace_requests(path)) == ["a", "b"]


def test_reads_protobuf_binary(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    path.write_bytes(make_request("a", "b").SerializeToString())
    assert names(otlp_files.iter_trace_requests(path)) == ["a", "b"]


@pytest.mark.parametrize("kind", ["lines", "pretty", "proto"])
def test_reads_gzip_by_magic_bytes(tmp_path: Path, kind: str) -> None:
    request = make_request("zipped")
    if kind == "lines":
        data = (codec.json_line(request) + "\n").encode()
    elif kind == "pretty":
        data = json.dumps(codec.to_json(request), indent=1).encode()
    else:
        data = request.SerializeToString()
    path = tmp_path / "traces.gz"
    path.write_bytes(gzip.compress(data))
    assert names(otlp_files.iter_trace_requests(path)) == ["zipped"]
    plain_name = tmp_path / "traces"
    plain_name.write_bytes(gzip.compress(data))
    assert names(otlp_files.iter_trace_requests(plain_name)) == ["zipped"]


def test_truncated_last_line_goes_to_on_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_lines(path, [make_request("a"), make_request("b")])
    with path.open("a") as f:
        f.write(codec.json_line(make_request("cut"))[:40])
    errors: list[TraceFormatError] = []
    assert names(otlp_files.iter_trace_requests(path, on_error=errors.append)) == ["a", "b"]
    [error] = errors
    assert error.source == f"{path}:3"
    with pytest.raises(TraceFormatError, match=r"t\.jsonl:3"):
        list(otlp_files.iter_trace_requests(path))


def test_bad_middle_line_is_reported_and_reading_continues(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = [codec.json_line(make_request(n)) for n in ("a", "b")]
    path.write_text(f"{good[0]}\n\n{{oops\n{good[1]}\n")
    errors: list[TraceFormatError] = []
    assert names(otlp_files.iter_trace_requests(path, on_error=errors.append)) == ["a", "b"]
    assert [e.source for e in errors] == [f"{path}:3"]


def test_bad_first_line_of_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"resourceSpans": [\n' + codec.json_line(make_request("b")) + "\n")
    errors: list[TraceFormatError] = []
    assert names(otlp_files.iter_trace_requests(path, on_error=errors.append)) == ["b"]
    assert [e.source for e in errors] == [f"{path}:1"]


def test_corrupt_pretty_printed_document_is_one_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = json.dumps(codec.to_json(make_request("a")), indent=2).splitlines()
    text[3] = text[3] + " oops"
    path.write_text("\n".join(text))
    errors: list[TraceFormatError] = []
    assert list(otlp_files.iter_trace_requests(path, on_error=errors.append)) == []
    assert [e.source for e in errors] == [f"{path}:4"]


def test_truncated_gzip_yields_complete_lines_then_reports(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    lines = "".join(codec.json_line(make_request(f"s{i}")) + "\n" for i in range(200))
    data = gzip.compress(lines.encode())
    path.write_bytes(data[: len(data) - 20])
    errors: list[TraceFormatError] = []
    got = names(otlp_files.iter_trace_requests(path, on_error=errors.append))
    assert got == [f"s{i}" for i in range(len(got))] and len(got) > 100
    assert errors and "cannot read" in str(errors[-1])


def test_other_signals_lines_are_skipped_and_logs_are_read(tmp_path: Path) -> None:
    logs = ExportLogsServiceRequest()
    logs.resource_logs.add().scope_logs.add().log_records.add().body.string_value = "hi"
    path = tmp_path / "mixed.jsonl"
    path.write_text(codec.json_line(make_request("a")) + "\n" + codec.json_line(logs) + "\n")
    assert names(otlp_files.iter_trace_requests(path)) == ["a"]
    assert list(otlp_files.iter_log_requests(path)) == [logs]


def test_missing_file_is_a_trace_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="cannot read"):
        list(otlp_files.iter_trace_requests(tmp_path / "absent.jsonl"))


def test_corrupt_protobuf_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    path.write_bytes(make_request("a").SerializeToString()[:-4])
    errors: list[TraceFormatError] = []
    assert list(otlp_files.iter_trace_requests(path, on_error=errors.append)) == []
    assert errors[0].source == str(path)


def _id_strategy(size: int) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.just(b""),
        st.just(bytes(size)),
        st.binary(min_size=size, max_size=size),
        st.binary(min_size=1, max_size=size + 2),
    )


def _id_ok(value: bytes, size: int, required: bool) -> bool:
    if not value:
        return not required
    return len(value) == size and any(value)


@settings(max_examples=100, deadline=None)
@given(
    _id_strategy(16),
    _id_strategy(8),
    _id_strategy(8),
    st.lists(st.tuples(_id_strategy(16), _id_strategy(8)), max_size=2),
)
def test_a_span_is_rejected_exactly_when_an_id_is_malformed(
    trace: bytes, own: bytes, parent: bytes, links: list[tuple[bytes, bytes]]
) -> None:
    """The check that passes a plainly valid span at once agrees with the rules the
    rejection words: ids of 16 and 8 bytes, none all zeros, a parent's and the links' too."""
    span = Span(trace_id=trace, span_id=own, parent_span_id=parent, name="s")
    for link_trace, link_span in links:
        span.links.add(trace_id=link_trace, span_id=link_span)
    valid = (
        _id_ok(trace, 16, True)
        and _id_ok(own, 8, True)
        and _id_ok(parent, 8, False)
        and all(_id_ok(t, 16, True) and _id_ok(s, 8, True) for t, s in links)
    )
    assert (codec.span_problem(span) is None) is valid
