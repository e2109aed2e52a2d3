"""The conformance suite's shared part: agents on real frameworks, and the round trip.

Each agent is an ordinary agent on its framework: one turn with a tool loop (the model
calls ``get_weather``, the framework runs it, the model answers) and one streamed turn
(again with the tool). ``round_trip`` runs an agent against the stub upstream with the
framework's instrumentation exporting to a Collector-format file, ``build`` makes a
cassette of that file, and the same agent runs again strictly from the cassette with no
upstream: both runs must give the same result. ``through_gateway`` records the agent
through a gateway, its instrumentation exporting to the gateway itself, and replays it
strictly from that cassette, telemetry on: every call replayed, none claimed to have
bypassed the gateway.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from schema_check import validate_cassette_file
from third_party_agents import Traced, traced

from otel_replay.cassette.model import Cassette, load
from otel_replay.core.exchange import JSON
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.pipeline.build import build_file, survey
from otel_replay.readers.entry import EntrySpans
from otel_replay.reports.run import Summary
from otel_replay.testing.stub import run_stub

SYSTEM = "You are a weather assistant. Use the tool."
QUESTIONS = ("What is the weather in Paris?", "And in Rome?")
TOOL_RESULT = "sunny, 21 C"
MODEL = "gpt-4o-mini"
FINAL_TEXT = f"stub reply to: {TOOL_RESULT}"
"""What the stub upstream answers once the tool result is in the conversation."""
CLI = [sys.executable, "-m", "otel_replay.frontends.cli"]


@dataclass
class Outcome:
    """What an agent did: the tool calls it ran (name, arguments) and its final answers,
    one per turn (the first turn plain, the second streamed)."""

    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)


Telemetry = Path | str | None
"""Where an agent's telemetry goes: a folder (as ``traces.jsonl`` / ``logs.jsonl``), an
OTLP/HTTP base URL (a gateway's ``OTEL_EXPORTER_OTLP_ENDPOINT``), or nowhere (None)."""
Agent = Callable[[str, Telemetry], Outcome]
"""An agent run: the OpenAI base URL to use, and where its telemetry goes."""


def instrumented(
    run: Callable[[str, Traced | None], Outcome],
    instrumentors: Sequence[Callable[[], Any]] = (),
) -> Agent:
    """An agent run in this process, with ``instrumentors`` on while telemetry is wanted."""

    def agent(base_url: str, telemetry: Telemetry) -> Outcome:
        if telemetry is None:
            return run(base_url, None)
        if isinstance(telemetry, str):
            with traced(Path(), instrumentors, otlp=telemetry) as out:
                return run(base_url, out)
        with traced(telemetry, instrumentors) as out:
            return run(base_url, out)

    return agent


def instrumentors(table: dict[str, tuple[str, str]], variant: str) -> list[Callable[[], Any]]:
    """The instrumentor class ``table[variant]`` names (module, class), imported with its
    own import-time deprecation warnings silenced (they are not ours to fix)."""
    module_name, class_name = table[variant]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [getattr(importlib.import_module(module_name), class_name)]


def worker_fixture(app: str, env: dict[str, str] | None = None, python: Path | None = None) -> Any:
    """A module-scoped fixture: the worker process running ``app``'s agents, with ``env``
    added to its environment, under ``python`` (another venv's) when given."""

    @pytest.fixture(scope="module")
    def worker() -> Iterator[Worker]:
        running = Worker(app, env, python)
        yield running
        running.close()

    return worker


def framework_python(name: str) -> Path:
    """The Python of a framework's own venv, ``.venv/NAME`` (``make frameworks``), for one
    whose pins the project's test dependencies exclude."""
    python = Path(sys.prefix) / name / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"{name} is not installed at {python}: run `make frameworks`")
    return python


