"""``python -m otel_replay.testing.stub``: the stub upstream for tests in other languages
(the TypeScript package's Vitest suite starts it): its URLs on one line, then it serves
until its standard input ends."""

from __future__ import annotations

import json
import subprocess
import sys

import openai


def test_the_stub_command_serves_until_its_input_ends():
    stub = subprocess.Popen(
        [sys.executable, "-m", "otel_replay.testing.stub"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stub.stdout is not None and stub.stdin is not None
        urls = json.loads(stub.stdout.readline())
        assert urls["openai_url"] == urls["url"] + "/v1" and urls["anthropic_url"] == urls["url"]
        with openai.OpenAI(base_url=urls["openai_url"], api_key="sk-test") as client:
            answer = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Paris"}]
            )
        assert answer.choices[0].message.content == "stub reply to: Paris"
        stub.stdin.close()
        assert stub.wait(30) == 0
    finally:
        if stub.poll() is None:
            stub.kill()
            stub.wait()
        if stub.stdout is not None:
            stub.stdout.close()
