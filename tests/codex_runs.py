"""Running the real, pinned Codex CLI under ``otel-replay record`` / ``replay``, against
the stub upstream, offline: its update check and analytics are off in the ``config.toml``
of the ``CODEX_HOME`` each run gets (the user's own configuration, which otel-replay must
leave as it is).

``codex_recordings`` (session scope) records two runs once, then stops the stub: a plain
turn, and a tool turn whose scripted answer has Codex run ``cat note.txt`` in its shell.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from coding_clients import client_cli

from otel_replay.testing.stub import run_stub

CONFIG = "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n"
AGENTS_MD = "# Project rules\n\n- Answer in one line.\n- Use British spelling.\n"
NOTE = "the build is green\n"
PLAIN_PROMPT = "say hi"
TOOL_PROMPT = "what does note.txt say?"
# Codex's shell tool is `exec`: JavaScript calling `tools.exec_command`
SHELL_CALL = {
    "type": "custom_tool_call",
    "name": "exec",
    "call_id": "call_shell1",
    "input": 'const r = await tools.exec_command({cmd: "cat note.txt", login: false});\n'
    "text(r.output);",
}


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


@dataclass
class Recording:
    cassette: Path
    prompt: str
    run: Run
    received: list[tuple[str, str]]  # (method, path) of what reached the stub


def make_home(path: Path) -> Path:
    """A CODEX_HOME holding only the user's config.toml."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.toml").write_text(CONFIG)
    return path


def make_project(path: Path, agents_md: str = AGENTS_MD) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "AGENTS.md").write_text(agents_md)
    (path / "note.txt").write_text(NOTE)
    return path


def otel_replay(
    args: list[str], cwd: Path, codex_home: Path, prompt: str, api_key: str | None = None
) -> Run:
    """``otel-replay ARGS -- codex exec PROMPT``, as a user types it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    env["CODEX_HOME"] = str(codex_home)
    # a home of its own, as the Claude Code runs have: the machine's shell profile stays out
    # of the agent's tool shells (its `pyenv init` rehashes, and two shells of two test
    # workers at once printed "pyenv: cannot rehash" into a recorded tool output)
    home = codex_home.parent / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    if api_key:
        env["OPENAI_API_KEY"] = api_key
    command = [str(client_cli("codex")), "exec", "--skip-git-repo-check", prompt]
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay.frontends.cli", *args, "--", *command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def replay(
    cassette: Path, cwd: Path, codex_home: Path, prompt: str, report: Path | None = None
) -> Run:
    args = ["replay", "--cassette", str(cassette), "--mode", "strict"]
    if report is not None:
        args += ["--report", str(report)]
    return otel_replay(args, cwd, codex_home, prompt)


_RECORDED: dict[str, Recording] = {}


@pytest.fixture(scope="session")
def codex_recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Recording]:
    """The two recordings, made once per test process (each module importing this
    fixture gets the same ones)."""
    if not _RECORDED:
        _RECORDED.update(_record(tmp_path_factory.mktemp("codex-recorded")))
    return _RECORDED


def _record(root: Path) -> dict[str, Recording]:
    home, project = make_home(root / "codex-home"), make_project(root / "project")
    recordings: dict[str, Recording] = {}
    with run_stub() as stub:
        for name, prompt, script in (
            ("plain", PLAIN_PROMPT, []),
            ("tool", TOOL_PROMPT, [[SHELL_CALL]]),
        ):
            stub.received.clear()
            stub.script(*script)
            cassette = root / f"{name}.json"
            args = ["record", "--cassette", str(cassette), "--upstream-openai", stub.openai_url]
            run = otel_replay(args, project, home, prompt, api_key="sk-test-codex")
            received = [(r.method, r.path) for r in stub.received]
            recordings[name] = Recording(cassette, prompt, run, received)
    return recordings


def a_day_earlier(cassette: Path, out: Path) -> Path:
    """The cassette as if recorded the day before: its dates, and the epoch times Codex
    sends (milliseconds, and seconds with a fraction), one day earlier."""
    raw = cassette.read_text()
    found = re.search(r"<current_date>(\d{4}-\d{2}-\d{2})</current_date>", raw)
    assert found, "the recording names no date"
    day = found[1]
    yesterday = (date.fromisoformat(day) - timedelta(days=1)).isoformat()
    day_ms = 86_400_000

    def text(s: str) -> str:
        s = s.replace(day, yesterday)
        s = re.sub(r"(?<![\d.])1\d{12}(?![\d.])", lambda m: str(int(m[0]) - day_ms), s)
        return re.sub(r"(?<![\d.])(1\d{9})(\.\d+)", lambda m: f"{int(m[1]) - 86400}{m[2]}", s)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return text(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        if isinstance(value, int) and 10**12 <= value < 10**13:
            return value - day_ms
        if isinstance(value, float) and 10**9 <= value < 10**10:
            return value - 86400
        return value

    out.write_text(json.dumps(walk(json.loads(raw)), indent=2))
    assert day not in out.read_text()
    return out
