"""Running the real Claude Code CLI under ``otel-replay`` in a test: offline (no update
check, no analytics, no non-essential traffic), with a placeholder key, in a folder and
HOME of the test's choosing, against the stub upstream when recording.

The stub reads the turn from the prompt: ``stub:text`` answers in text, ``stub:call Bash
{"command": …}`` calls Bash once (``otel_replay.testing.stub_turns.directive``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coding_clients import client_cli

CLI = [sys.executable, "-m", "otel_replay"]
PLAIN = "say hi stub:text"
TOOL = 'stub:call Bash {"command": "cat note.txt"}'
TOOL_ARGS = ("--allowedTools", "Bash(cat note.txt)")
OFFLINE = {
    "ANTHROPIC_API_KEY": "sk-ant-placeholder-000",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
"""What Claude Code needs to run offline against the gateway."""

_FOREIGN = ("CLAUDE", "ANTHROPIC_", "OTEL_", "CI")


def environment(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without Claude Code's, Anthropic's or OTel's own
    variables, with ``home`` as HOME and the offline settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN)}
    return {**base, **OFFLINE, "HOME": str(home), "NO_PROXY": "127.0.0.1,localhost", **extra}


def otel_replay(
    args: list[str], cwd: Path, home: Path, *claude: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``otel-replay ARGS -- claude -p …`` in ``cwd`` with ``home`` as HOME."""
    cwd.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [*CLI, *args, "--", str(client_cli("claude")), *claude],
        cwd=cwd,
        env=environment(home, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def record(
    cassette: Path,
    upstream: str,
    cwd: Path,
    home: Path,
    *claude: str,
    traces: Path | None = None,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    """Records; with ``traces``, the telemetry goes there (logs beside it)."""
    args = ["record", "--cassette", str(cassette), "--upstream-anthropic", upstream]
    if traces is not None:
        args += ["--traces", str(traces)]
    done = otel_replay(args, cwd, home, *claude, **extra)
    assert done.returncode == 0, done.stderr
    return done


def replay(
    cassette: Path, cwd: Path, home: Path, *claude: str, report: Path | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Replays strictly; with ``report``, the JSON run report goes there."""
    args = ["replay", "--cassette", str(cassette), "--mode", "strict"]
    if report is not None:
        args += ["--report", str(report)]
    return otel_replay(args, cwd, home, *claude, **extra)


def git_repository(folder: Path) -> None:
    """``folder`` as a git repository on its own branch, with two commits and an
    untracked file."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    user = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]

    def git(*args: str) -> None:
        subprocess.run(
            ["git", *user, *args], cwd=folder, env=env, check=True, timeout=30, capture_output=True
        )

    git("init", "-q", "-b", "feature")
    git("add", "-A")
    git("commit", "-q", "-m", "first")
    (folder / "src.txt").write_text("code\n")
    git("add", "src.txt")
    git("commit", "-q", "-m", "add src")
    (folder / "scratch.txt").write_text("not tracked\n")
