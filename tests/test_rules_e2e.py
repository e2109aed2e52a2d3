"""End to end with the official ``openai`` SDK: an agent carrying a field no built-in rule
covers records, misses on strict replay, ``why --suggest`` prints a rule, and that rule in
``otel-replay.toml`` where the replay runs makes the same replay hit; a changed prompt
still misses with the same message as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
AGENT = """\
import secrets, sys
import openai

client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": sys.argv[1]}],
    metadata={"run_started": secrets.token_hex(4), "team": "travel"},
)
print(reply.choices[0].message.content)
"""


def cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_why_suggest_turns_a_miss_into_a_hit_and_content_still_misses(tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    agent = [sys.executable, "agent.py"]
    with run_stub() as stub:
        record = ["record", "--cassette", "c.json", "--upstream-openai", stub.openai_url]
        rec = cli(
            [*record, "--", *agent, "Lisbon"],
            tmp_path,
            OPENAI_API_KEY="sk-test-1234567890",
        )
    assert rec.returncode == 0, rec.stderr
    assert "rules" not in load(tmp_path / "c.json").source  # no rules in force: none recorded

    replay = ["replay", "--cassette", "c.json", "--mode", "strict", "--", *agent]
    missed = cli([*replay, "Lisbon"], tmp_path)
    assert missed.returncode == 1
    assert "replay miss: params changed (hash " in missed.stderr

    why = cli(["why", "--cassette", "c.json", "--suggest"], tmp_path)
    assert why.returncode == 0, why.stderr
    assert why.stdout == (
        "[[ignore]]\n"
        'path = "params.metadata.run_started"\n'
        'provider = "openai"\n'
        'model = "gpt-4o-mini"\n'
    )
    assert "also hides any other value of this field" in why.stderr

    with (tmp_path / "otel-replay.toml").open("a") as rule_file:
        rule_file.write(why.stdout)
    hit = cli([*replay, "Lisbon"], tmp_path)
    assert hit.returncode == 0, hit.stderr
    assert "1 replayed · 0 live · 0 misses" in hit.stderr

    changed = cli([*replay, "Oslo"], tmp_path)
    (tmp_path / "otel-replay.toml").unlink()
    before = cli([*replay, "Oslo"], tmp_path)
    assert changed.returncode == before.returncode == 1
    prefix = "otel-replay: replay miss: "
    message = [line for line in changed.stderr.splitlines() if line.startswith(prefix)]
    assert message and message[0].startswith(prefix + "messages changed (hash ")
    assert message == [line for line in before.stderr.splitlines() if line.startswith(prefix)]

    refused = cli(["why", "--cassette", "c.json", "--suggest"], tmp_path)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "content that should count" in refused.stderr


def test_recording_with_a_rule_file_records_the_rules_and_replays_by_them(tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    agent = [sys.executable, "agent.py", "Lisbon"]
    (tmp_path / "otel-replay.toml").write_text('[[ignore]]\npath = "params.metadata.run_*"\n')
    with run_stub() as stub:
        rec = cli(
            ["record", "--cassette", "c.json", "--upstream-openai", stub.openai_url, "--", *agent],
            tmp_path,
            OPENAI_API_KEY="sk-test-1234567890",
        )
    assert rec.returncode == 0, rec.stderr
    source = load(tmp_path / "c.json").source
    assert source["rules"] == {
        "profiles": [],
        "file": '[[ignore]]\npath = "params.metadata.run_*"\n',
    }
    (tmp_path / "otel-replay.toml").unlink()  # another machine: only the recorded rules
    hit = cli(["replay", "--cassette", "c.json", "--mode", "strict", "--", *agent], tmp_path)
    assert hit.returncode == 0, hit.stderr
    assert json.loads((tmp_path / "c.json").read_text())["source"]["rules"]["profiles"] == []


PATH_AGENT = """\
import os
import openai

client = openai.OpenAI(max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[{"role": "user", "content": f"list {os.getcwd()}/src and ~ is {os.environ['HOME']}"}],
)
print(reply.choices[0].message.content)
"""


def test_a_recording_made_in_another_directory_replays_here(tmp_path):
    first, second = tmp_path / "alice" / "proj", tmp_path / "bob" / "work" / "proj"
    for folder in (first, second):
        folder.mkdir(parents=True)
        (folder / "agent.py").write_text(PATH_AGENT)
    agent = [sys.executable, "agent.py"]
    with run_stub() as stub:
        rec = cli(
            ["record", "--cassette", "c.json", "--upstream-openai", stub.openai_url, "--", *agent],
            first,
            OPENAI_API_KEY="sk-test-1234567890",
            HOME=str(first.parent),
        )
    assert rec.returncode == 0, rec.stderr
    places = load(first / "c.json").source["rules"]["places"]
    assert places == {"cwd": str(first), "home": str(first.parent)}
    (second / "c.json").write_bytes((first / "c.json").read_bytes())
    replay = ["replay", "--cassette", "c.json", "--mode", "strict", "--", *agent]
    hit = cli(replay, second, HOME=str(second.parent.parent))
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout == rec.stdout


LIVE_AGENT = """\
import sys
import openai

client = openai.OpenAI(max_retries=0)
for model in sys.argv[1:]:
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Lisbon"}]
    )
    print(reply.choices[0].message.content)
"""


def test_a_live_rule_sends_its_calls_to_the_provider_in_auto_mode(tmp_path):
    (tmp_path / "agent.py").write_text(LIVE_AGENT)
    agent = [sys.executable, "agent.py", "gpt-4o-mini", "canary-1"]
    key = "sk-test-1234567890"
    with run_stub() as stub:
        upstream = ["--upstream-openai", stub.openai_url]
        rec = cli(["record", "--cassette", "c.json", *upstream, "--", *agent], tmp_path,
                  OPENAI_API_KEY=key)  # fmt: skip
        assert rec.returncode == 0, rec.stderr
        recorded = len(stub.received)
        (tmp_path / "otel-replay.toml").write_text('[[live]]\nmodel = "canary-*"\n')
        auto = ["replay", "--cassette", "c.json", "--mode", "auto", *upstream, "--", *agent]
        run = cli(auto, tmp_path, OPENAI_API_KEY=key)
        assert run.returncode == 0, run.stderr
        assert "1 replayed · 1 live · 0 misses" in run.stderr
        assert [r.body["model"] for r in stub.received[recorded:]] == ["canary-1"]
        # strict never forwards: the live call replays its recording
        strict = cli([*auto[:4], "strict", *auto[5:]], tmp_path, OPENAI_API_KEY=key)
        assert strict.returncode == 0, strict.stderr
        assert len(stub.received) == recorded + 1


def test_a_recording_notes_the_directories_its_requests_name(tmp_path, monkeypatch):
    import openai

    from otel_replay.gateway.runner import GatewayConfig, GatewayThread

    monkeypatch.chdir(tmp_path)

    def record(name: str, prompt: str) -> dict:
        cassette = tmp_path / f"{name}.json"
        with run_stub() as stub:
            config = GatewayConfig(
                mode="record", cassette=cassette, upstream_openai=stub.openai_url
            )
            with GatewayThread(config) as gw:
                client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key="k")
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": prompt}]
                )
        return load(cassette).source

    assert "rules" not in record("plain", "what is the weather in Lisbon?")
    named = record("named", f"read {tmp_path}/notes.md")
    assert named["rules"]["places"]["cwd"] == str(tmp_path)
