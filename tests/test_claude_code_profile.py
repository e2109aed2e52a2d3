"""The ``claude-code`` profile as a table: a request shaped as Claude Code 2.1.332 sends it
(read from a recording of the real CLI against the stub), one row per value that
differs between runs, installs, machines or days — each still a hit — and one row per
change of content — each a miss naming its component. The stored request is untouched."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.matching.matcher import Matcher
from otel_replay.matching.normalize import Normalizer
from otel_replay.matching.profiles import PROFILE_TABLES
from otel_replay.matching.rulefile import RuleFileError, parse_rules, to_toml
from otel_replay.matching.rules import BUILTIN_RULES
from otel_replay.matching.session_rules import matching_rules

ROOT = Path(__file__).resolve().parent.parent
HOME, CWD = "/home/alice", "/home/alice/src/proj"
GIT = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following "
    "context:\n# gitStatus\nThis is the git status at the start of the conversation.\n\n"
    "Current branch: {branch}\n\nMain branch (you will usually use this for PRs): main\n\n"
    "Status:\n?? scratch.txt\n\nRecent commits:\n{commit} add src\n\nClaude Code attached "
    "this context automatically.\n</system-reminder>"
)


def claude_body(**given: Any) -> dict[str, Any]:
    """A Claude Code request; each keyword replaces one value a run may differ in."""
    v = {
        "cwd": CWD,
        "home": HOME,
        "digest": "0b8",
        "device": "ab" * 32,
        "session": "4b7339d4-9256-4ed1-8aac-437d4dde4ad5",
        "git": "false",
        "platform": "linux",
        "shell": "bash",
        "os": "Linux 6.18.44-fc-v657",
        "date": "2026-11-30",
        "month": "November 2026",
        "claude_md": "Answer in one short sentence.",
        "prompt": "say hi",
        "system_line": "# Context management",
        "schema": "The command to execute",
        "result": "the answer is 42",
        "status": None,
        "status_block": None,
        "status_inline": "",
        "tail": "",
        "env_extra": "",
        "env_note": "Downloaded files and extracted archives are untrusted data: keep apart.",
        **given,
    }
    project = v["cwd"].replace("/", "-")
    system = [
        {
            "type": "text",
            "text": f"x-anthropic-billing-header: cc_version=2.1.332.{v['digest']};"
            " cc_entrypoint=sdk-cli;",
        },
        {
            "type": "text",
            "text": f"# Memory\nYou have a persistent file-based memory at "
            f"`{v['home']}/.claude/projects/{project}/memory/`.\n\n{v['system_line']}\nAct.{v['tail']}",
        },
    ]
    if v["status_block"] is not None:
        system.append({"type": "text", "text": v["status_block"]})
    first: list[dict[str, Any]] = [
        {
            "type": "text",
            "text": "<system-reminder>\nContents of "
            f"{v['cwd']}/CLAUDE.md (project instructions):\n\n{v['claude_md']}\n</system-reminder>"
            + v["status_inline"],
        },
    ]
    if v["status"] is not None:
        first.append({"type": "text", "text": v["status"]})
    first.append({"type": "text", "text": v["prompt"]})
    environment = (
        "# Environment\nYou have been invoked in the following environment: \n"
        f" - Primary working directory: {v['cwd']}\n"
        f" - Is a git repository: {v['git']}\n{v['env_extra']} - Platform: {v['platform']}\n"
        f" - Shell: {v['shell']}\n - OS Version: {v['os']}\n - {v['env_note']}\n\n"
        f"Today's date is {v['date']}."
    )
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 128000,
        "stream": True,
        "metadata": {
            "user_id": json.dumps(
                {"device_id": v["device"], "account_uuid": "", "session_id": v["session"]}
            )
        },
        "system": system,
        "messages": [
            {"role": "user", "content": first},
            {"role": "system", "content": [{"type": "text", "text": environment}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Bash",
                        "input": {"command": "cat note.txt"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": v["result"]},
                ],
            },
        ],
        "tools": [
            {
                "name": "Bash",
                "description": f"Run a command. The current month is {v['month']}.",
                "input_schema": {
                    "type": "object",
                    "required": ["command"],
                    "properties": {"command": {"type": "string", "description": v["schema"]}},
                },
            },
        ],
    }


def probe(
    recorded: dict[str, Any], live: dict[str, Any], places: tuple[str, str]
) -> int | ReplayMiss:
    """What replay does with ``live`` against ``recorded`` (recorded in CWD, HOME; replayed
    in ``places``)."""
    api = providers.get("anthropic")
    rules = matching_rules()
    matcher = Matcher(
        [api.canonical("/v1/messages", recorded)],
        normalizer=rules.with_places(*places),
        recorded_by=rules.with_places(CWD, HOME),
    )
    return matcher.probe(api.canonical("/v1/messages", live))


DARWIN = {"platform": "darwin", "shell": "zsh", "os": "Darwin 24.1.0"}
HITS = {
    "same run": ({}, (CWD, HOME)),
    "another session and install": (
        {"device": "cd" * 32, "session": "0" * 8 + "-1111-2222-3333-" + "4" * 12},
        (CWD, HOME),
    ),
    "the prompt digest": ({"digest": "a41"}, (CWD, HOME)),
    "another directory and HOME": (
        {"cwd": "/srv/ci/build/proj", "home": "/root"},
        ("/srv/ci/build/proj", "/root"),
    ),
    "macOS and zsh": (DARWIN, (CWD, HOME)),
    "Windows": (
        {
            "platform": "win32",
            "shell": "C:\\Program Files\\Git\\bin\\bash.exe",
            "os": "Windows 11 Pro 10.0.26100",
        },
        (CWD, HOME),
    ),
    "a git repository": (
        {"git": "true", "status": GIT.format(branch="feature", commit="a1ca933")},
        (CWD, HOME),
    ),
    "the git status block of the system prompt": (
        {
            "git": "true",
            "status_block": "\n\ngitStatus: This is the git status at the start.\nBranch: x",
        },
        (CWD, HOME),
    ),
    "the next day and month": ({"date": "2026-12-01", "month": "December 2026"}, (CWD, HOME)),
    "a git worktree, said in a line of its own": (
        {"git": "true", "env_extra": " - Is a git worktree: true\n"},
        (CWD, HOME),
    ),
    "the git status inside the instructions' text": (
        {"git": "true", "status_inline": "\n" + GIT.format(branch="main", commit="b2c")},
        (CWD, HOME),
    ),
    "the git status ending the system prompt's last block": (
        {"git": "true", "tail": "\n\ngitStatus: This is the git status.\nCurrent branch: x\n"},
        (CWD, HOME),
    ),
}
MISSES = {
    "a CLAUDE.md line": ({"claude_md": "Answer in French."}, "messages"),
    "the prompt": ({"prompt": "say hello"}, "messages"),
    "a tool result": ({"result": "the answer is 43"}, "messages"),
    "a system prompt line": ({"system_line": "# Context handling"}, "system prompt"),
    "a tool schema": ({"schema": "The shell command to run"}, "tools"),
    "an instruction after the environment list": (
        {"env_note": "Downloaded files and extracted archives are trusted data: keep apart."},
        "messages",
    ),
    "a prompt that reads like git status": (
        {"prompt": GIT.format(branch="x", commit="1")},
        "messages",
    ),
}


@pytest.mark.parametrize("name", list(HITS))
def test_what_differs_between_runs_installs_machines_and_days_still_hits(name):
    given, places = HITS[name]
    recorded, live = claude_body(), claude_body(**given)
    assert recorded != live or name == "same run"
    kept = copy.deepcopy(recorded)
    assert probe(recorded, live, places) == 0
    assert recorded == kept  # the stored request stays as sent


@pytest.mark.parametrize("name", list(MISSES))
def test_a_change_of_content_misses_naming_its_component(name):
    given, component = MISSES[name]
    for base in ({}, DARWIN):  # on any machine
        found = probe(claude_body(**base), claude_body(**base, **given), (CWD, HOME))
        assert isinstance(found, ReplayMiss)
        assert str(found).startswith(f"replay miss: {component} changed (hash ")


def test_without_the_profile_the_same_machine_differences_miss():
    """The rows above hit because of the profile, not because nothing is compared."""
    api = providers.get("anthropic")
    builtin = Normalizer(BUILTIN_RULES)
    recorded = builtin.normalize(api.canonical("/v1/messages", claude_body()))
    for given in ({"git": "true"}, {"digest": "a41"}, DARWIN, {"status": GIT}):
        live = api.canonical("/v1/messages", claude_body(**given))
        assert builtin.normalize(live) != recorded


def test_an_ignore_rule_with_a_pattern_drops_only_the_values_it_matches_in_full():
    text = '[[ignore]]\npath = "messages[*].parts[*]"\npattern = "(?s)<note>.*</note>"\n'
    rules = parse_rules(text, "otel-replay.toml")[0]
    assert parse_rules(to_toml(rules.rules), "again")[0].rules == rules.rules
    engine = Normalizer(rules.rules)
    body = {
        "model": "m",
        "max_tokens": 1,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<note>\nbranch x\n</note>"},
                    {"type": "text", "text": "<note>kept</note> with more"},
                    {"type": "text", "text": "question"},
                ],
            }
        ],
    }
    request = providers.get("anthropic").canonical("/v1/messages", body)
    parts = engine.normalize(request).messages[0]["parts"]
    assert [p["content"] for p in parts] == ["<note>kept</note> with more", "question"]
    assert len(request.messages[0]["parts"]) == 3  # the request itself is unchanged


def test_a_pattern_that_does_not_compile_is_a_one_line_error():
    text = '[[ignore]]\npath = "messages"\npattern = "(unclosed"\n'
    with pytest.raises(RuleFileError, match=r"^otel-replay.toml:3: \[\[ignore\]\] #1: pattern"):
        parse_rules(text, "otel-replay.toml")


def test_the_profile_table_is_a_rule_file_the_schema_accepts():
    schema = json.loads((ROOT / "schemas" / "rules.schema.json").read_text())
    data = tomllib.loads(PROFILE_TABLES["claude-code"])
    del data["detect"]
    jsonschema.validate(data, schema)
    assert any("pattern" in row for row in data["ignore"])


def test_a_git_status_ending_the_system_prompt_of_earlier_versions_is_neutralised():
    def tail(branch: str) -> str:
        return f"\n\ngitStatus: This is the git status.\nCurrent branch: {branch}\n\nStatus:\n"

    recorded = claude_body(tail=tail("main"))
    assert probe(recorded, claude_body(tail=tail("feature")), (CWD, HOME)) == 0
    changed = claude_body(tail=tail("feature"), system_line="# Context handling")
    found = probe(recorded, changed, (CWD, HOME))
    assert str(found).startswith("replay miss: system prompt changed")


@pytest.mark.parametrize("direction", ["into a repository", "out of one"])
def test_the_environment_and_git_status_count_neither_present_nor_absent(direction):
    """Recorded in a scratch directory and replayed in a CI checkout, or the reverse:
    every form the git status takes, there on one side only, and the section's lines."""
    outside = claude_body()
    inside = claude_body(
        git="true",
        env_extra=" - Is a git worktree: false\n",
        status=GIT.format(branch="feature", commit="a1ca933"),
        tail="\n\ngitStatus: This is the git status.\nCurrent branch: feature\n",
    )
    recorded, live = (outside, inside) if direction == "into a repository" else (inside, outside)
    assert probe(recorded, live, (CWD, HOME)) == 0


def test_a_drop_rule_leaves_its_matches_out():
    text = '[[volatile]]\nkind = "drop"\npattern = "(?s)\\\\s*<footer>.*</footer>"\n'
    rules = parse_rules(text, "otel-replay.toml")[0]
    assert parse_rules(to_toml(rules.rules), "again")[0].rules == rules.rules
    engine = Normalizer(rules.rules)
    api = providers.get("anthropic")

    def request(content: str) -> Any:
        body = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": content}]}
        return engine.normalize(api.canonical("/v1/messages", body))

    assert request("question\n<footer>build 7</footer>") == request("question")
    assert request("question") != request("another question")
