"""``build --from phoenix+…`` against a real Arize Phoenix: an OpenInference-instrumented
agent (the official ``openai`` SDK) sends its spans to Phoenix over OTLP while it runs
against the stub upstream; the cassette built from Phoenix's REST API replays the agent
strictly with the upstream gone, though Phoenix keeps the spans re-shaped (attributes
flattened, JSON text parsed, span kind moved, resource dropped)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from backend_checks import METADATA, export_agent_run, one_line, replays_offline
from backend_checks import otel_replay as run_cli
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from phoenix_server import phoenix, wait_for_spans

from otel_replay.cassette.model import load
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.codec import iter_spans
from otel_replay.readers import Selection
from otel_replay.sources import open_source
from otel_replay.sources import phoenix as phoenix_source
from otel_replay.sources.phoenix import otlp_span, restore_attributes


@pytest.fixture(scope="session")
def phoenix_trace(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """Phoenix holding one run of the agent (under a root span with OpenInference
    metadata, which Phoenix parses); its URL and the run's trace id."""
    directory = tmp_path_factory.mktemp("phoenix")
    with phoenix(directory) as url:
        trace_id = export_agent_run(directory, OTLPSpanExporter(endpoint=f"{url}/v1/traces"))
        wait_for_spans(url, "default", 3)
        yield url, trace_id


def otel_replay(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, PHOENIX_API_KEY="px-test-key")


def test_a_trace_from_phoenix_replays_offline(phoenix_trace, tmp_path):
    url, trace_id = phoenix_trace
    out = tmp_path / "incident.json"
    done = otel_replay("build", "--from", f"phoenix+{url}", "--trace-id", trace_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    cassette = load(out)
    assert cassette.source["from"] == f"phoenix at {url}"
    assert [i.trace_id for i in cassette.interactions] == [trace_id, trace_id]
    replays_offline(out)
    (root,) = [s for s in cassette.source["spans"] if s["name"] == "weather-agent run"]
    assert root["attributes"] == {"openinference.span.kind": "AGENT"}  # Phoenix moved it


def test_spans_come_back_page_by_page_as_the_agent_wrote_them(phoenix_trace, monkeypatch):
    url, trace_id = phoenix_trace
    monkeypatch.setattr(phoenix_source, "PAGE", "2")
    pull = open_source(f"phoenix+{url}", Selection(trace_ids=frozenset([trace_id])))
    pages = [[s for _, _, s in iter_spans(r)] for r in pull.requests()]
    assert [len(page) for page in pages] == [2, 1]  # oldest first, two a page
    spans = {s.name: s for page in pages for s in page}
    assert spans["weather-agent run"].start_time_unix_nano == pages[0][0].start_time_unix_nano
    root = attributes_to_dict(spans["weather-agent run"].attributes)
    assert json.loads(root["metadata"]) == METADATA  # parsed and flattened by Phoenix
    assert pull.read > 0


def test_a_project_and_a_time_window_select_in_phoenix(phoenix_trace, tmp_path):
    url, _trace_id = phoenix_trace
    out = tmp_path / "window.json"
    done = otel_replay(
        "build", "--from", f"phoenix+{url}/default", "--since", "2020-01-01", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert len(load(out).interactions) == 2
    empty = otel_replay(
        "build", "--from", f"phoenix+{url}/default", "--until", "2020-01-01", "-o", str(out)
    )
    assert (
        one_line(empty)
        == f"otel-replay: phoenix at {url}/default: no spans (within the time window given)"
    )


def test_what_phoenix_cannot_answer_isone_line(phoenix_trace, tmp_path):
    url, _trace_id = phoenix_trace
    out = str(tmp_path / "x.json")
    missing = "e" * 32
    line = one_line(
        otel_replay("build", "--from", f"phoenix+{url}", "--trace-id", missing, "-o", out)
    )
    assert line == f"otel-replay: phoenix at {url}: no trace {missing}"
    line = one_line(otel_replay("build", "--from", f"phoenix+{url}/nope", "-o", out))
    assert line == f"otel-replay: phoenix at {url}/nope: no project 'nope'"
    line = one_line(otel_replay("build", "--from", f"phoenix+{url}", "--service", "x", "-o", out))
    assert "Phoenix keeps no service.name" in line


def test_phoenix_reshaping_is_undone():
    flat = {
        "metadata.user.tier": "pro",
        "metadata.user.ids": [1, 2],
        "metadata.ticket": "INC-7",
        "llm.tools.0.tool.json_schema": '{"type": "function"}',
        "retrieval.documents.0.document.metadata.source": "wiki",
        "retrieval.documents.0.document.content": "text",
        "tool.parameters.properties.city.type": "string",
        "llm.token_count.prompt": 12,
    }
    restored = restore_attributes(flat)
    assert json.loads(restored["metadata"]) == METADATA
    assert json.loads(restored["retrieval.documents.0.document.metadata"]) == {"source": "wiki"}
    assert json.loads(restored["tool.parameters"]) == {"properties": {"city": {"type": "string"}}}
    assert restored["llm.tools.0.tool.json_schema"] == '{"type": "function"}'
    assert restored["llm.token_count.prompt"] == 12
    span = otlp_span(
        {
            "context": {"trace_id": "ab" * 16, "span_id": "cd" * 8},
            "parent_id": None,
            "name": "ChatCompletion",
            "span_kind": "LLM",
            "start_time": "2026-01-02T03:04:05.123456+00:00",
            "end_time": "2026-01-02T03:04:06+00:00",
            "status_code": "ERROR",
            "status_message": "boom",
            "attributes": {},
            "events": [
                {
                    "name": "exception",
                    "timestamp": "2026-01-02T03:04:05.5+00:00",
                    "attributes": {"a": 1},
                }
            ],
        }
    )
    assert span.trace_id.hex() == "ab" * 16 and span.parent_span_id == b""
    assert span.start_time_unix_nano == 1767323045123456000
    assert [(kv.key, kv.value.string_value) for kv in span.attributes] == [
        ("openinference.span.kind", "LLM")
    ]
    assert (span.status.code, span.status.message, span.events[0].name) == (2, "boom", "exception")
