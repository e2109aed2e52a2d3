"""The real Codex CLI, recorded with one command and replayed strictly with the stub
upstream stopped: in another directory, with another CODEX_HOME, in a git repository with
commits and untracked files, and on another day — while an edited AGENTS.md, a changed
prompt and a changed tool result miss."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codex_runs import (
    AGENTS_MD,
    CONFIG,
    NOTE,
    Recording,
    a_day_earlier,
    codex_recordings,
    make_home,
    make_project,
    replay,
)

from otel_replay.cassette.model import load

__all__ = ["codex_recordings"]  # the session fixture, used here


def _turns(cassette: Path) -> list[Any]:
    """The recorded calls that asked for output (Codex first warms its WebSocket up with
    a ``generate: false`` request)."""
    return [i for i in load(cassette).interactions if i.request.params.get("generate") is not False]


def test_one_command_records_codex_without_touching_its_config(codex_recordings):
    for name, turns in (("plain", 1), ("tool", 2)):
        recording = codex_recordings[name]
        assert recording.run.code == 0, recording.run.stderr
        interactions = load(recording.cassette).interactions
        calls = len(interactions)
        assert f"0 replayed · {calls} live · 0 misses" in recording.run.stderr
        # one WebSocket, the model calls its frames: only they were recorded
        assert recording.received == [("GET", "/v1/responses")]
        assert [i.request.endpoint for i in interactions] == ["/v1/responses"] * calls
        assert len(_turns(recording.cassette)) == turns
    # the user's CODEX_HOME keeps its own config, untouched
    home = codex_recordings["plain"].cassette.parent / "codex-home"
    assert (home / "config.toml").read_text() == CONFIG
    assert "stub reply to: say hi" in codex_recordings["plain"].run.stdout


def test_codex_records_over_its_websocket_without_falling_back(codex_recordings):
    for recording in codex_recordings.values():
        stderr = recording.run.stderr
        assert "failed to connect to Responses WebSocket" not in stderr, stderr
        assert "Reconnecting" not in stderr and "Falling back" not in stderr
        assert {i.method for i in load(recording.cassette).interactions} == {"GET"}


def test_the_tool_turn_ran_the_shell_command(codex_recordings):
    (_, second) = _turns(codex_recordings["tool"].cassette)
    assert NOTE.strip() in str(second.request.messages)


def _elsewhere(tmp: Path, cassette: Path) -> tuple[Path, Path, Path]:
    return make_project(tmp / "elsewhere" / "work"), make_home(tmp / "other-home"), cassette


def _git_repository(tmp: Path, cassette: Path) -> tuple[Path, Path, Path]:
    project = make_project(tmp / "repo")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(project)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "AGENTS.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    (project / "untracked.txt").write_text("not committed\n")
    return project, make_home(tmp / "home"), cassette


def _next_day(tmp: Path, cassette: Path) -> tuple[Path, Path, Path]:
    earlier = a_day_earlier(cassette, tmp / "a-day-old.json")
    return make_project(tmp / "project"), make_home(tmp / "home"), earlier


def _all_at_once(tmp: Path, cassette: Path) -> tuple[Path, Path, Path]:
    project, home, _ = _git_repository(tmp, cassette)
    return project, home, a_day_earlier(cassette, tmp / "a-day-old.json")


PLACES: dict[str, Callable[[Path, Path], tuple[Path, Path, Path]]] = {
    "another directory and CODEX_HOME": _elsewhere,
    "a git repository": _git_repository,
    "another day": _next_day,
    "a git repository elsewhere, a day later": _all_at_once,
}
RUNS = [("tool", place) for place in list(PLACES)[:3]] + [("plain", list(PLACES)[3])]


@pytest.mark.parametrize(("turn", "place"), RUNS)
def test_replays_strictly_anywhere(codex_recordings, tmp_path, turn, place):
    recording: Recording = codex_recordings[turn]
    project, home, cassette = PLACES[place](tmp_path, recording.cassette)
    report = tmp_path / "report.json"
    run = replay(cassette, project, home, recording.prompt, report)
    calls = len(load(cassette).interactions)
    assert run.code == 0, run.stderr
    assert f"{calls} replayed · 0 live · 0 misses" in run.stderr
    assert "stub reply to:" in run.stdout
    # replayed over the WebSocket, as recorded: no fallback to HTTP
    assert "failed to connect to Responses WebSocket" not in run.stderr
    assert "Falling back" not in run.stderr
    assert json.loads(report.read_text())["replayed"] == calls


def _why(cassette: Path, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay.frontends.cli", "why", "--cassette", str(cassette)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout + done.stderr


def test_an_edited_agents_md_misses_naming_the_line(codex_recordings, tmp_path):
    recording = codex_recordings["plain"]
    edited = AGENTS_MD.replace("British", "American")
    project = make_project(tmp_path / "project", agents_md=edited)
    run = replay(recording.cassette, project, make_home(tmp_path / "home"), recording.prompt)
    assert run.code == 1
    assert "replay miss: messages changed" in run.stderr
    why = _why(recording.cassette, project)
    assert "-          - Use British spelling." in why.replace("\\n", "")
    assert "American" in why


def test_a_changed_prompt_misses(codex_recordings, tmp_path):
    recording = codex_recordings["plain"]
    project, home = make_project(tmp_path / "project"), make_home(tmp_path / "home")
    run = replay(recording.cassette, project, home, "say bye")
    assert run.code == 1
    # the WebSocket's warm-up (no prompt in it) replays; the turn misses
    assert "1 replayed · 0 live · 1 miss" in run.stderr
    assert "replay miss: messages changed" in run.stderr
    assert "say bye" in _why(recording.cassette, project)


def test_a_changed_tool_result_misses_on_the_next_call(codex_recordings, tmp_path):
    recording = codex_recordings["tool"]
    project, home = make_project(tmp_path / "project"), make_home(tmp_path / "home")
    (project / "note.txt").write_text("the build is red\n")
    run = replay(recording.cassette, project, home, recording.prompt)
    assert run.code == 1
    # the warm-up and the first call replay (it asks for the command); its result then
    # differs
    assert "2 replayed · 0 live · 1 miss" in run.stderr
    assert "replay miss: messages changed" in run.stderr
    assert "the build is red" in _why(recording.cassette, project)