class Worker:
    """Agents run in one child process per framework (``framework_worker.py``): for a
    framework whose package name a test helper module shadows here, or whose global
    patches should not outlive its tests. ``agent(variant)`` is an Agent run there."""

    def __init__(
        self, app: str, env: dict[str, str] | None = None, python: Path | None = None
    ) -> None:
        worker = str(Path(__file__).with_name("framework_worker.py"))
        self.process = subprocess.Popen(
            [str(python or sys.executable), worker, app],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )

    def agent(self, variant: str) -> Agent:
        def run(base_url: str, telemetry: Telemetry) -> Outcome:
            assert self.process.stdin is not None and self.process.stdout is not None
            directory = str(telemetry) if isinstance(telemetry, Path) else None
            otlp = telemetry if isinstance(telemetry, str) else None
            ask = {"base_url": base_url, "directory": directory, "otlp": otlp}
            self.process.stdin.write(json.dumps({**ask, "variant": variant}) + "\n")
            self.process.stdin.flush()
            answer = json.loads(self.process.stdout.readline() or "{}")
            assert "answers" in answer, answer.get("error", "the worker stopped")
            calls = [(name, args) for name, args in answer["tool_calls"]]
            return Outcome(calls, answer["answers"])

        return run

    def close(self) -> None:
        """End the worker (end of its input), killing it if it does not stop."""
        if self.process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def weather(outcome: Outcome, city: str) -> str:
    """The tool every agent offers; it notes its call."""
    outcome.tool_calls.append(("get_weather", {"city": city}))
    return TOOL_RESULT


@dataclass
class Trip:
    """A round trip's evidence: what production did, the built cassette, the replay."""

    production: Outcome
    replayed: Outcome
    cassette: Cassette
    traces: list[Path]
    build_stderr: str
    replayed_calls: int
    misses: list[str]


def round_trip(
    tmp_path: Path,
    agent: Agent,
    summary: str,
    spans: Iterable[str],
    *,
    calls: int = 4,
    entries: bool = False,
) -> Trip:
    """Production run (stub upstream, instrumented, spans to a file), ``otel-replay build``
    on the file, then a strict replay of the same agent from the cassette with the
    upstream gone. Asserts the build (its summary names the source and counts ``calls``
    model calls, replayable as ``summary`` says), that the cassette is valid and carries
    the agent's other ``spans`` (by name) of the calls' traces, and the replay; with
    ``entries``, that each run's entry (what ``build --emit-test`` calls the agent with
    and expects) is its question and final answer. Returns the evidence."""
    with run_stub() as stub:
        production = agent(stub.openai_url, tmp_path)
    assert production.answers == [FINAL_TEXT, FINAL_TEXT], production
    assert production.tool_calls == [("get_weather", {"city": q}) for q in QUESTIONS], production
    traces = [p for p in (tmp_path / "traces.jsonl", tmp_path / "logs.jsonl") if p.exists()]
    cassette_path = tmp_path / "fixture.json"
    built = build_cli(traces, cassette_path)
    assert built.returncode == 0, built.stderr
    assert f"otel-replay build: {summary}\n" in built.stderr, built.stderr
    doctor_says = survey(traces).lines()  # what `otel-replay doctor` prints
    assert [f"otel-replay build: {line}" for line in doctor_says] == [
        line for line in built.stderr.splitlines() if not line.endswith(cassette_path.name)
    ]
    validate_cassette_file(cassette_path)
    cassette = load(cassette_path)
    if entries:
        assert run_entries(traces, tmp_path) == {q: FINAL_TEXT for q in QUESTIONS}
    assert len(cassette.interactions) == calls, built.stderr
    kept = cassette.source.get("spans", [])
    assert {s["name"] for s in kept} == set(spans), kept
    assert {s["trace_id"] for s in kept} <= {i.trace_id for i in cassette.interactions}, kept
    config = GatewayConfig(
        mode="strict",
        cassette=cassette_path,
        upstream_openai="http://127.0.0.1:9/v1",
        upstream_anthropic="http://127.0.0.1:9",
    )
    with GatewayThread(config) as gw:
        replayed = agent(gw.env["OPENAI_BASE_URL"], None)
        summary = gw.stop()
    assert [str(m) for m in summary.misses] == [], summary
    assert summary.replayed == calls and summary.live == 0, summary
    assert replayed == production, (replayed, production)
    return Trip(
        production,
        replayed,
        cassette,
        traces,
        built.stderr,
        summary.replayed,
        [str(m) for m in summary.misses],
    )


