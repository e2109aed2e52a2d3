"""``build --emit-test``: a production run becomes a pytest file that passes as written.

A small agent module (the official ``openai`` SDK, traced by OpenInference or by the
GenAI conventions) runs once as production would, against the stub upstream, its spans
exported to a file. ``build --emit-test --entry weather_agent:answer`` writes the cassette
and a test; pytest runs that test in a process of its own (the upstream stopped): it
passes, and fails with a replay miss once the agent's prompt changes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from incident_agents import AGENTS, FINAL_TEXT, PRODUCTION, QUESTION, SYSTEM
from schema_check import validate_cassette_file

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
TESTS = Path(__file__).resolve().parent
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"


def _env(project: Path, **extra: str) -> dict[str, str]:
    paths = [str(project), str(TESTS), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **extra}


@pytest.fixture(scope="module")
def productions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Per agent, a project holding ``weather_agent.py`` and the ``traces.jsonl`` of its
    production run."""
    projects = {}
    with run_stub() as stub:
        for kind, (source, instrumentation) in AGENTS.items():
            project = tmp_path_factory.mktemp(kind)
            (project / "weather_agent.py").write_text(source, encoding="utf-8")
            (project / "production.py").write_text(PRODUCTION, encoding="utf-8")
            env = _env(
                project,
                OPENAI_BASE_URL=stub.openai_url,
                OPENAI_API_KEY="sk-test-production-0000",
                OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental",
                OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="SPAN_ONLY",
            )
            run = [sys.executable, "production.py", instrumentation, QUESTION]
            done = subprocess.run(run, cwd=project, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == FINAL_TEXT
            projects[kind] = project
    yield projects


def _project(productions: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    project = Path(shutil.copytree(productions[kind], tmp_path / "project"))
    (project / "pytest.ini").write_text(INI, encoding="utf-8")
    return project


def _build(
    project: Path, *extra: str, output: str = "tests/cassettes/incident.json"
) -> subprocess.CompletedProcess[str]:
    command = [*CLI, "build", "traces.jsonl", "-o", output, *extra]
    return subprocess.run(command, cwd=project, env=_env(project), capture_output=True, text=True)


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def _pytest(project: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:randomly", "tests/test_incident.py"]
    return subprocess.run(
        command, cwd=project, env=_env(project), capture_output=True, text=True, timeout=300
    )


# the cassette where a bare name finds it, and elsewhere (named by its path from the test)
PLACES = {
    "openinference": ("tests/cassettes/incident.json", '"incident"'),
    "genai": ("fixtures/incident-7.json", "CASSETTE"),
}


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_an_emitted_test_passes_and_fails_on_a_changed_prompt(productions, kind, tmp_path):
    project = _project(productions, kind, tmp_path)
    entry = ["--emit-test", "tests/test_incident.py", "--entry", "weather_agent:answer"]
    output, named = PLACES[kind]

    built = _build(project, *entry, output=output)

    assert built.returncode == 0, built.stderr
    test_file = project / "tests" / "test_incident.py"
    text = test_file.read_text(encoding="utf-8")
    trace_id = load(project / output).interactions[0].trace_id
    assert f"# From trace {trace_id} in traces.jsonl" in text
    assert "from weather_agent import answer" in text
    assert f"PROMPT = {json.dumps(QUESTION)}" in text
    assert f"EXPECTED = {json.dumps(FINAL_TEXT)}" in text
    assert f'with otel_replay({named}, mode="strict"):' in text
    if named == "CASSETTE":
        assert 'CASSETTE = Path(__file__).parent / "../fixtures/incident-7.json"' in text
    validate_cassette_file(project / output)

    green = _pytest(project)
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 passed" in green.stdout
    assert "2 replayed · 0 live · 0 misses" in green.stdout

    agent = project / "weather_agent.py"
    agent.write_text(
        agent.read_text(encoding="utf-8").replace(SYSTEM, "You are a terse weather assistant."),
        encoding="utf-8",
    )
    red = _pytest(project)
    assert red.returncode == 1
    assert "replay miss: system prompt changed" in red.stdout
    assert "1 failed" in red.stdout


def test_a_root_without_its_input_writes_nothing_and_says_why(productions, tmp_path):
    project = _project(productions, "openinference", tmp_path)
    traces = project / "traces.jsonl"
    lines = []
    for line in traces.read_text(encoding="utf-8").splitlines():
        request = json.loads(line)
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["name"] == "answer":  # the entry point's span, content left out
                        span["attributes"] = []
        lines.append(json.dumps(request))
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")

    built = _build(project, "--emit-test", "tests/test_incident.py", "--entry", "agent:answer")

    assert built.returncode == 2
    assert "the root span 'answer' of trace" in built.stderr
    assert "has no usable input: it carries none of input.value," in built.stderr
    assert "@tracer.agent" in built.stderr
    assert _files(project / "tests") == []


def test_emit_test_needs_an_entry_point(productions, tmp_path):
    project = _project(productions, "genai", tmp_path)
    missing = _build(project, "--emit-test", "tests/test_incident.py")
    malformed = _build(project, "--emit-test", "tests/test_incident.py", "--entry", "agent.py")
    assert missing.returncode == malformed.returncode == 2
    assert "--emit-test needs --entry MODULE:FUNCTION" in missing.stderr
    assert "--entry 'agent.py': give MODULE:FUNCTION" in malformed.stderr
    assert _files(project / "tests") == []


def test_an_incident_in_a_tracing_backend_becomes_a_passing_test(productions, tmp_path):
    """The three commands of an incident: the production run's trace, sent to a real
    Jaeger v2 over OTLP, is built from it with ``--from`` and ``--emit-test``; the emitted
    test names the backend and the trace, and passes as written."""
    from go_servers import holds, jaeger

    project = _project(productions, "openinference", tmp_path)
    lines = (project / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    requests = [json.loads(line) for line in lines if line]
    spans = [
        span
        for request in requests
        for rs in request["resourceSpans"]
        for scope in rs.get("scopeSpans", ())
        for span in scope.get("spans", ())
    ]
    (trace_id,) = {span["traceId"] for span in spans}
    (project / "traces.jsonl").unlink()  # the backend is now the only place it is
    entry = ["--emit-test", "tests/test_incident.py", "--entry", "weather_agent:answer"]
    with jaeger(tmp_path / "jaeger") as server:
        for request in requests:
            _post_json(f"{server.otlp_http}/v1/traces", request)
        holds(server.url, trace_id, len(spans))
        url = server.url
        command = [*CLI, "build", "--from", f"jaeger+{url}", "--trace-id", trace_id]
        command += ["-o", "tests/cassettes/incident.json", *entry]
        built = subprocess.run(
            command, cwd=project, env=_env(project), capture_output=True, text=True
        )

    assert built.returncode == 0, built.stderr
    text = (project / "tests" / "test_incident.py").read_text(encoding="utf-8")
    assert f"# From trace {trace_id} in jaeger at {url}" in text
    green = _pytest(project)
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 passed" in green.stdout


def _post_json(url: str, doc: object) -> None:
    """An OTLP/HTTP export request, as JSON."""
    import urllib.request

    request = urllib.request.Request(
        url, data=json.dumps(doc).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200
