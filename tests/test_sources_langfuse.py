"""``build --from langfuse+…`` / ``doctor --from langfuse+…`` against Langfuse's public API
in its documented shape (``langfuse_api``: a fixture server answering as the OpenAPI
description Langfuse publishes, ``web/public/generated/api/openapi.yml`` at commit
62751446149b702b419a9292ddfc2280cdf74b8c, says; Langfuse's own server needs services that
do not run here). The weather agent's two calls, as Langfuse keeps them (generations with
model, parameters, input and output), become a cassette the agent (the official ``openai``
SDK) replays strictly with no upstream; what Langfuse lost is not compared, and
``doctor`` says so; a Langfuse that cannot answer is one line, exit 2."""

from __future__ import annotations

import json
import socket
import subprocess

from backend_checks import one_line, replays_offline
from backend_checks import otel_replay as run_cli
from backend_servers import SEEN, serving
from langfuse_api import (
    OBSERVATION_FIELDS,
    OBSERVATION_V2_FIELDS,
    OBSERVATION_V2_REQUIRED,
    PUBLIC_KEY,
    SECRET_KEY,
    TRACE_FIELDS,
    langfuse_app,
    langfuse_trace,
    langfuse_v4_app,
    observation_v2,
    quiet_trace,
)

from otel_replay.cassette.model import load
from otel_replay.core import genai
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.readers import Selection, read_span
from otel_replay.sources import langfuse as langfuse_source
from otel_replay.sources import open_source
from otel_replay.sources.langfuse import otlp_span

TRACE = langfuse_trace()["id"]
KEYS = {"LANGFUSE_PUBLIC_KEY": PUBLIC_KEY, "LANGFUSE_SECRET_KEY": SECRET_KEY}


def otel_replay(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, **{**KEYS, **env})


def test_a_trace_from_langfuse_replays_offline(tmp_path):
    out = tmp_path / "incident.json"
    with serving(langfuse_app()) as url:
        done = otel_replay(
            "build", "--from", f"langfuse+{url}", "--trace-id", TRACE, "-o", str(out)
        )
    assert done.returncode == 0, done.stderr
    cassette = load(out)
    assert cassette.source["from"] == f"langfuse at {url}"
    assert [i.trace_id for i in cassette.interactions] == [TRACE, TRACE]
    # the parameter the agent set is compared; those Langfuse's integration filled in are not
    assert [i.request.params for i in cassette.interactions] == [{"temperature": 0.2}] * 2
    replays_offline(out)


def test_doctor_says_what_langfuse_kept(tmp_path):
    with serving(langfuse_app()) as url:
        done = otel_replay("doctor", "--from", f"langfuse+{url}", "--trace-id", TRACE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "langfuse: 2 model calls · 0 exactly · 2 semantically · 0 not replayable",
        "  params compared by name, only those the trace recorded: temperature (2);"
        " others not compared",
        "  compared only in what the trace's form expresses: tool-definitions (2),"
        " tool-results (1)",
        "  1 tool call · 1 with arguments and result captured",
    ]


