"""Secrets: every kind in the corpus, in every place an agent can put one, never reaches a
file otel-replay writes; placeholders keep matching stable across machines and keys."""

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
from secrets_corpus import (
    FAKE_OPENAI_KEY,
    FILE_TOKEN,
    FILE_TOKEN_VARIABLE,
    KINDS,
    LOWER_AWS_SECRET,
    NAMED_SECRET_VALUES,
    SECRET_VALUES,
    SECRETS,
    fake,
)

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
SERVICE_TOKEN = "svc-token-9f8e7d6c5b4a39281706f5e4d3c2b1a0"  # a *_TOKEN variable's value

AGENT = r"""
import json, os, sys
import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

secrets = json.load(open(sys.argv[1]))
values = list(secrets.values())
corpus = "\n".join(values)
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("agent")
tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
client = openai.OpenAI(
    max_retries=0,
    default_headers={"x-internal-token": values[0], "x-secret-key": values[1]},
    default_query={"api_key": values[2], "token": values[3]},
)
aws = open(sys.argv[4]).read()
# the model calls the tool with the AWS secret in its arguments (JSON in a string)
call = "stub:call lookup " + json.dumps({"query": "s3", "aws_secret_access_key": aws})
prompt = "\n".join([corpus, os.environ["API_TOKEN_FILE_CONTENT"], call])
messages = [{"role": "system", "content": "helper " + sys.argv[2]},
            {"role": "user", "content": prompt}]
with tracer.start_as_current_span("agent run") as span:
    span.set_attribute("agent.prompt", corpus)
    span.set_attribute("aws_secret_access_key", aws)
    span.set_attribute("deploy.API_TOKEN_FILE_CONTENT", os.environ["API_TOKEN_FILE_CONTENT"])
    for _ in range(3):
        calls, text = {}, []
        kwargs = {"model": "gpt-4o-mini", "messages": messages, "tools": tools}
        if sys.argv[3] == "plain":
            message = client.chat.completions.create(**kwargs).choices[0].message
            text = [message.content or ""]
            calls = {i: c.model_dump() for i, c in enumerate(message.tool_calls or [])}
            chunks = []
        else:
            chunks = client.chat.completions.create(stream=True, **kwargs)
        for chunk in chunks:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
                for tc in choice.delta.tool_calls or []:
                    slot = calls.setdefault(tc.index, {"id": "", "type": "function",
                                                       "function": {"name": "", "arguments": ""}})
                    slot["id"] = tc.id or slot["id"]
                    if tc.function and tc.function.name:
                        slot["function"]["name"] = tc.function.name
                    if tc.function and tc.function.arguments:
                        slot["function"]["arguments"] += tc.function.arguments
        if not calls:
            break
        messages.append({"role": "assistant", "content": None,
                         "tool_calls": [calls[i] for i in sorted(calls)]})
        for call in calls.values():
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": "tool says: " + corpus})
    span.set_attribute("agent.answer", "".join(text))
provider.shutdown()
assert "".join(text).startswith("stub reply to: tool says:"), text
"""


def _cli(args: list[str], out: Path, name: str, cwd: Path, env: dict[str, str]) -> int:
    """Run the CLI with its stdout and stderr kept as log files beside its other output."""
    with open(out / f"{name}.stderr.log", "w") as err, open(out / f"{name}.stdout.log", "w") as so:
        return subprocess.run(
            [*CLI, *args], stdout=so, stderr=err, cwd=cwd, timeout=120, env={**os.environ, **env}
        ).returncode


