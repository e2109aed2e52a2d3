"""A bounded soak: four agents at once against real gateways, faults every few seconds.

- a recording agent (the official ``openai`` SDK, no retries) through a gateway in record
  mode, while the stub upstream fails one call in a few (500, then a dropped connection);
- a replaying agent that starts a strict gateway on a cassette recorded beforehand, replays
  it and stops it, again and again;
- a telemetry agent exporting spans over OTLP/HTTP to the recording gateway;
- the fault injector.

At the end nothing may be lost: every call the recording agent made (answered or failed)
is in the cassette, every span the telemetry agent exported is in the trace file, every
replay gave the recorded answers; and memory grows no faster in the second half of the run
than in the first. ``SOAK_SECONDS`` sets the length (20 s in ``make test``; ``make soak``
runs 20 minutes).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import Fault, run_stub

SECONDS = float(os.environ.get("SOAK_SECONDS", "20"))
BASE_PROMPTS = [f"base question {i}" for i in range(5)]
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def ask(env: dict[str, str], prompt: str) -> str:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="k", max_retries=0, timeout=30)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content or ""


def prompt_of(exchange) -> str:  # type: ignore[no-untyped-def]
    body = exchange.raw_request or {}
    return str(body["messages"][-1]["content"])


def test_soak(tmp_path: Path) -> None:
    stop = threading.Event()
    errors: list[BaseException] = []
    calls: list[str] = []
    failed: list[str] = []
    replays = [0]
    spans: list[str] = []
    memory: list[int] = []

    def guarded(work):  # type: ignore[no-untyped-def]
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # reported by the test, not lost in a thread
                errors.append(exc)
                stop.set()

        return threading.Thread(target=run, daemon=True)

    with run_stub() as stub:
        base = tmp_path / "base.json"
        config = GatewayConfig(mode="record", cassette=base, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gw:
            answers = {p: ask(gw.env, p) for p in BASE_PROMPTS}

        record = GatewayConfig(
            mode="record",
            cassette=tmp_path / "soak.json",
            traces=tmp_path / "soak.jsonl",
            upstream_openai=stub.openai_url,
        )
        with GatewayThread(record) as recorder:
            env = recorder.env

            def recording() -> None:
                n = 0
                while not stop.is_set():
                    prompt = f"soak question {n}"
                    n += 1
                    calls.append(prompt)
                    try:
                        ask(env, prompt)
                    except openai.APIError:
                        failed.append(prompt)
                    time.sleep(0.01)

            def replaying() -> None:
                while not stop.is_set():
                    strict = GatewayConfig(mode="strict", cassette=base)
                    with GatewayThread(strict) as gw:
                        for prompt in BASE_PROMPTS:
                            assert ask(gw.env, prompt) == answers[prompt]
                    assert gw.summary is not None and gw.summary.replayed == len(BASE_PROMPTS)
                    replays[0] += 1

            def telemetry() -> None:
                exporter = OTLPSpanExporter(endpoint=env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
                provider = TracerProvider(resource=Resource.create({"service.name": "soak"}))
                provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
                tracer = provider.get_tracer("soak")
                n = 0
                while not stop.is_set():
                    with tracer.start_as_current_span(f"soak-span-{n}"):
                        spans.append(f"soak-span-{n}")
                    n += 1
                    time.sleep(0.005)
                assert provider.force_flush(30_000)
                provider.shutdown()

            def faults() -> None:
                kinds = ["status", "reset"]
                n = 0
                while not stop.wait(2.0):
                    fault = Fault(kind=kinds[n % 2], status=500, path="/chat/completions")
                    stub.faults.append(fault)
                    n += 1

            def sampling() -> None:
                while not stop.wait(1.0):
                    memory.append(rss())

            threads = [guarded(w) for w in (recording, replaying, telemetry, faults, sampling)]
            for thread in threads:
                thread.start()
            stop.wait(SECONDS)
            stop.set()
            for thread in threads:
                thread.join(60)
        summary = recorder.summary

    assert not errors, errors
    assert summary is not None and summary.live == len(calls)
    # nothing recorded was lost: every call, answered or failed, is in the cassette
    recorded = load(tmp_path / "soak.json").interactions
    assert sorted(prompt_of(ex) for ex in recorded) == sorted(calls)
    assert failed, "the stub's faults reached the agent"
    assert len([ex for ex in recorded if ex.response.status != 200]) == len(failed)
    # every exported span reached the trace file
    names: set[str] = set()
    for line in (tmp_path / "soak.jsonl").read_text().splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                names.update(s["name"] for s in ss.get("spans", []))
    assert set(spans) <= names
    assert replays[0] >= 1
    # memory: the second half grows no faster than the first (recording keeps its
    # exchanges until it writes the cassette, so some growth is expected)
    assert len(memory) >= 6
    third = len(memory) // 3
    first = memory[2 * third - 1] - memory[third - 1]
    second = memory[-1] - memory[2 * third - 1]
    assert second <= max(2 * first, 32 * 1024 * 1024), (memory[0], first, second)
