"""``serve``'s ``use`` line: one running engine switches cassettes between blocks (what the
Vitest helper does per test), each block's summary its own, with the pytest plugin's swap.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from test_cli import AGENT, serve

from otel_replay.testing.stub import run_stub


def agent(env: dict[str, str], city: str) -> None:
    done = subprocess.run(
        [*AGENT, "openai", city],
        env={**os.environ, **env, "OPENAI_API_KEY": "sk-test"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 or "replay miss" in done.stderr, done.stderr


def ask(proc: subprocess.Popen[str], message: object) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def test_use_switches_cassettes_and_answers_each_blocks_summary(tmp_path: Path) -> None:
    paris, lyon = tmp_path / "paris.json", tmp_path / "lyon.json"
    with run_stub() as stub, serve(["--upstream-openai", stub.openai_url]) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        env = json.loads(proc.stdout.readline())["env"]
        for cassette, city in ((paris, "Paris"), (lyon, "Lyon")):  # recorded in turn
            used = ask(proc, {"use": {"cassette": str(cassette), "mode": "record"}})["used"]
            assert used["env"]["OPENAI_BASE_URL"] == env["OPENAI_BASE_URL"]  # the same port
            agent(used["env"], city)
        back = ask(proc, {"use": {}})["used"]["summary"]  # no cassette: idle, strict
        assert back["live"] == 2 and back["cassette"] == str(lyon)
        # replayed strictly, then a block whose agent asks something else misses alone
        assert ask(proc, {"use": {"cassette": str(paris), "mode": "strict"}})["used"]
        agent(env, "Paris")
        after_paris = ask(proc, {"use": {"cassette": str(lyon), "mode": "strict"}})["used"]
        assert after_paris["summary"]["replayed"] == 2 and not after_paris["summary"]["misses"]
        agent(env, "Oslo")
        after_lyon = ask(proc, {"use": {}})["used"]["summary"]
        assert after_lyon["misses"] and after_lyon["replayed"] == 0
        # what cannot be used is an error line, and the gateway stays where it was
        missing = ask(proc, {"use": {"cassette": str(tmp_path / "none.json"), "mode": "strict"}})
        assert "no such cassette" in missing["error"]
        assert "error" in ask(proc, {"use": {"cassette": str(paris), "mode": "sideways"}})
        proc.stdin.close()
        final = json.loads(proc.stdout.readline())["summary"]
        assert proc.wait(30) == 0
    assert final["cassette"] is None and final["replayed"] == 0
    assert json.loads(paris.read_text())["interactions"]