@pytest.mark.parametrize("stream", ["plain", "stream"])
def test_no_secret_reaches_any_file(tmp_path_factory: pytest.TempPathFactory, stream: str) -> None:
    inputs = tmp_path_factory.mktemp("inputs")  # the agent's own files, not ours to check
    out = tmp_path_factory.mktemp("out")
    (inputs / "agent.py").write_text(AGENT)
    (inputs / "secrets.json").write_text(json.dumps(SECRETS))
    agent = [sys.executable, str(inputs / "agent.py"), str(inputs / "secrets.json")]
    (inputs / "aws.txt").write_text(LOWER_AWS_SECRET)
    v1, v2 = ["v1", stream, str(inputs / "aws.txt")], ["v2", stream, str(inputs / "aws.txt")]
    cassette = out / "c.json"
    env = {
        "OPENAI_API_KEY": FAKE_OPENAI_KEY,
        "BILLING_SERVICE_TOKEN": SERVICE_TOKEN,
        FILE_TOKEN_VARIABLE: FILE_TOKEN,
    }
    with run_stub() as stub:
        code = _cli(
            [
                "record",
                "--cassette",
                str(cassette),
                "--traces",
                str(out / "rec.jsonl"),
                "--report",
                str(out / "rec-report.json"),
                "--upstream-openai",
                stub.openai_url,
                "--",
                *agent,
                *v1,
            ],
            out,
            "record",
            inputs,
            env,
        )
        assert code == 0, (out / "record.stderr.log").read_text()
        seen = json.dumps([r.body for r in stub.received]) + json.dumps(
            [r.headers for r in stub.received]
        )
    # the stub really was sent every secret (so the checks below are not vacuous)
    for value in [*SECRET_VALUES.values(), *NAMED_SECRET_VALUES.values()]:
        assert json.dumps(value)[1:-1] in seen
    assert FAKE_OPENAI_KEY in seen
    code = _cli(
        [
            "replay",
            "--cassette",
            str(cassette),
            "--mode",
            "strict",
            "--traces",
            str(out / "rep.jsonl"),
            "--report",
            str(out / "rep-report.json"),
            "--",
            *agent,
            *v1,
        ],
        out,
        "replay",
        inputs,
        env,
    )
    assert code == 0, (out / "replay.stderr.log").read_text()
    code = _cli(
        [
            "replay",
            "--cassette",
            str(cassette),
            "--mode",
            "strict",
            "--traces",
            str(out / "miss.jsonl"),
            "--report",
            str(out / "miss-report.json"),
            "--",
            *agent,
            *v2,
        ],
        out,
        "miss",
        inputs,
        env,
    )
    assert code == 1
    assert (out / "c.misses.json").exists()
    assert _cli(["why", "--cassette", str(cassette)], out, "why", inputs, env) == 0
    written = files_text(out)
    assert "replay miss: system prompt changed" in written  # the logs were captured
    leaked = [name for name, value in SECRET_VALUES.items() if value in written]
    leaked += [name for name, value in NAMED_SECRET_VALUES.items() if value in written]
    leaked += [
        n for n, v in (("openai key", FAKE_OPENAI_KEY), ("token", SERVICE_TOKEN)) if v in written
    ]
    assert leaked == []
    for kind in KINDS:
        assert f"[REDACTED:{kind}]" in written, kind


def _prompt(seed: int) -> str:
    """Every kind in one fixed context; only the secret itself changes with ``seed``."""
    parts = []
    for kind in KINDS:
        context = fake(kind, 30)
        parts.append(context.text.replace(context.secret, fake(kind, seed).secret))
    return "keys: " + " | ".join(parts)


def _ask(env: dict[str, str], key: str, prompt: str) -> Any:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=key, max_retries=0)
    return client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )


def test_placeholders_keep_matching_across_machines_and_keys(tmp_path: Path) -> None:
    """Recorded on "machine A" with one set of secrets, replayed on "machine B" with other
    secrets of the same shapes: every one becomes the same placeholder, so it hits."""
    cassette = tmp_path / "c.json"
    key_a, key_b = fake("openai-key", 21).secret, fake("openai-key", 22).secret
    with (
        run_stub() as stub,
        GatewayThread(
            GatewayConfig(
                mode="record",
                cassette=cassette,
                grpc_port=None,
                upstream_openai=stub.openai_url,
                environ={"OPENAI_API_KEY": key_a},
            )
        ) as gw,
    ):
        _ask(gw.env, key_a, _prompt(31))
    for kind in KINDS:
        assert fake(kind, 31).secret not in cassette.read_text(), kind
    with GatewayThread(
        GatewayConfig(
            mode="strict", cassette=cassette, grpc_port=None, environ={"OPENAI_API_KEY": key_b}
        )
    ) as gw:
        reply = _ask(gw.env, key_b, _prompt(32))
        summary = gw.stop()
    assert summary.replayed == 1 and summary.misses == []
    assert reply.choices[0].message.content.startswith("stub reply to: keys: ")
