"""``otel-replay demo``: record → replay round trip against the built-in stub upstream.

No key, no network: a stub OpenAI/Anthropic upstream runs on loopback, the demo agent is
recorded against it, the stub is stopped, and the agent is replayed strictly from the
cassette. A last run with a changed prompt shows what a miss looks like.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.session.session import Summary
from otel_replay.testing.stub import run_stub

AGENT = [sys.executable, "-m", "otel_replay.testing.demo_agent"]


def _run_agent(
    config: GatewayConfig, extra: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Summary]:
    gateway = GatewayThread(config).start()
    try:
        env = {**os.environ, **gateway.env, **(extra or {})}
        result = subprocess.run(AGENT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        summary = gateway.stop()
    return result, summary


def _say(text: str) -> None:
    print(text, flush=True)


def run_demo(workdir: Path | None = None) -> int:
    folder = workdir or Path(tempfile.mkdtemp(prefix="otel-replay-demo-"))
    cassette = folder / "demo.json"
    _say("otel-replay demo: record an agent once, replay it offline.\n")
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=folder / "record.jsonl",
            upstream_openai=stub.openai_url,
            upstream_anthropic=stub.anthropic_url,
            command=AGENT,
        )
        recorded, summary = _run_agent(config, {"OPENAI_API_KEY": "sk-demo-not-a-real-key"})
        upstream_calls = len(stub.received)
    _say(f"1. record   → {upstream_calls} calls reached the stub upstream")
    _say(f"   {summary.line()}")
    _say(f"   agent said: {recorded.stdout.strip().splitlines()[0] if recorded.stdout else ''}")
    if recorded.returncode != 0:
        _say(f"   the agent failed:\n{recorded.stderr}")
        return 1
    _say("\n   (stub upstream stopped: from here on nothing can answer but the cassette)\n")
    replayed, summary = _run_agent(
        GatewayConfig(mode="strict", cassette=cassette, traces=folder / "replay.jsonl")
    )
    same = replayed.returncode == 0 and replayed.stdout == recorded.stdout
    _say(f"2. replay   → {summary.line()}")
    _say(f"   same output as the recording: {'yes' if same else 'NO'}")
    changed, miss_summary = _run_agent(
        GatewayConfig(mode="strict", cassette=cassette), {"DEMO_CITY": "Oslo"}
    )
    _say("\n3. change the prompt (Lisbon → Oslo) and replay strictly:")
    for message in miss_summary.misses[:1]:
        _say(f"   {message}")
    _say(f"   agent exit code {changed.returncode}; explain with:")
    _say(f"   otel-replay why --cassette {cassette}")
    _say(
        f"\ncassette: {cassette}\ntraces:   {folder / 'record.jsonl'} (recording), "
        f"{folder / 'replay.jsonl'} (replay)"
    )
    ok = same and summary.live == 0 and not summary.misses and bool(miss_summary.misses)
    _say("\ndemo " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1
