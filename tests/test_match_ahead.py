"""A replay in other directories than the recording's (CI replaying a developer's
cassette) applies its own rules to the recorded requests as it starts, between calls:
its first call, through the official ``openai`` SDK, then normalises only what it brings
new, and still hits; in the recording's own directories there is nothing to do."""

from __future__ import annotations

import time
from pathlib import Path

import openai
import pytest

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.matching import runs
from otel_replay.session.session import Session
from otel_replay.testing.stub import run_stub

SYSTEM = "You review pull requests. " + " ".join(f"rule {i}: be exact." for i in range(300))
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": f"Tool {i}. " + "Reads a file and returns its lines. " * 40,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for i in range(3)
]


def _ask(client: openai.OpenAI, here: Path, file: str = "app") -> str:
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"review {here}/src/{file}.py"},
        ],
        tools=TOOLS,  # type: ignore[arg-type]
    )
    return reply.choices[0].message.content or ""


def _record(folder: Path, monkeypatch: pytest.MonkeyPatch, asks: int = 1) -> tuple[Path, str]:
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(folder.parent))
    cassette = folder / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gw:
            client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="k", max_retries=0)
            answer = _ask(client, folder)
            for n in range(1, asks):
                _ask(client, folder, f"module_{n}")
    places = load(cassette).source["rules"]["places"]
    assert places == {"cwd": str(folder), "home": str(folder.parent)}
    return cassette, answer


class _Counted(runs.ValueTemplate):
    """Items walked: into a template, or numbered as they are walked (``_Walking``)."""

    made = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        _Counted.made += 1
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


class _Walking(runs._Counting):
    def __init__(self, *args: object, **kwargs: object) -> None:
        _Counted.made += 1
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def test_a_replay_elsewhere_has_its_rules_applied_to_the_recordings_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "alice" / "proj", tmp_path / "ci" / "runner" / "proj"
    for folder in (first, second):
        folder.mkdir(parents=True)
    cassette, recorded_answer = _record(first, monkeypatch)

    monkeypatch.chdir(second)
    monkeypatch.setenv("HOME", str(second.parent))
    monkeypatch.setattr(runs, "ValueTemplate", _Counted)
    monkeypatch.setattr(runs, "_Counting", _Walking)
    config = GatewayConfig(mode="strict", cassette=cassette)
    with GatewayThread(config) as gw:
        assert gw.server is not None
        deadline = time.monotonic() + 30
        while gw.server._matching is None or not gw.server._matching.done():
            assert time.monotonic() < deadline, "the rules were never applied ahead"
            time.sleep(0.01)
        # the system prompt, the user message and each tool: walked once each as the
        # cassette was indexed (the recording's rules), and once each ahead (this run's)
        items = 2 + len(TOOLS)
        assert _Counted.made == 2 * items
        client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="k", max_retries=0)
        answer = _ask(client, second)
    assert answer == recorded_answer  # a hit: strict mode would have refused a miss
    assert gw.summary is not None and gw.summary.replayed == 1
    # the call brought one item of its own (the user message names this directory); the
    # recorded system prompt and tools it resent were done ahead
    assert _Counted.made == 2 * items + 1


def test_in_the_recording_directories_nothing_is_applied_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "alice" / "proj"
    folder.mkdir(parents=True)
    cassette, _ = _record(folder, monkeypatch)
    assert list(Session(mode="strict", cassette=cassette).warming()) == []
    assert list(Session(mode="record", cassette=folder / "new.json").warming()) == []
    monkeypatch.chdir(tmp_path)  # elsewhere: a step for its one recording
    assert len(list(Session(mode="strict", cassette=cassette).warming())) == 1


def test_a_large_cassette_is_applied_ahead_for_its_first_recordings_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memo of normalised items starts afresh when full: filling it ahead with every
    recording of a large cassette would drop the first ones, which a run meets first."""
    from otel_replay.session import index as module

    folder = tmp_path / "alice" / "proj"
    folder.mkdir(parents=True)
    cassette, _ = _record(folder, monkeypatch, asks=3)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(module, "_AHEAD_ITEMS", 6)
    # the first recording brings 5 items, each later one its own user message: a sixth,
    # then a seventh
    assert len(list(Session(mode="strict", cassette=cassette).warming())) == 2
