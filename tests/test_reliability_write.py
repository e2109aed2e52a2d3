"""Writing never loses a recording: concurrent appenders to one cassette, a disk that fills
mid-run, a cassette reached through a symlink. Each case drives the CLI as a subprocess
with the official SDK as the agent, against the stub upstream."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
OPENAI_KEY = "sk-test-write-0123456789abcdef"
RUN_TIMEOUT = 120

# Makes the calls named on its command line ("PREFIX:COUNT"); with BARRIER set, it
# announces its first answer by a file and waits for its peer's before going on.
AGENT = """
import os, pathlib, sys, time
import openai
client = openai.OpenAI(max_retries=0)
barrier = os.environ.get("BARRIER")
for spec in sys.argv[1:]:
    prefix, count = spec.split(":")
    for i in range(int(count)):
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"{prefix} call {i}"}])
        if barrier and i == 0:
            me, peer = barrier.split(",")
            pathlib.Path(me).touch()
            deadline = time.monotonic() + 60
            while not pathlib.Path(peer).exists() and time.monotonic() < deadline:
                time.sleep(0.01)
"""


def _agent(tmp_path: Path) -> Path:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    return agent


def _cli(args: list[str], agent_args: list[str], agent: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *args, "--", sys.executable, str(agent), *agent_args],
        env={**os.environ, "OPENAI_API_KEY": OPENAI_KEY, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _contents(cassette: Path) -> list[str]:
    """The user message of every recorded request, in cassette order."""
    texts = []
    for ex in load(cassette).interactions:
        assert isinstance(ex.raw_request, dict)
        texts.append(str(ex.raw_request["messages"][0]["content"]))
    return texts


def test_two_auto_runs_appending_to_one_cassette_keep_both_runs_recordings(
    tmp_path: Path,
) -> None:
    agent, cassette = _agent(tmp_path), tmp_path / "shared.json"
    with run_stub() as stub:
        code, err = _finish(
            _cli(
                ["record", "--cassette", str(cassette), "--upstream-openai", stub.openai_url],
                ["original:3"],
                agent,
            )
        )
        assert code == 0, err
        runs = []
        for me, peer in (("a", "b"), ("b", "a")):
            barrier = f"{tmp_path / me},{tmp_path / peer}"
            args = ["replay", "--mode", "auto", "--cassette", str(cassette)]
            args += ["--upstream-openai", stub.openai_url]
            runs.append(_cli(args, ["original:3", f"worker-{me}:20"], agent, BARRIER=barrier))
        results = [_finish(proc) for proc in runs]
    for code, err in results:
        assert code == 0, err
        assert "3 replayed · 20 live · 0 misses" in err, err
    contents = _contents(cassette)
    assert len(contents) == 43, contents
    for prefix in ("original", "worker-a", "worker-b"):
        count = 3 if prefix == "original" else 20
        assert sorted(c for c in contents if c.startswith(prefix)) == sorted(
            f"{prefix} call {i}" for i in range(count)
        )
    # every recording replays offline, strictly
    code, err = _finish(
        _cli(
            ["replay", "--mode", "strict", "--cassette", str(cassette)],
            ["original:3", "worker-a:20", "worker-b:20"],
            agent,
        )
    )
    assert code == 0, err
    assert "43 replayed · 0 live · 0 misses" in err, err
