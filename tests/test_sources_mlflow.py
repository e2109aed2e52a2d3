"""``build --from mlflow+…`` against a real MLflow tracking server (pinned, its own venv):
an agent on the official ``openai`` SDK, instrumented by OpenInference and then by
OpenTelemetry's GenAI instrumentation, sends its spans to MLflow's OTLP endpoint while it
runs against the stub upstream; the cassette built from MLflow's trace API replays the
agent strictly with the upstream gone, though MLflow keeps the spans re-shaped (JSON text
attributes parsed, resource and scope dropped, attributes of its own added)."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator

import pytest
from backend_checks import METADATA, export_agent_run, one_line, replays_offline
from backend_checks import otel_replay as run_cli
from mlflow_server import create_experiment, mlflow, wait_for_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from otel_replay.cassette.model import load
from otel_replay.otlp.attributes import attributes_to_dict, python_to_any_value
from otel_replay.otlp.codec import iter_spans
from otel_replay.readers import Selection
from otel_replay.sources import open_source
from otel_replay.sources.mlflow import MlflowPull, restore_value
from otel_replay.sources.transport import basic_auth
from otel_replay.sources.where import parse_where

GENAI_RUN: list[str] = []
"""The trace id of the agent's second run, instrumented by the GenAI conventions."""


@pytest.fixture(scope="session")
def mlflow_trace(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    """MLflow holding two runs of the agent in an experiment of its own, each under a
    root span with OpenInference metadata (JSON text MLflow parses): one instrumented by
    OpenInference, then one by the GenAI conventions (OpenTelemetry's own
    instrumentation, content on the spans: JSON text too); its URL, the experiment and
    the first run's trace id (the second's in ``GENAI_RUN``)."""
    directory = tmp_path_factory.mktemp("mlflow")
    with mlflow(directory) as url:
        experiment = create_experiment(url, "weather-agent")

        def exporter() -> OTLPSpanExporter:  # one a run: a run's end shuts its exporter
            headers = {"x-mlflow-experiment-id": experiment}
            return OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers=headers)

        trace_id = export_agent_run(directory, exporter())
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
            env.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
            GENAI_RUN[:] = [export_agent_run(directory, exporter(), "otel-openai-v2")]
        wait_for_spans(url, trace_id, 3)
        wait_for_spans(url, GENAI_RUN[0], 3)
        yield url, experiment, trace_id


