"""``build --from jaeger+…`` against a real Jaeger v2 (``make go`` builds it from its pinned
module; memory storage, ``tests/jaeger/config.yaml``): an instrumented agent's telemetry
reaches Jaeger through a real Collector running ``collector/forward.yaml``, and the trace
Jaeger's ``api/v3`` answers becomes a cassette the agent replays strictly with its upstream
gone; what Jaeger cannot answer is one line, exit 2. One Jaeger serves the whole session.
The faults it cannot be made to show (refused credentials, an answer cut off) are in
``test_sources_otlp.py``, against a server answering in its shape."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from backend_checks import agent_runs, one_line, otel_replay, replays_offline
from go_servers import holds, jaeger, otelcol

from otel_replay.cassette.model import load


@pytest.fixture(scope="session")
def stored(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A Jaeger holding one agent run's trace: its query URL and the trace id."""
    directory = tmp_path_factory.mktemp("jaeger")
    with jaeger(directory / "jaeger") as server:
        forward = {"OTEL_REPLAY_OTLP_ENDPOINT": server.otlp_http}
        with otelcol("forward.yaml", directory / "otelcol", **forward) as collector:
            (trace_id,) = agent_runs(collector.http, 1)
        holds(server.url, trace_id, spans=3)  # the agent's root span and two model calls
        yield server.url, trace_id


def test_a_trace_from_jaeger_replays_offline(stored, tmp_path):
    url, trace_id = stored
    out = tmp_path / "incident.json"
    done = otel_replay("build", "--from", f"jaeger+{url}", "--trace-id", trace_id, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "2 interactions" in done.stderr
    cassette = load(out)
    assert cassette.source["from"] == f"jaeger at {url}"
    assert {i.trace_id for i in cassette.interactions} == {trace_id}
    replays_offline(out)


def test_jaeger_finds_traces_by_service_and_time(stored, tmp_path):
    url, trace_id = stored
    folder = tmp_path / "found"
    done = otel_replay(
        "build", "--from", f"jaeger+{url}", "--service", "weather-agent",
        "--since", "2020-01-01T00:00:00Z", "--until", "2100-01-01", "-o", f"{folder}/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (cassette,) = folder.iterdir()  # the agent's trace; the span of no model call makes none
    assert cassette.name == f"{trace_id}.json"
    replays_offline(cassette)


def test_doctor_reads_from_jaeger(stored):
    url, trace_id = stored
    done = otel_replay("doctor", "--from", f"jaeger+{url}", "--trace-id", trace_id)
    assert done.returncode == 0, done.stderr
    assert "openinference.instrumentation.openai" in done.stdout
    assert "2 model calls" in done.stdout


def test_what_jaeger_cannot_answer_is_one_line_exit_2(stored, tmp_path):
    url, _trace_id = stored
    out = str(tmp_path / "x.json")
    missing = "0" * 31 + "1"
    done = otel_replay("build", "--from", f"jaeger+{url}", "--trace-id", missing, "-o", out)
    assert one_line(done) == f"otel-replay: jaeger at {url}: no trace {missing}"
    done = otel_replay(
        "build", "--from", f"jaeger+{url}", "--service", "nobody",
        "--since", "2020-01-01T00:00:00Z", "-o", out,
    )  # fmt: skip
    assert one_line(done) == (
        f"otel-replay: jaeger at {url}: no spans (within service nobody and the time window given)"
    )
    assert not (tmp_path / "x.json").exists()
