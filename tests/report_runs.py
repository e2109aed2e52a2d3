"""Runs of the trajectory agent for the report and diff tests: recorded through the
gateway against the stub upstream (the agent's own spans and the model-call spans in one
trace file), and replayed strictly with a change that misses."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trajectory_agent

import otel_replay
from otel_replay.core.errors import ReplayMiss
from otel_replay.testing.stub import StubUpstream

KEY = "sk-test-1234567890abcdef"


@contextmanager
def key_set() -> Iterator[None]:
    """OPENAI_API_KEY set for the block (recording needs one; nothing checks it)."""
    before = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        yield
    finally:
        if before is None:
            del os.environ["OPENAI_API_KEY"]
        else:
            os.environ["OPENAI_API_KEY"] = before


def record(stub: StubUpstream, folder: Path, name: str, **variant: Any) -> tuple[Path, Path]:
    """Record one run of the agent (``variant``: its options); (cassette, trace file)."""
    cassette, traces = folder / f"{name}.json", folder / f"{name}.jsonl"
    with key_set(), otel_replay.record(cassette, traces=traces, upstream_openai=stub.openai_url):
        trajectory_agent.run(**variant)
    return cassette, traces


def replay_missing(cassette: Path, folder: Path, report: Path | None = None) -> Path:
    """Replay ``cassette`` strictly with one more turn than recorded: the last call
    misses. Returns the replay's trace file."""
    traces = folder / "replay.jsonl"
    try:
        with otel_replay.replay(cassette, mode="strict", traces=traces, report=report):
            trajectory_agent.run(extra_turn=True)
    except ReplayMiss as exc:
        assert "more model calls than the 2 recorded" in str(exc)
    else:
        raise AssertionError("the extra turn did not miss")
    return traces
