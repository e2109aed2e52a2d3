"""``serve``'s control route: the ``use`` line over HTTP on the gateway's port (what a Vitest
worker sends to an engine its run's setup started), refused without the engine's token."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from test_cli import serve
from test_serve_use import agent

from otel_replay.gateway.control import CONTROL_PATH, TOKEN_HEADER
from otel_replay.testing.stub import run_stub

TOKEN = "a-token-of-this-test"


def post(base: str, message: object, token: str | None) -> tuple[int, dict[str, Any]]:
    """POST one protocol line to the control route: the status and the answer line."""
    headers = {"content-type": "application/json"}
    if token is not None:
        headers[TOKEN_HEADER] = token
    request = urllib.request.Request(
        base.removesuffix("/v1") + CONTROL_PATH,
        data=json.dumps(message).encode(),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_control_route_switches_cassettes_with_its_token_only(tmp_path: Path) -> None:
    paris = tmp_path / "paris.json"
    with (
        run_stub() as stub,
        serve(["--upstream-openai", stub.openai_url], {"OTEL_REPLAY_CONTROL": TOKEN}) as proc,
    ):
        assert proc.stdout is not None and proc.stdin is not None
        base = json.loads(proc.stdout.readline())["env"]["OPENAI_BASE_URL"]
        use = {"use": {"cassette": str(paris), "mode": "record"}}
        for token in (None, "", "not-the-token", TOKEN + "x"):
            status, said = post(base, use, token)
            assert status == 403 and "needs its token" in said["error"], (token, said)
        status, said = post(base, use, TOKEN)
        assert status == 200 and said["used"]["env"]["OPENAI_BASE_URL"] == base
        agent(said["used"]["env"], "Paris")
        # the answer is the line standard input gets: the block's summary, then an error
        status, said = post(base, {"use": {}}, TOKEN)
        assert status == 200 and said["used"]["summary"]["live"] == 2  # the agent asks twice
        assert said["used"]["summary"]["cassette"] == str(paris)
        status, said = post(
            base, {"use": {"cassette": str(tmp_path / "none.json"), "mode": "strict"}}, TOKEN
        )
        assert status == 400 and "no such cassette" in said["error"]
        status, said = post(base, {"use": {"cassette": str(paris), "mode": "strict"}}, TOKEN)
        assert status == 200
        agent(said["used"]["env"], "Paris")
        proc.stdin.close()
        final = json.loads(proc.stdout.readline())["summary"]
        assert proc.wait(30) == 0
    assert final["replayed"] == 2 and not final["misses"]  # the swaps were all one engine's
    assert json.loads(paris.read_text())["interactions"]


def test_a_switch_asked_during_a_live_call_waits_for_it_and_keeps_its_recording(
    tmp_path: Path,
) -> None:
    """A switch is answered on the gateway's loop only when nothing makes it wait: here a
    streamed live call is still being relayed (and recorded) when the switch is asked, so
    the switch waits for it on a thread while the loop finishes relaying it."""
    import openai

    cassette = tmp_path / "slow.json"
    with (
        run_stub(event_delay=0.2) as stub,
        serve(["--upstream-openai", stub.openai_url], {"OTEL_REPLAY_CONTROL": TOKEN}) as proc,
    ):
        assert proc.stdout is not None and proc.stdin is not None
        base = json.loads(proc.stdout.readline())["env"]["OPENAI_BASE_URL"]
        status, _ = post(base, {"use": {"cassette": str(cassette), "mode": "record"}}, TOKEN)
        assert status == 200
        client = openai.OpenAI(base_url=base, api_key="sk-test-control-0000", max_retries=0)
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Paris"}], stream=True
        )
        first = next(iter(stream))  # the call is live and in flight from here
        words: list[str] = []
        reader = threading.Thread(
            target=lambda: words.extend(
                c.choices[0].delta.content or "" for c in stream if c.choices
            )
        )
        reader.start()
        status, said = post(base, {"use": {}}, TOKEN)
        reader.join(30)
        assert status == 200, said
        assert said["used"]["summary"]["live"] == 1  # recorded before the block was finished
        assert first.choices and "".join(words)  # the agent got its whole answer
        proc.stdin.close()
        assert proc.wait(30) == 0
    assert len(json.loads(cassette.read_text())["interactions"]) == 1


def test_without_a_token_the_engine_has_no_control_route() -> None:
    with serve(["--mode", "strict"]) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        base = json.loads(proc.stdout.readline())["env"]["OPENAI_BASE_URL"]
        for token in (None, "", TOKEN):
            status, said = post(base, {"use": {}}, token)
            assert status == 404 and "not a provider API path" in said["error"]["message"]
        proc.stdin.close()
        assert proc.wait(30) == 0
