"""``otel-replay refresh``: a cassette recorded by a command is recorded again by it.

A small agent script (the official ``openai`` SDK) is recorded through the CLI against a
stub upstream; the stub's answer then changes, and ``refresh`` runs the recorded command
again — from another directory, as a teammate would — into the same cassette.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from schema_check import validate_cassette_file

from otel_replay.cassette.model import load
from otel_replay.cassette.provenance import recorded_run, run_directory, run_source
from otel_replay.frontends import api
from otel_replay.testing.stub import Fault, StubUpstream, run_stub

CLI = [sys.executable, "-m", "otel_replay"]
QUESTION = "What is the weather in Paris?"
AGENT = textwrap.dedent(
    f"""
    import openai

    with openai.OpenAI(max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{{"role": "user", "content": {QUESTION!r}}}]
        )
    print(reply.choices[0].message.content)
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test-refresh-0000"}


def _answer(cassette: Path) -> str:
    (interaction,) = load(cassette).interactions
    body = interaction.response.body
    assert isinstance(body, dict)
    return str(body["choices"][0]["message"]["content"])


def _chat_answer(text: str) -> dict[str, object]:
    message = {"role": "assistant", "content": text}
    return {
        "id": "chatcmpl-new",
        "object": "chat.completion",
        "created": 1700000001,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, StubUpstream]]:
    """A project whose cassette ``cassettes/weather.json`` was recorded from its root by
    ``otel-replay record -- python agent.py`` (its spans kept in ``traces.jsonl``); the
    stub keeps running for the module."""
    project = tmp_path_factory.mktemp("recording") / "project"
    (project / "cassettes").mkdir(parents=True)
    (project / "agent.py").write_text(AGENT, encoding="utf-8")
    with run_stub() as stub:
        record = [*CLI, "record", "--cassette", "cassettes/weather.json", "--traces"]
        record += ["traces.jsonl", "--upstream-openai", stub.openai_url]
        record += ["--", sys.executable, "agent.py"]
        done = subprocess.run(record, cwd=project, env=_env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"stub reply to: {QUESTION}"
        yield project, stub


@pytest.fixture
def recorded(recording, tmp_path: Path) -> tuple[Path, StubUpstream]:
    """This test's copy of the recorded project: its cassette, and the stub."""
    template, stub = recording
    project = shutil.copytree(template, tmp_path / "project")
    stub.faults.clear()
    return project / "cassettes" / "weather.json", stub


def _refresh(cassette: Path, *extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "refresh", str(cassette), *extra],
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_refresh_records_the_new_answer_with_the_recorded_command(recorded, tmp_path):
    cassette, stub = recorded
    source = load(cassette).source
    assert source["command"] == [sys.executable, "agent.py"]
    assert source["cwd"] == ".."
    assert source["upstreams"] == {"openai": stub.openai_url}
    stub.enqueue(Fault("status", status=200, body=_chat_answer("rain in Paris all week")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rel = Path(os.path.relpath(cassette, elsewhere))

    done = _refresh(rel, "--yes", cwd=elsewhere)

    assert done.returncode == 0, done.stderr
    assert f"{sys.executable} agent.py" in done.stdout
    assert f"in {cassette.parent.parent}" in done.stdout
    assert "1 interaction recorded again" in done.stderr
    assert _answer(cassette) == "rain in Paris all week"
    validate_cassette_file(cassette)
    assert recorded_run(load(cassette).source, cassette) == recorded_run(source, cassette)
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["weather.json"]


def test_refresh_without_a_terminal_needs_yes_and_changes_nothing(recorded):
    cassette, stub = recorded
    before, calls = cassette.read_bytes(), len(stub.received)
    stub.enqueue(Fault("status", status=200, body=_chat_answer("never recorded")))

    done = _refresh(cassette, cwd=cassette.parent)

    assert done.returncode == 2
    assert "no terminal to confirm at; pass --yes" in done.stderr
    assert f"{sys.executable} agent.py" in done.stdout  # shown before anything runs
    assert cassette.read_bytes() == before
    assert len(stub.received) == calls  # nothing ran


def test_refresh_at_a_terminal_runs_only_on_yes(recorded):
    cassette, stub = recorded
    before, calls = cassette.read_bytes(), len(stub.received)
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"n\n")
        done = subprocess.run(
            [*CLI, "refresh", str(cassette)],
            env=_env(),
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 1
    assert "[y/N]" in done.stdout and "not confirmed" in done.stderr
    assert cassette.read_bytes() == before and len(stub.received) == calls


def test_a_failed_rerun_keeps_the_cassette(recorded):
    cassette, stub = recorded
    before = cassette.read_bytes()
    stub.enqueue(Fault("status", status=400, body={"error": {"message": "bad request"}}))

    done = _refresh(cassette, "--yes", cwd=cassette.parent)

    assert done.returncode != 0
    assert "is unchanged" in done.stderr
    assert cassette.read_bytes() == before
    assert sorted(p.name for p in cassette.parent.iterdir()) == ["weather.json"]


def test_a_cassette_built_from_traces_has_no_command(recorded):
    cassette, _stub = recorded
    built = cassette.with_name("built.json")
    traces = cassette.parent.parent / "traces.jsonl"
    assert subprocess.call([*CLI, "build", str(traces), "-o", str(built)]) == 0
    before = built.read_bytes()

    done = _refresh(built, "--yes", cwd=cassette.parent)

    assert done.returncode == 2
    assert "records no command to run again (it was built from traces:" in done.stderr
    assert f"otel-replay record --cassette {built} -- CMD" in done.stderr
    assert built.read_bytes() == before


def test_a_cassette_recorded_by_tests_says_how_to_record_it_again(tmp_path):
    cassette = tmp_path / "cassettes" / "t.json"
    with run_stub() as stub, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-test-refresh-0000")
        with api.record(cassette, upstream_openai=stub.openai_url) as gateway:
            with openai.OpenAI(base_url=gateway.env["OPENAI_BASE_URL"], max_retries=0) as client:
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}]
                )
    done = _refresh(cassette, "--yes", cwd=tmp_path)
    assert done.returncode == 2
    assert "(it was recorded by tests, not by a command)" in done.stderr
    assert "`pytest --otel-replay=record`" in done.stderr


def test_a_recorded_command_keeps_where_it_ran_and_its_upstreams(tmp_path):
    cassette = tmp_path / "tests" / "cassettes" / "x.json"
    where = run_directory(cassette, str(tmp_path))
    assert where == "../.."
    source = run_source(
        ["python", "agent.py"], None, str, cwd=where, upstreams={"groq": "http://h/v1"}
    )
    run = recorded_run(json.loads(json.dumps(source)), cassette)
    assert run is not None
    assert run.command == ["python", "agent.py"]
    assert run.cwd == tmp_path.resolve()
    assert run.upstreams == {"groq": "http://h/v1"}
    assert recorded_run({"command": "build"}, cassette) is None
    assert "cwd" not in run_source([], None, str, cwd=where)
