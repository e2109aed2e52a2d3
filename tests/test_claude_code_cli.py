"""The real Claude Code CLI (pinned in tests/clients) recorded once against the stub
upstream, then replayed strictly with the stub stopped: in another directory, with another
HOME, in a git repository with commits and untracked files, a day later — every call
hits (the ``claude-code`` profile). A changed CLAUDE.md line, prompt, tool result, system
prompt line or tool schema still misses, naming the component that changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import pytest
from claude_code_runs import PLAIN, TOOL, TOOL_ARGS, git_repository, record, replay

from otel_replay.cassette.model import load
from otel_replay.cassette.v1 import V1
from otel_replay.testing.stub import run_stub

CLAUDE_MD = "# Project notes\n\nAnswer in one short sentence.\n"
NOTE = "the answer is 42\n"


@dataclass(frozen=True)
class Recorded:
    folder: Path  # where it was recorded: CLAUDE.md and note.txt
    plain: Path
    tool: Path
    plain_out: str
    tool_out: str


def _project(folder: Path, claude_md: str = CLAUDE_MD, note: str = NOTE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "CLAUDE.md").write_text(claude_md)
    (folder / "note.txt").write_text(note)
    return folder


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("claude")
    folder, home = _project(root / "alice" / "proj"), root / "alice"
    with run_stub() as stub:
        plain = record(root / "plain.json", stub.url, folder, home, "-p", PLAIN)
        tool = record(root / "tool.json", stub.url, folder, home, "-p", TOOL, *TOOL_ARGS)
    assert "2 live" in tool.stderr  # the Bash round trip: two model calls
    return Recorded(folder, root / "plain.json", root / "tool.json", plain.stdout, tool.stdout)


def _copy(cassette: Path, folder: Path) -> Path:
    target = folder / cassette.name
    shutil.copyfile(cassette, target)
    return target


def _hits(done: object, calls: int, stdout: str) -> None:
    assert getattr(done, "returncode", None) == 0, getattr(done, "stderr", "")
    assert f"otel-replay: {calls} replayed · 0 live · 0 misses" in getattr(done, "stderr", "")
    assert getattr(done, "stdout", None) == stdout


def test_both_turns_replay_in_another_directory_with_another_home(recorded, tmp_path):
    folder = _project(tmp_path / "bob" / "work" / "checkout")
    home = tmp_path / "home-of-bob"
    plain = replay(_copy(recorded.plain, tmp_path), folder, home, "-p", PLAIN)
    _hits(plain, 1, recorded.plain_out)
    report = tmp_path / "report.json"
    tool = replay(
        _copy(recorded.tool, tmp_path), folder, home, "-p", TOOL, *TOOL_ARGS, report=report
    )
    _hits(tool, 2, recorded.tool_out)
    assert recorded.tool_out.strip() == "stub reply to: " + NOTE.strip()
    # the second call is the first with the tool's call and result added (its last message
    # sent again without the cache marker): matched by what it adds
    assert json.loads(report.read_text())["replayed_by_turn"] == 1


def _both_turns_hit(recorded: Recorded, folder: Path, tmp_path: Path) -> None:
    """Both recorded turns replay in ``folder`` (HOME another), giving the same output."""
    home = tmp_path / "home"
    plain = replay(_copy(recorded.plain, tmp_path), folder, home, "-p", PLAIN)
    _hits(plain, 1, recorded.plain_out)
    report = tmp_path / "report.json"
    tool = replay(
        _copy(recorded.tool, tmp_path), folder, home, "-p", TOOL, *TOOL_ARGS, report=report
    )
    _hits(tool, 2, recorded.tool_out)
    assert json.loads(report.read_text())["replayed_by_turn"] == 1


def test_both_turns_replay_in_a_git_repository_with_commits_and_untracked_files(recorded, tmp_path):
    folder = _project(tmp_path / "repo")
    git_repository(folder)
    _both_turns_hit(recorded, folder, tmp_path)


def test_a_recording_made_a_day_earlier_replays(recorded, tmp_path):
    """Claude Code cannot be given another clock here: the recording's dates are moved a
    day back instead (the prompt says "Today's date is …")."""
    text = recorded.tool.read_text(encoding="utf-8")
    found = re.search(r"Today's date is (\d{4}-\d{2}-\d{2})", text)
    assert found is not None
    day = date.fromisoformat(found.group(1))
    earlier = text.replace(day.isoformat(), (day - timedelta(days=1)).isoformat())
    assert earlier.count(day.isoformat()) == 0 < text.count(day.isoformat())
    old = tmp_path / "tool.json"
    old.write_text(earlier, encoding="utf-8")
    done = replay(old, recorded.folder, recorded.folder.parent, "-p", TOOL, *TOOL_ARGS)
    _hits(done, 2, recorded.tool_out)


@pytest.mark.parametrize(
    ("change", "component"),
    [
        ("claude_md", "messages"),
        ("prompt", "messages"),
        ("tool_result", "messages"),
    ],
)
def test_a_changed_instruction_or_tool_result_misses(recorded, tmp_path, change, component):
    md = CLAUDE_MD + "Never use tools.\n" if change == "claude_md" else CLAUDE_MD
    folder = _project(
        tmp_path / "proj", md, "the answer is 43\n" if change == "tool_result" else NOTE
    )
    home = tmp_path / "home"
    if change == "tool_result":  # the first call replays, the one carrying the result misses
        done = replay(_copy(recorded.tool, tmp_path), folder, home, "-p", TOOL, *TOOL_ARGS)
    else:
        prompt = "say hello stub:text" if change == "prompt" else PLAIN
        done = replay(_copy(recorded.plain, tmp_path), folder, home, "-p", prompt)
    assert done.returncode == 1, done.stderr
    assert f"replay miss: {component} changed (hash " in done.stderr


def _edited(cassette: Path, target: Path, edit: object) -> Path:
    """A copy of ``cassette`` whose first request went through ``edit`` (both the
    canonical request and the body as sent), hand-edited in version 1's layout, where
    each interaction is written out in full."""
    doc = V1.to_json(load(cassette))
    first = doc["interactions"][0]
    edit(first["request"], first["raw_request"])  # type: ignore[operator]
    target.write_text(json.dumps(doc), encoding="utf-8")
    return target


def _system_line(request: dict, raw: dict) -> None:
    for blocks, key in ((request["system"], "content"), (raw["system"], "text")):
        last = blocks[-1]
        assert "# Context management" in last[key]
        last[key] = last[key].replace("# Context management", "# Context handling")


def _tool_schema(request: dict, raw: dict) -> None:
    for tools, key in ((request["tools"], "parameters"), (raw["tools"], "input_schema")):
        bash = next(t for t in tools if t["name"] == "Bash")
        bash[key]["properties"]["command"]["description"] = "The shell command to run"


@pytest.mark.parametrize(
    ("edit", "component"), [(_system_line, "system prompt"), (_tool_schema, "tools")]
)
def test_a_recording_whose_system_prompt_or_tool_schema_differs_misses(
    recorded, tmp_path, edit, component
):
    cassette = _edited(recorded.plain, tmp_path / "plain.json", edit)
    done = replay(cassette, recorded.folder, recorded.folder.parent, "-p", PLAIN)
    assert done.returncode == 1, done.stderr
    assert f"replay miss: {component} changed (hash " in done.stderr


@pytest.mark.parametrize("flag", ["--bare", "--exclude-dynamic-system-prompt-sections"])
def test_the_sections_moved_by_bare_and_exclude_dynamic_replay_elsewhere(tmp_path, flag):
    first, second = _project(tmp_path / "a" / "proj"), _project(tmp_path / "b" / "repo")
    git_repository(second)
    cassette = tmp_path / "c.json"
    with run_stub() as stub:
        made = record(cassette, stub.url, first, tmp_path / "a", flag, "-p", PLAIN)
    done = replay(cassette, second, tmp_path / "b", flag, "-p", PLAIN)
    _hits(done, 1, made.stdout)


@pytest.fixture(scope="module")
def recorded_in_git(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The same turns recorded in a git repository (its status in the first message, "Is
    a git repository: true" in the environment section)."""
    root = tmp_path_factory.mktemp("claude-git")
    folder, home = _project(root / "carol" / "repo"), root / "carol"
    git_repository(folder)
    with run_stub() as stub:
        plain = record(root / "plain.json", stub.url, folder, home, "-p", PLAIN)
        tool = record(root / "tool.json", stub.url, folder, home, "-p", TOOL, *TOOL_ARGS)
    return Recorded(folder, root / "plain.json", root / "tool.json", plain.stdout, tool.stdout)


def test_a_recording_made_in_a_git_repository_replays_outside_one(recorded_in_git, tmp_path):
    """The reverse of a scratch-directory recording replayed in a CI checkout: the git
    status block is on the recording's side only, the environment section says false."""
    assert "# gitStatus" in recorded_in_git.plain.read_text(encoding="utf-8")
    assert "Is a git repository: true" in recorded_in_git.plain.read_text(encoding="utf-8")
    _both_turns_hit(recorded_in_git, _project(tmp_path / "scratch"), tmp_path)


def test_a_recording_made_outside_git_replays_in_a_checkout_on_another_branch(recorded, tmp_path):
    folder = _project(tmp_path / "ci" / "checkout")
    git_repository(folder)
    git = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "checkout", "-q", "-b", "ci-run"],
        cwd=folder,
        env={**os.environ, **git},
        check=True,
        timeout=30,
    )
    tool = replay(_copy(recorded.tool, tmp_path), folder, tmp_path / "h", "-p", TOOL, *TOOL_ARGS)
    _hits(tool, 2, recorded.tool_out)