@dataclass
class GatewayTrip:
    """``through_gateway``'s evidence: what the recorded run did, its cassette, and each
    strict replay's summary."""

    recorded: Outcome
    cassette: Cassette
    replays: list[Summary]


def through_gateway(
    tmp_path: Path, agent: Agent, *, calls: int = 4, replays: int = 2
) -> GatewayTrip:
    """The agent recorded through a gateway (the stub upstream behind it), its
    instrumentation exporting over OTLP/HTTP to the gateway itself, then replayed strictly
    ``replays`` times from that cassette with the upstream gone, telemetry again to the
    gateway. Asserts the recording (``calls`` model calls, all live) and each replay: the
    same outcome, every call replayed, no miss, the agent's spans received, and no model
    call said to have bypassed the gateway (every one reached it)."""
    cassette_path = tmp_path / "gateway.json"
    with run_stub() as stub:
        record = GatewayConfig(
            mode="record",
            cassette=cassette_path,
            upstream_openai=stub.openai_url,
            grpc_port=None,
            environ={},
        )
        with GatewayThread(record) as gw:
            recorded = agent(gw.env["OPENAI_BASE_URL"], gw.env["OTEL_EXPORTER_OTLP_ENDPOINT"])
            summary = gw.stop()
    assert recorded.answers == [FINAL_TEXT, FINAL_TEXT], recorded
    assert (summary.live, summary.misses) == (calls, []), summary
    assert summary.spans_received > 0, summary
    validate_cassette_file(cassette_path)
    cassette = load(cassette_path)
    assert len(cassette.interactions) == calls
    summaries = []
    for _ in range(replays):
        strict = GatewayConfig(
            mode="strict",
            cassette=cassette_path,
            upstream_openai="http://127.0.0.1:9/v1",
            grpc_port=None,
            environ={},
        )
        with GatewayThread(strict) as gw:
            replayed = agent(gw.env["OPENAI_BASE_URL"], gw.env["OTEL_EXPORTER_OTLP_ENDPOINT"])
            summary = gw.stop()
        assert [str(m) for m in summary.misses] == [], summary
        assert (summary.replayed, summary.live) == (calls, 0), summary
        assert summary.spans_received > 0, summary
        assert summary.bypassed == [], summary.bypassed
        assert replayed == recorded, (replayed, recorded)
        summaries.append(summary)
    return GatewayTrip(recorded, cassette, summaries)


def run_entries(traces: Sequence[Path], tmp_path: Path) -> dict[JSON, JSON]:
    """Each run's entry as ``build --emit-test`` reads it: the question it was asked (its
    one argument, or the ``question`` a chain was invoked with) and its output."""
    found = EntrySpans()
    build_file(traces, tmp_path / "entries.json", entries=found)
    read: dict[JSON, JSON] = {}
    for trace_id in found.runs():
        entry = found.entry(trace_id)
        call = entry.call
        read[call.args[0] if call.args else call.kwargs.get("question")] = entry.output
    return read


def source(scope: str, distribution: str) -> str:
    """How the summary names an instrumentation: its scope and its package's version."""
    return f"{scope} {version(distribution)}"


def semantic(source: str, calls: int = 4) -> str:
    """The summary line of a source whose every call replays semantically."""
    return f"{source}: {calls} model calls · 0 exactly · {calls} semantically · 0 not replayable"


def build_cli(traces: Sequence[Path], cassette: Path) -> subprocess.CompletedProcess[str]:
    """``otel-replay build`` on trace files."""
    return subprocess.run(
        [*CLI, "build", *map(str, traces), "-o", str(cassette)],
        capture_output=True,
        text=True,
        check=False,
    )


def doctor(traces: Sequence[Path]) -> subprocess.CompletedProcess[str]:
    """``otel-replay doctor`` on trace files."""
    return subprocess.run(
        [*CLI, "doctor", *map(str, traces)], capture_output=True, text=True, check=False
    )