def test_traces_are_listed_page_by_page_within_the_window(tmp_path, monkeypatch):
    app = langfuse_app()
    monkeypatch.setattr(langfuse_source, "PAGE", "1")
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    out = tmp_path / "window.json"
    with serving(app) as url:
        pull = open_source(f"langfuse+{url}", Selection())
        assert pull.trace_ids() == [TRACE, quiet_trace()["id"]]  # oldest first
        assert [q["page"] for q in app[SEEN]] == ["1", "2"]
        assert {q["orderBy"] for q in app[SEEN]} == {"timestamp.asc"}
        done = otel_replay(
            "build", "--from", f"langfuse+{url}", "--since", "2026-11-30T09:00:00Z",
            "--until", "2026-11-30T10:30:00Z", "-o", str(out),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert app[SEEN][-1]["fromTimestamp"].startswith("2026-11-30T09:00:00")
        assert app[SEEN][-1]["toTimestamp"].startswith("2026-11-30T10:30:00")
        replays_offline(out)
        late = otel_replay(
            "build", "--from", f"langfuse+{url}", "--since", "2026-11-30T12:00:00Z", "-o", str(out)
        )
    assert one_line(late) == (
        f"otel-replay: langfuse at {url}: no spans (within the time window given)"
    )


def test_langfuse_v4_is_read_through_its_observations_api(tmp_path):
    """Langfuse v4 serves no trace API: a trace is its observations (``traceId``), and
    the traces of a window are those of the observations in it."""
    app = langfuse_v4_app()
    one, window = tmp_path / "one.json", tmp_path / "window.json"
    with serving(app) as url:
        done = otel_replay(
            "build", "--from", f"langfuse+{url}", "--trace-id", TRACE, "-o", str(one)
        )
        assert done.returncode == 0, done.stderr
        by_trace = [q for q in app[SEEN] if "traceId" in q]
        assert [q.get("cursor") is None for q in by_trace] == [True, False]  # two pages
        assert set(by_trace[0]["fields"].split(",")) >= {"io", "model", "usage", "metadata"}
        listed = otel_replay(
            "build", "--from", f"langfuse+{url}", "--since", "2026-11-30T09:00:00Z",
            "--until", "2026-11-30T10:30:00Z", "-o", str(window),
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        missing = otel_replay(
            "build", "--from", f"langfuse+{url}", "--trace-id", "e" * 32, "-o", str(one)
        )
    assert one_line(missing) == f"otel-replay: langfuse at {url}: no trace {'e' * 32}"
    for cassette in (one, window):
        assert [i.trace_id for i in load(cassette).interactions] == [TRACE, TRACE]
        replays_offline(cassette)


def test_what_langfuse_cannot_answer_is_one_line(tmp_path):
    out = str(tmp_path / "x.json")
    refused = (
        "refused the credentials (HTTP 401: "
        '{"message": "Invalid credentials. Confirm that you\'ve configured the correct host."}); '
        "set LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY"
    )
    with serving(langfuse_app()) as url:
        build = ("build", "--from", f"langfuse+{url}", "--trace-id", TRACE, "-o", out)
        no_keys = one_line(otel_replay(*build, LANGFUSE_PUBLIC_KEY="", LANGFUSE_SECRET_KEY=""))
        bad_key = one_line(otel_replay(*build, LANGFUSE_SECRET_KEY="sk-lf-wrong"))
        missing = "e" * 32
        unknown = one_line(
            otel_replay("build", "--from", f"langfuse+{url}", "--trace-id", missing, "-o", out)
        )
        service = one_line(
            otel_replay("build", "--from", f"langfuse+{url}", "--service", "x", "-o", out)
        )
        custom = one_line(
            otel_replay("build", "--from", f"langfuse+{url}", "--trace-id", "my-run-7", "-o", out)
        )
    assert no_keys == bad_key == f"otel-replay: langfuse at {url}: {refused}"
    assert unknown == f"otel-replay: langfuse at {url}: no trace {missing}"
    assert "Langfuse keeps no service.name" in service
    assert custom.startswith("otel-replay: --trace-id my-run-7: Langfuse traces are named here")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    line = one_line(
        otel_replay("build", "--from", f"langfuse+http://127.0.0.1:{closed}", "-o", out)
    )
    assert line == (
        f"otel-replay: langfuse at http://127.0.0.1:{closed}: unreachable (connection refused)"
    )


def test_a_generation_that_came_in_over_otlp_keeps_its_provider():
    """Langfuse's OTLP ingestion keeps the span's other attributes in
    ``metadata.attributes`` and its messages in the GenAI parts form, system instructions
    first as a message."""
    observation = {
        **langfuse_trace()["observations"][1],
        "model": "claude-haiku-4-5",
        "modelParameters": {"max_tokens": "1024", "temperature": "0.5"},
        "metadata": {
            "attributes": {"gen_ai.provider.name": "anthropic", "gen_ai.response.id": "msg_01"},
            "scope": {"name": "opentelemetry.instrumentation.anthropic"},
        },
        "input": [
            {"role": "system", "content": [{"type": "text", "content": "Be brief."}]},
            {"role": "user", "parts": [{"type": "text", "content": "Hi"}]},
        ],
        "output": [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Hello"}],
                "finish_reason": "end_turn",
            },
        ],
    }
    span = otlp_span(bytes.fromhex(TRACE), observation)
    attrs = attributes_to_dict(span.attributes)
    assert attrs[genai.PROVIDER_NAME] == "anthropic" and attrs[genai.RESPONSE_ID] == "msg_01"
    assert attrs["gen_ai.request.max_tokens"] == 1024 and attrs["gen_ai.request.temperature"] == 0.5
    exchange = read_span({}, span)
    assert exchange is not None
    request = exchange.request
    assert (exchange.provider, request.model) == ("anthropic", "claude-haiku-4-5")
    assert request.params == {"max_tokens": 1024, "temperature": 0.5}
    assert json.dumps(request.messages).count("Hi") == 1


def test_the_fixture_has_the_documented_shape():
    """Every property the OpenAPI description lists, and no other."""
    trace = langfuse_trace()
    assert sorted(trace) == sorted(TRACE_FIELDS)
    assert all(sorted(o) == sorted(OBSERVATION_FIELDS) for o in trace["observations"])
    every = {"basic", "time", "io", "metadata", "model", "usage"}
    for observation in trace["observations"]:
        answered = observation_v2(observation, every)
        assert set(OBSERVATION_V2_REQUIRED) <= set(answered) <= set(OBSERVATION_V2_FIELDS)
