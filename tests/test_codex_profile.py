"""The ``codex`` profile on a request the real Codex CLI sent (the tool turn's second call,
which carries every per-machine value): the same request from another machine — macOS paths,
another CODEX_HOME, zsh, another time zone, a git checkout, another run's times — matches,
while a changed instruction, prompt, tool result or tool schema still misses, naming the
component. One row per change, compared against the recording."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from codex_runs import NOTE, codex_recordings

from otel_replay.cassette.model import load
from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.matcher import differences
from otel_replay.matching.profiles import recorded_places
from otel_replay.matching.session_rules import matching_rules

__all__ = ["codex_recordings"]  # the session fixture, used here

MAC_CWD, MAC_HOME = "/Users/ana/src/shop", "/Users/ana"


def _recorded(codex_recordings: Any) -> tuple[CanonicalRequest, tuple[str, str], Path]:
    cassette = load(codex_recordings["tool"].cassette)
    places = recorded_places(cassette.source)
    assert places is not None
    home = codex_recordings["tool"].cassette.parent / "codex-home"
    # over its WebSocket Codex sends a turn's new items only, after the last response's id:
    # the tool result's turn read whole is every item sent so far, with that turn's settings
    turns = [i.request for i in cassette.interactions if i.request.messages]
    whole = [message for turn in turns for message in turn.messages]
    return dataclasses.replace(turns[-1], messages=whole), places, home


def _edit(request: CanonicalRequest, pairs: list[tuple[str, str]], **meta: Any) -> CanonicalRequest:
    """``request`` with each pattern replaced in its messages (each must occur) and the
    turn metadata's fields set (None: removed)."""
    text = json.dumps(request.messages)
    for old, new in pairs:
        assert re.search(old, text), old
        text = re.sub(old, new, text)
    params = json.loads(json.dumps(request.params))
    metadata = params["client_metadata"]
    turn = json.loads(metadata["x-codex-turn-metadata"])
    for key, value in meta.items():
        turn.pop(key, None) if value is None else turn.__setitem__(key, value)
    metadata["x-codex-turn-metadata"] = json.dumps(turn)
    return dataclasses.replace(request, messages=json.loads(text), params=params)


def _another_machine(request: CanonicalRequest, cwd: str, home: Path) -> CanonicalRequest:
    time = json.loads(request.params["client_metadata"]["x-codex-turn-metadata"])
    return _edit(
        request,
        [
            (re.escape(cwd), MAC_CWD),
            (re.escape(str(home)), f"{MAC_HOME}/.codex"),
            ("<shell>bash</shell>", "<shell>zsh</shell>"),
            ("<timezone>[^<]*</timezone>", "<timezone>Europe/Lisbon</timezone>"),
            (r"Wall time [0-9.]+ seconds", "Wall time 12.3 seconds"),
            (r'"create_time": [0-9.]+', '"create_time": 1800000000.25'),
        ],
        turn_started_at_unix_ms=time["turn_started_at_unix_ms"] + 86_400_000,
        workspaces={MAC_CWD: {"latest_git_commit_hash": "ab" * 20, "has_changes": True}},
    )


def _compare(recorded: CanonicalRequest, places: tuple[str, str], live: CanonicalRequest):
    rules = matching_rules()
    was = rules.with_places(*places).normalize(recorded)
    now = rules.with_places(MAC_CWD, MAC_HOME).normalize(live)
    return sorted(differences(was, now))


def test_the_same_request_from_another_machine_matches(codex_recordings):
    recorded, places, home = _recorded(codex_recordings)
    assert _compare(recorded, places, _another_machine(recorded, places[0], home)) == []


CHANGES = {
    "a line of AGENTS.md": ([("Use British spelling", "Use American spelling")], "messages"),
    "the prompt": ([("what does note", "what does todo")], "messages"),
    "the tool result": ([(NOTE.strip(), "the build is red")], "messages"),
    "a tool schema": ([("Shell command to execute", "Command to run")], "messages"),
    "the shell's instructions": ([("Runs a command in a PTY", "Runs a command")], "messages"),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_content_that_counts_still_misses(codex_recordings, change):
    recorded, places, home = _recorded(codex_recordings)
    pairs, component = CHANGES[change]
    live = _edit(_another_machine(recorded, places[0], home), pairs)
    assert _compare(recorded, places, live) == [component]


def test_turn_metadata_that_counts_still_misses(codex_recordings):
    recorded, places, home = _recorded(codex_recordings)
    live = _another_machine(recorded, places[0], home)
    live = _edit(live, [], sandbox_mode="danger-full-access")
    assert _compare(recorded, places, live) == ["params"]
