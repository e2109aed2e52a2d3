"""Crash safety: a record run killed with SIGKILL mid-way loses nothing it had finished,
and a cassette is never left half-written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_replay.cassette import model as cassette_mod
from otel_replay.cassette.model import Cassette, dump, load
from otel_replay.core.errors import CassetteError
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
CALLS = 200
KILL_AFTER = 60

AGENT = f"""
import openai
client = openai.OpenAI(max_retries=0)
for i in range({CALLS}):
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": f"call number {{i}}"}}])
"""


def _wait_for(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Poll a condition owned by another process (no event can be awaited across it)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def test_sigkill_mid_record_keeps_every_finished_exchange(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    cassette, traces, rebuilt = tmp_path / "c.json", tmp_path / "t.jsonl", tmp_path / "c2.json"
    with run_stub() as stub:
        proc = subprocess.Popen(
            [
                *CLI,
                "record",
                "--cassette",
                str(cassette),
                "--traces",
                str(traces),
                "--upstream-openai",
                stub.openai_url,
                "--",
                sys.executable,
                str(agent),
            ],
            env={**os.environ, "OPENAI_API_KEY": "sk-test-crash-0123456789"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_for(lambda: len(stub.received) >= KILL_AFTER)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            answered = len(stub.received)
        finally:
            # the agent, orphaned, is in the same process group: stop it too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode == -signal.SIGKILL
    assert not cassette.exists(), "no cassette (and no partial one) after a kill"
    assert not list(tmp_path.glob(".c.json.*.tmp"))
    raw = traces.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1]
    lines = complete.decode("utf-8").splitlines()
    for line in lines:
        json.loads(line)  # every complete line is a valid OTLP JSON document
    build = subprocess.run(
        [*CLI, "build", str(traces), "-o", str(rebuilt)], capture_output=True, text=True, timeout=60
    )
    assert build.returncode == 0, build.stderr
    interactions = load(rebuilt).interactions
    assert len(interactions) >= answered - 1 >= KILL_AFTER - 1
    prompts = [ex.request.messages[-1] for ex in interactions]
    texts = [json.dumps(p) for p in prompts]
    for i in range(answered - 1):
        assert any(f'call number {i}"' in t for t in texts), i


def test_store_resumes_cleanly_after_a_torn_line(tmp_path: Path) -> None:
    """A line cut by a crash is closed before the next batch, so no line is swallowed."""
    from otel_replay.otlp.store import TraceStore

    traces = tmp_path / "t.jsonl"
    traces.write_bytes(b'{"resourceSpans": [{"scopeSp')
    with TraceStore(traces) as store:
        from otel_replay.otlp import codec

        msg = codec.traces_from_json(
            json.dumps(
                {
                    "resourceSpans": [
                        {
                            "scopeSpans": [
                                {
                                    "spans": [
                                        {
                                            "traceId": "0" * 31 + "1",
                                            "spanId": "0" * 15 + "1",
                                            "name": "s",
                                        }
                                    ]
                                }
                            ]
                        }
                    ]
                }
            )
        )
        store.write_traces(msg)
    lines = traces.read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[1])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] == "s"


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize("stage", ["write", "fsync", "replace"])
def test_dump_failure_leaves_the_old_cassette_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    path = tmp_path / "c.json"
    dump(Cassette(interactions=[], source={"recorded_at": "old"}), path)
    before = path.read_bytes()

    def boom(*_a: object, **_k: object) -> None:
        raise _Boom(stage)

    if stage == "fsync":
        monkeypatch.setattr(cassette_mod.os, "fsync", boom)
    elif stage == "replace":
        monkeypatch.setattr(cassette_mod.os, "replace", boom)
    else:
        real = cassette_mod.os.fdopen

        def fdopen(fd: int, *a: object, **k: object):  # type: ignore[no-untyped-def]
            handle = real(fd, *a, **k)  # type: ignore[call-overload]
            handle.write = boom
            return handle

        monkeypatch.setattr(cassette_mod.os, "fdopen", fdopen)
    with pytest.raises(_Boom):
        dump(Cassette(interactions=[], source={"recorded_at": "new"}), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_dump_oserror_is_a_cassette_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_a: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cassette_mod.os, "fsync", full)
    with pytest.raises(CassetteError, match=r"c\.json.*No space left"):
        dump(Cassette(interactions=[], source={}), tmp_path / "c.json")
    assert list(tmp_path.iterdir()) == []


def test_sigkill_during_dump_leaves_no_partial_cassette(tmp_path: Path) -> None:
    """A child killed between writing the temporary file and renaming it."""
    path = tmp_path / "c.json"
    code = f"""
import os, sys
from otel_replay.cassette import model as cassette
from otel_replay.cassette.model import Cassette, dump
def stop(*a, **k):
    os.kill(os.getpid(), 9)
cassette.os.replace = stop
dump(Cassette(interactions=[], source={{}}), {str(path)!r})
"""
    proc = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not path.exists()
    leftovers = list(tmp_path.iterdir())
    # a killed process cannot clean up its temporary file, but it is never the cassette
    assert all(p.name.startswith(".c.json.") and p.suffix == ".tmp" for p in leftovers)
