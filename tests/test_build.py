"""``build``: trace files → cassette — selection, rotation, gzip, bad lines, dedupe,
progress, redaction and times."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from test_readers import FINAL_TEXT, QUESTION, make_span, traces

from otel_replay.cassette.model import dump, load
from otel_replay.core.errors import ConfigError, TraceFormatError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.otlp.codec import json_line
from otel_replay.pipeline.build import build, expand_paths, parse_time
from otel_replay.spans.encode import exchange_to_span

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736"


def call_span(
    text: str,
    *,
    trace: str = TRACE_A,
    span_id: str,
    start: int,
    parent: str = "",
    model: str = "gpt-4o-mini",
    name: str = "chat gpt-4o-mini",
):
    """A semconv chat span asking ``text`` and answering ``FINAL_TEXT``."""
    span = make_span(
        {
            "gen_ai.provider.name": "openai",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.input.messages": (
                f'[{{"role":"user","parts":[{{"type":"text","content":"{text}"}}]}}]'
            ),
            "gen_ai.output.messages": (
                f'[{{"role":"assistant","parts":[{{"type":"text","content":"{FINAL_TEXT}"}}],'
                '"finish_reason":"stop"}]'
            ),
        },
        name=name,
        span_id=span_id,
        parent=parent,
        start=start,
        end=start + 1_000,
    )
    span.trace_id = bytes.fromhex(trace)
    return span


def write_lines(path: Path, *requests, opener=open) -> Path:
    with opener(path, "wt", encoding="utf-8") as handle:
        for request in requests:
            handle.write(json_line(request) + "\n")
    return path


def texts(cassette) -> list[str]:
    return [ex.request.messages[0]["parts"][0]["content"] for ex in cassette.interactions]


def test_build_orders_by_start_time_and_records_the_source(tmp_path):
    path = write_lines(
        tmp_path / "traces.jsonl",
        traces(call_span("second", span_id="2" * 16, start=5_000)),
        traces(call_span("first", span_id="1" * 16, start=1_000)),
    )
    cassette = build([path])
    assert texts(cassette) == ["first", "second"]
    assert cassette.source["traces"] == [str(path)]
    assert cassette.source["command"] == "build" and "built_at" in cassette.source
    out = tmp_path / "cassette.json"
    dump(cassette, out)
    assert texts(load(out)) == ["first", "second"]


def test_selection_by_trace_service_and_time(tmp_path):
    path = write_lines(
        tmp_path / "traces.jsonl",
        traces(call_span("a", span_id="1" * 16, start=1_000), service="web"),
        traces(call_span("b", trace=TRACE_B, span_id="2" * 16, start=2_000), service="web"),
        traces(call_span("c", span_id="3" * 16, start=3_000), service="worker"),
    )
    assert texts(build([path], trace_ids=[TRACE_B.upper()])) == ["b"]
    assert texts(build([path], services=["worker"])) == ["c"]
    assert texts(build([path], since_ns=2_000, until_ns=3_000)) == ["b"]
    assert texts(build([path], services=["web"], trace_ids=[TRACE_A])) == ["a"]
    assert build([path], trace_ids=[TRACE_B]).source["selection"] == {"trace_ids": [TRACE_B]}


def test_rotated_and_gzip_files_are_read_oldest_first(tmp_path):
    current = write_lines(
        tmp_path / "traces.jsonl", traces(call_span("c", span_id="3" * 16, start=3))
    )
    write_lines(
        tmp_path / "traces-2024-05-01T10-00-00.000.jsonl.gz",
        traces(call_span("a", span_id="1" * 16, start=1)),
        opener=gzip.open,
    )
    write_lines(
        tmp_path / "traces-2024-05-01T11-00-00.000.jsonl",
        traces(call_span("b", span_id="2" * 16, start=2)),
    )
    (tmp_path / "other.jsonl").write_text("not read\n")
    files = expand_paths([current])
    assert [f.name for f in files] == [
        "traces-2024-05-01T10-00-00.000.jsonl.gz",
        "traces-2024-05-01T11-00-00.000.jsonl",
        "traces.jsonl",
    ]
    assert texts(build([current])) == ["a", "b", "c"]


def test_bad_lines_are_reported_and_skipped(tmp_path):
    path = tmp_path / "traces.jsonl"
    good = [
        json_line(traces(call_span(t, span_id=f"{i}" * 16, start=i)))
        for i, t in ((1, "a"), (2, "b"))
    ]
    path.write_text(good[0] + "\n{not json\n" + good[1] + "\n")
    errors: list[TraceFormatError] = []
    cassette = build([path], on_error=errors.append)
    assert texts(cassette) == ["a", "b"]
    assert len(errors) == 1 and f"{path}:2" in str(errors[0])
    assert cassette.source["skipped"] == 1


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no such trace file"):
        build([tmp_path / "absent.jsonl"])


def test_progress_reports_bytes_up_to_the_total(tmp_path):
    path = write_lines(
        tmp_path / "traces.jsonl",
        *(traces(call_span(str(i), span_id=f"{i:016x}", start=i)) for i in range(1, 6)),
    )
    seen: list[tuple[int, int]] = []
    build([path], progress=lambda done, total: seen.append((done, total)))
    size = path.stat().st_size
    assert seen[-1] == (size, size)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def own_span(*, span_id: str, parent: str, start: int):
    """The gateway's own span for the same call, a child of the agent's HTTP span."""
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}
    from otel_replay import providers

    exchange = Exchange(
        provider="openai",
        operation="chat",
        request=providers.get("openai").canonical("/v1/chat/completions", body),
        response=Response(
            status=200,
            headers={"content-type": "application/json"},
            body={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": FINAL_TEXT},
                        "finish_reason": "stop",
                    }
                ],
            },
        ),
        raw_request=body,
        start_ns=start,
        end_ns=start + 100,
        trace_id=TRACE_A,
        span_id=span_id,
        parent_span_id=parent,
    )
    return exchange_to_span(exchange)


def test_one_call_seen_by_three_spans_becomes_one_interaction(tmp_path):
    instrumentation = call_span(QUESTION, span_id="a" * 16, start=1_000)
    http = make_span(
        {"http.request.method": "POST"},
        name="POST",
        span_id="b" * 16,
        parent="a" * 16,
        start=1_100,
        end=1_900,
    )
    own = own_span(span_id="c" * 16, parent="b" * 16, start=1_200)
    later = call_span("again", span_id="d" * 16, start=9_000)
    # The gateway's span arrives first (another process), the agent's spans later.
    path = write_lines(
        tmp_path / "traces.jsonl",
        traces(own, service="otel-replay"),
        traces(http, instrumentation, later),
    )
    cassette = build([path])
    assert [ex.source for ex in cassette.interactions] == ["otel-replay", "genai-semconv"]
    assert cassette.interactions[0].raw_request is not None


def test_parallel_calls_of_one_instrumentation_stay_apart(tmp_path):
    path = write_lines(
        tmp_path / "traces.jsonl",
        traces(
            call_span("left", span_id="1" * 16, start=1_000),
            call_span("right", span_id="2" * 16, start=1_010),
        ),
    )
    assert texts(build([path])) == ["left", "right"]


def flat_span(text: str, *, trace: str, span_id: str, start: int):
    """The same kind of call as OpenLLMetry's older releases record it."""
    span = make_span(
        {
            "gen_ai.system": "openai",
            "llm.request.type": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": text,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": FINAL_TEXT,
        },
        name="openai.chat",
        span_id=span_id,
        start=start,
        end=start + 1_000,
    )
    span.trace_id = bytes.fromhex(trace)
    return span