def otel_replay(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def test_a_trace_from_mlflow_replays_offline(mlflow_trace, tmp_path):
    url, experiment, trace_id = mlflow_trace
    out = tmp_path / "incident.json"
    address = f"mlflow+{url}/{experiment}"
    done = otel_replay("build", "--from", address, "--trace-id", trace_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    cassette = load(out)
    assert cassette.source["from"] == f"mlflow at {url}/{experiment}"
    assert [i.trace_id for i in cassette.interactions] == [trace_id, trace_id]
    replays_offline(out)
    (root,) = [s for s in cassette.source["spans"] if s["name"] == "weather-agent run"]
    assert root["attributes"] == {"openinference.span.kind": "AGENT"}  # MLflow's own left out


def test_a_genai_conventions_trace_from_mlflow_replays_offline(mlflow_trace, tmp_path):
    url, experiment, _trace_id = mlflow_trace
    (trace_id,) = GENAI_RUN
    out = tmp_path / "genai.json"
    address = f"mlflow+{url}/{experiment}"
    done = otel_replay("build", "--from", address, "--trace-id", trace_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    cassette = load(out)
    assert [(i.trace_id, i.source) for i in cassette.interactions] == [
        (trace_id, "genai-semconv")
    ] * 2  # gen_ai.input.messages, parsed by MLflow, read as the JSON text it was
    replays_offline(out)


def test_spans_come_back_as_the_agent_wrote_them(mlflow_trace):
    url, experiment, trace_id = mlflow_trace
    pull = open_source(f"mlflow+{url}/{experiment}", Selection(trace_ids=frozenset([trace_id])))
    (request,) = list(pull.requests())
    (resource,) = request.resource_spans
    assert attributes_to_dict(resource.resource.attributes) == {"service.name": "weather-agent"}
    spans = {s.name: s for _, _, s in iter_spans(request)}
    assert sorted(spans) == ["ChatCompletion", "weather-agent run"]
    assert {s.trace_id.hex() for _, _, s in iter_spans(request)} == {trace_id}
    root = attributes_to_dict(spans["weather-agent run"].attributes)
    assert json.loads(root["metadata"]) == METADATA  # parsed by MLflow, text again here
    call = attributes_to_dict(spans["ChatCompletion"].attributes)
    body = json.loads(call["input.value"])
    assert body["model"] == "gpt-4o-mini" and body["temperature"] == 0.2
    assert spans["ChatCompletion"].parent_span_id == spans["weather-agent run"].span_id
    assert pull.read > 0


def test_the_experiment_is_searched_by_time_and_service(mlflow_trace, tmp_path):
    url, experiment, _trace_id = mlflow_trace
    out = tmp_path / "found.json"
    address = f"mlflow+{url}/{experiment}"
    found = otel_replay(
        "build", "--from", address, "--since", "2020-01-01", "--service", "weather-agent",
        "-o", str(out),
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert len(load(out).interactions) == 4  # both runs
    replays_offline(out, runs=2)
    early = otel_replay("build", "--from", address, "--until", "2020-01-01", "-o", str(out))
    assert one_line(early) == (
        f"otel-replay: mlflow at {url}/{experiment}: no spans (within the time window given)"
    )
    other = otel_replay("build", "--from", address, "--service", "billing", "-o", str(out))
    assert one_line(other) == (
        f"otel-replay: mlflow at {url}/{experiment}: no spans (within service billing)"
    )


def test_doctor_reads_mlflow(mlflow_trace):
    url, experiment, trace_id = mlflow_trace
    done = otel_replay("doctor", "--from", f"mlflow+{url}/{experiment}", "--trace-id", trace_id)
    assert done.returncode == 0, done.stderr
    # MLflow keeps no instrumentation scope to name the source by
    assert done.stdout.splitlines() == [
        "(unnamed instrumentation): 2 model calls · 2 exactly · 0 semantically · 0 not replayable"
    ]


def test_what_mlflow_cannot_answer_is_one_line(mlflow_trace, tmp_path):
    url, experiment, _trace_id = mlflow_trace
    out = str(tmp_path / "x.json")
    missing = "e" * 32
    address = f"mlflow+{url}/{experiment}"
    line = one_line(otel_replay("build", "--from", address, "--trace-id", missing, "-o", out))
    assert line == f"otel-replay: mlflow at {url}/{experiment}: no trace {missing}"
    line = one_line(otel_replay("build", "--from", f"mlflow+{url}/424242", "-o", out))
    assert line == f"otel-replay: mlflow at {url}/424242: no experiment '424242'"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    line = one_line(otel_replay("build", "--from", f"mlflow+http://127.0.0.1:{closed}", "-o", out))
    assert line == (
        f"otel-replay: mlflow at http://127.0.0.1:{closed}: unreachable (connection refused)"
    )


@pytest.mark.parametrize(
    ("stored", "restored"),
    [
        ({"a": [1, {"b": None}]}, '{"a": [1, {"b": null}]}'),
        ([{"role": "user"}], '[{"role": "user"}]'),
        ([[1, 2]], "[[1, 2]]"),
        (["a", "b"], ["a", "b"]),  # an OTLP array of strings stays one
        ("gpt-4o-mini", "gpt-4o-mini"),
        (0.2, 0.2),
    ],
)
def test_what_mlflow_parsed_is_json_text_again(stored, restored):
    value: AnyValue = python_to_any_value(stored)
    restore_value(value)
    assert value == python_to_any_value(restored)


def test_credentials_are_read_as_mlflows_client_reads_them(monkeypatch):
    for name in ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    assert MlflowPull(parse_where("mlflow+http://h:1"), Selection()).backend.headers == {}
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ana")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "s3cret")
    pull = MlflowPull(parse_where("mlflow+http://h:1"), Selection())
    assert pull.backend.headers["Authorization"] == basic_auth("ana", "s3cret")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    pull = MlflowPull(parse_where("mlflow+http://h:1"), Selection())
    assert pull.backend.headers["Authorization"] == "Bearer tok"
