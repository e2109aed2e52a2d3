"""Several OpenAI-compatible upstreams through one gateway: an agent with two real
``openai`` clients, each on its own named upstream (``--upstream NAME=URL``), recorded
against two stub hosts and replayed strictly with both stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from conftest import files_text

import otel_replay
from otel_replay.cassette.model import load
from otel_replay.core.errors import ConfigError
from otel_replay.frontends import cli, runcmd
from otel_replay.testing.stub import Fault, run_stub

KEYS = {"GROQ_API_KEY": "gsk_groqgroqgroqgroqgroq0123456789", "MISTRAL_API_KEY": "mistral0123"}
QUESTION = [{"role": "user", "content": "which host answers?"}]
# the Mistral host answers its first call its own way: replay must not cross the two
MISTRAL_ANSWER = {
    "id": "cmpl-mistral",
    "object": "chat.completion",
    "created": 1764460800,
    "model": "shared-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "mistral says hi"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
}


def agent() -> dict[str, Any]:
    """The same question, same model, to each host; and a stream from each."""
    out: dict[str, Any] = {}
    for name in ("groq", "mistral"):
        env = name.upper()
        with openai.OpenAI(
            base_url=os.environ[f"{env}_BASE_URL"],
            api_key=os.environ[f"{env}_API_KEY"],
            max_retries=0,
        ) as client:
            reply = client.chat.completions.create(model="shared-model", messages=QUESTION)
            stream = client.chat.completions.create(
                model="shared-model", messages=[{"role": "user", "content": name}], stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        out[name] = (reply.choices[0].message.content, text)
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list]:
    tmp = tmp_path_factory.mktemp("upstreams")
    cassette, traces = tmp / "two.json", tmp / "two.jsonl"
    with pytest.MonkeyPatch.context() as mp, run_stub() as groq, run_stub() as mistral:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        for name, value in KEYS.items():
            mp.setenv(name, value)
        mistral.enqueue(Fault("status", 200, MISTRAL_ANSWER, path="/chat/completions"))
        hosts = {"groq": groq.openai_url, "mistral": mistral.openai_url}
        with otel_replay.record(cassette, traces=traces, upstreams=hosts) as run:
            assert os.environ["GROQ_BASE_URL"] == f"{run.url}/u/groq/v1"
            results = agent()
        assert run.summary is not None and run.summary.live == 4
    return cassette, results, [groq.received, mistral.received]


def test_each_client_reached_its_own_host_with_its_own_key(recorded):
    _, results, (groq, mistral) = recorded
    assert results == {
        "groq": ("stub reply to: which host answers?", "stub reply to: groq"),
        "mistral": ("mistral says hi", "stub reply to: mistral"),
    }
    assert [r.path for r in groq] == [r.path for r in mistral] == ["/v1/chat/completions"] * 2
    assert {r.headers["authorization"] for r in groq} == {f"Bearer {KEYS['GROQ_API_KEY']}"}
    assert {r.headers["authorization"] for r in mistral} == {f"Bearer {KEYS['MISTRAL_API_KEY']}"}


def test_recorded_per_upstream_with_its_provider_name(recorded):
    cassette, _, _ = recorded
    interactions = load(cassette).interactions
    assert [(i.provider, i.request.endpoint) for i in interactions] == [
        ("openai", "/u/groq/v1/chat/completions"),
        ("openai", "/u/groq/v1/chat/completions"),
        ("openai", "/u/mistral/v1/chat/completions"),
        ("openai", "/u/mistral/v1/chat/completions"),
    ]
    names = [
        attribute["value"]["stringValue"]
        for line in cassette.with_suffix(".jsonl").read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for attribute in span["attributes"]
        if attribute["key"] == "gen_ai.provider.name"
    ]
    assert names == ["groq", "groq", "mistral_ai", "mistral_ai"]
    text = files_text(cassette.parent)
    assert not [key for key in KEYS.values() if key in text]


def test_strict_replay_with_both_hosts_stopped(recorded, monkeypatch):
    cassette, results, _ = recorded
    # the cassette knows its upstreams: the agent gets their variables without --upstream
    with otel_replay.replay(cassette, mode="strict") as run:
        assert os.environ["MISTRAL_API_KEY"] == "otel-replay-no-key"
        replayed = agent()
    assert replayed == results
    assert run.summary is not None
    assert (run.summary.replayed, run.summary.misses) == (4, [])


def test_a_host_nobody_named_is_a_clear_miss_in_record(tmp_path, monkeypatch):
    monkeypatch.setenv("OTHER_API_KEY", "k")
    with pytest.raises(otel_replay.ReplayMiss, match=r"pass --upstream other=URL"):
        with otel_replay.record(tmp_path / "c.json") as run:
            client = openai.OpenAI(base_url=f"{run.url}/u/other/v1", api_key="k", max_retries=0)
            with pytest.raises(openai.APIStatusError, match="no other upstream"):
                client.chat.completions.create(model="m", messages=QUESTION)


def test_the_command_line_takes_upstreams_by_name(capsys):
    args = cli._parser().parse_args(
        ["record", "--cassette", "c.json", "--upstream", "groq", "--upstream", "lab=http://h:8/v1"]
    )
    config = runcmd.gateway_config(args, "record", ["agent"])
    assert config.named_upstreams() == {
        "groq": "https://api.groq.com/openai/v1",
        "lab": "http://h:8/v1",
    }
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["record", "--cassette", "c.json", "--upstream", "lab"])
    assert "--upstream 'lab': give NAME=URL" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="upstreams: 'Lab!=x'"):
        with otel_replay.replay("c.json", upstreams={"Lab!": "x"}):
            pass


def test_the_pytest_plugin_takes_upstreams_by_name(recorded, pytester: pytest.Pytester):
    cassette, results, _ = recorded
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        f"""
        import os
        from test_upstreams import agent

        def test_two_hosts(otel_replay):
            with otel_replay({str(cassette)!r}, mode="strict"):
                assert os.environ["GROQ_BASE_URL"].endswith("/u/groq/v1")
                assert agent() == {results!r}
        """
    )
    result = pytester.runpytest_inprocess(
        "-p",
        "no:hypothesispytest",
        "--otel-replay-upstream",
        "groq",
        "--otel-replay-upstream=mistral=https://mistral.test/v1",
    )
    result.assert_outcomes(passed=1)


def test_auto_forwards_a_miss_with_the_callers_own_key_for_that_host(recorded, tmp_path):
    cassette = tmp_path / "c.json"
    cassette.write_bytes(recorded[0].read_bytes())
    new = [{"role": "user", "content": "never recorded"}]
    answers = []
    with run_stub() as groq, pytest.MonkeyPatch.context() as mp:
        mp.setenv("GROQ_API_KEY", KEYS["GROQ_API_KEY"])
        # the first call (another key) stays a miss, which the block then reports
        with pytest.raises(otel_replay.ReplayMiss, match="messages changed"):
            with otel_replay.replay(cassette, mode="auto", upstreams={"groq": groq.openai_url}):
                for key in ("not-the-callers", KEYS["GROQ_API_KEY"]):
                    with openai.OpenAI(
                        base_url=os.environ["GROQ_BASE_URL"], api_key=key, max_retries=0
                    ) as client:
                        try:
                            reply = client.chat.completions.create(
                                model="shared-model", messages=new
                            )
                        except openai.BadRequestError as exc:
                            answers.append(str(exc))
                        else:
                            answers.append(reply.choices[0].message.content)
    assert "replay miss: messages changed" in answers[0]
    assert answers[1] == "stub reply to: never recorded"
    assert [r.headers["authorization"] for r in groq.received] == [f"Bearer {KEYS['GROQ_API_KEY']}"]


CLI_AGENT = """
import os, openai
with openai.OpenAI(base_url=os.environ["LAB_BASE_URL"], max_retries=0,
                   api_key=os.environ["LAB_API_KEY"]) as client:
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
print(reply.choices[0].message.content)
"""


def test_cli_records_and_replays_a_named_upstream(tmp_path):
    cassette = tmp_path / "c.json"
    cli_run = [sys.executable, "-m", "otel_replay"]
    agent_run = ["--", sys.executable, "-c", CLI_AGENT]
    env = {**os.environ, "LAB_API_KEY": "lab-key-0123456789"}
    with run_stub() as lab:
        args = ["record", "--cassette", str(cassette), "--upstream", f"lab={lab.openai_url}"]
        rec = subprocess.run(
            [*cli_run, *args, *agent_run], capture_output=True, text=True, env=env, timeout=60
        )
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "stub reply to: hi\n"
    assert lab.received[0].headers["authorization"] == "Bearer lab-key-0123456789"
    env.pop("LAB_API_KEY")
    args = ["replay", "--cassette", str(cassette), "--mode", "strict"]
    rep = subprocess.run(
        [*cli_run, *args, *agent_run], capture_output=True, text=True, env=env, timeout=60
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout and "1 replayed · 0 live · 0 misses" in rep.stderr