def test_overlapping_spans_of_two_instrumentations_without_links_merge(tmp_path):
    first = call_span(QUESTION, span_id="1" * 16, start=1_000)
    second = flat_span(QUESTION, trace=TRACE_B, span_id="2" * 16, start=1_050)
    other = flat_span("other question", trace=TRACE_B, span_id="3" * 16, start=1_020)
    path = write_lines(tmp_path / "traces.jsonl", traces(first, second, other))
    assert sorted(texts(build([path]))) == sorted([QUESTION, "other question"])


def test_secrets_in_trace_content_are_redacted(tmp_path):
    key = "sk-proj-" + "A1b2C3d4" * 6
    path = write_lines(
        tmp_path / "traces.jsonl", traces(call_span(f"my key is {key}", span_id="1" * 16, start=1))
    )
    out = tmp_path / "cassette.json"
    dump(build([path]), out)
    text = out.read_text()
    assert key not in text and "[REDACTED:openai-key]" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00Z", 1_714_564_800 * 10**9),
        ("2024-05-01T14:00:00+02:00", 1_714_564_800 * 10**9),
        ("2024-05-01T12:00:00.5", 1_714_564_800 * 10**9 + 500_000_000),
        ("2024-05-01", 1_714_521_600 * 10**9),
        ("1714564800", 1_714_564_800 * 10**9),
        ("1714564800000", 1_714_564_800 * 10**9),
        ("1714564800000000000", 1_714_564_800 * 10**9),
    ],
)
def test_parse_time(text, expected):
    assert parse_time(text) == expected


def test_parse_time_rejects_nonsense():
    with pytest.raises(ConfigError, match="ISO 8601"):
        parse_time("yesterday")


def test_the_chat_request_view_is_canonical(tmp_path):
    path = write_lines(tmp_path / "t.jsonl", traces(call_span("hi", span_id="1" * 16, start=1)))
    [ex] = build([path]).interactions
    assert ex.request == CanonicalRequest(
        endpoint="/v1/chat/completions",
        model="gpt-4o-mini",
        messages=[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        known=frozenset({"endpoint", "model", "system", "messages"}),
    )


def test_collector_config_writes_what_build_reads():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((Path(__file__).parents[1] / "collector" / "config.yaml").read_text())
    pipelines = config["service"]["pipelines"]
    for name, pipeline in pipelines.items():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline[kind]) <= set(config[kind]), (name, kind)
    files = {
        name: config["exporters"][pipeline["exporters"][0]] for name, pipeline in pipelines.items()
    }
    assert files["traces"]["path"].endswith("/traces.jsonl")
    assert files["logs"]["path"].endswith("/logs.jsonl")
    assert all(f["format"] == "json" and "rotation" in f for f in files.values())
