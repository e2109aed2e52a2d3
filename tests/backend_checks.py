"""What the ``build --from`` tests check of every backend: the command's outcome, its
one-line errors, and the built cassette replaying the agent strictly, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from third_party_agents import FINAL_TEXT, run_openai_agent

from otel_replay.gateway.runner import GatewayConfig, GatewayThread


def otel_replay(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m otel_replay ARGS`` with ``env`` added to this environment."""
    return subprocess.run(
        [sys.executable, "-m", "otel_replay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line a usage or backend error prints, exit 2."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def replays_offline(cassette: Path, runs: int = 1) -> None:
    """The agent, run ``runs`` times against a strict replay of ``cassette`` with no
    upstream, gets the answer it got in production each time."""
    config = GatewayConfig(
        mode="strict", cassette=cassette, upstream_openai="http://127.0.0.1:9/v1"
    )
    with GatewayThread(config) as gw:
        results = [run_openai_agent(gw.env["OPENAI_BASE_URL"]) for _ in range(runs)]
        summary = gw.stop()
    assert summary.misses == [] and summary.replayed == 2 * runs and summary.live == 0
    assert [r.final_text for r in results] == [FINAL_TEXT] * runs
