"""Re-record every example cassette against otel-replay's stub upstream, offline.

``python examples/record_all.py`` — the OpenAI and Anthropic agents are recorded through
``otel_replay.record``; the production example's trace file is regenerated with
OpenInference instrumentation and built into its cassette with ``otel-replay build``. The
instrumented and Pydantic AI agents set their telemetry up when imported, so the OTLP
variables are redirected first (``redirect_telemetry``); their trace snapshots are written
beside their cassettes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from otel_replay import record, redirect_telemetry
from otel_replay.testing.stub import run_stub

HERE = Path(__file__).resolve().parent
FAKE_KEYS = {
    "OPENAI_API_KEY": "sk-example-not-a-real-key",
    "ANTHROPIC_API_KEY": "sk-ant-example-not-a-real-key",
}


def _agent(folder: str, module: str) -> object:
    sys.path.insert(0, str(HERE / folder))
    return __import__(module)


def record_agents() -> None:
    saved = {name: os.environ.get(name) for name in FAKE_KEYS}
    os.environ.update(FAKE_KEYS)
    try:
        with run_stub() as stub:
            for folder, module, arg in (
                ("openai_agent", "openai_weather_agent", "Lisbon"),
                ("anthropic_agent", "anthropic_weather_agent", "Oslo"),
            ):
                cassette = HERE / folder / "cassettes" / "weather.json"
                with record(
                    cassette,
                    upstream_openai=stub.openai_url,
                    upstream_anthropic=stub.anthropic_url,
                ) as gateway:
                    answer = _agent(folder, module).run(arg)  # type: ignore[attr-defined]
                assert gateway.summary is not None
                print(f"{cassette.relative_to(HERE)}: {gateway.summary.line()} → {answer}")
            for folder, module in (
                ("instrumented_agent", "instrumented_weather_agent"),
                ("pydantic_ai_agent", "pydantic_ai_weather_agent"),
            ):
                record_spans(folder, module, stub.openai_url)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def record_spans(folder: str, module: str, upstream: str) -> None:
    """An agent whose examples assert on its spans: its cassette and trace snapshot."""
    with redirect_telemetry():  # before the agent's module builds its exporter
        agent: Any = _agent(folder, module)
        instrumentor = getattr(agent, "instrumentor", None)
        if instrumentor is not None:
            instrumentor.instrument(tracer_provider=agent.PROVIDER)
        cassette = HERE / folder / "cassettes" / "weather.json"
        with record(cassette, upstream_openai=upstream) as gateway:
            answer = agent.run("Lisbon")
            gateway.flush(agent.PROVIDER)
        snapshot = gateway.assert_snapshot()
        if instrumentor is not None:
            instrumentor.uninstrument()
    print(f"{snapshot.relative_to(HERE)}: {len(gateway.spans)} spans → {answer}")


def record_production() -> None:
    folder = HERE / "production_trace"
    subprocess.run([sys.executable, str(folder / "make_trace.py")], check=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_replay",
            "build",
            "trace.jsonl",
            "-o",
            "cassettes/support.json",
        ],
        check=True,
        cwd=folder,
    )


if __name__ == "__main__":
    record_agents()
    record_production()
