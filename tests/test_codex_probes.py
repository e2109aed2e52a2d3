"""Requests that are not model calls — a WebSocket upgrade where no API has a WebSocket
form, a connectivity probe — are answered at once, reach no upstream and are neither
recorded nor counted; an upstream that refuses a WebSocket has its refusal passed on (the
client falls back to HTTP, recorded as ever); and the command an agent that reads no
base-URL variable is started with."""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest

from otel_replay.cassette.model import Cassette, dump, load
from otel_replay.gateway.agents import agent_command
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import run_stub

WEBSOCKET = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}


def _ask(port: int, method: str, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


PROBES = [
    ("GET", "/v1/chat/completions", WEBSOCKET, 426),
    ("GET", "/v1/messages", WEBSOCKET, 426),
    ("HEAD", "/", {}, 200),
    ("HEAD", "/v1/messages", {"anthropic-version": "2023-06-01"}, 200),
    ("GET", "/", {}, 200),
]


@pytest.mark.parametrize("mode", ["record", "strict", "auto"])
def test_probes_are_answered_at_once_and_never_counted(tmp_path: Path, stub_thread, mode):
    cassette = tmp_path / "c.json"
    if mode == "strict":
        dump(Cassette(interactions=[], source={}), cassette)
    config = GatewayConfig(mode=mode, cassette=cassette, upstream_openai=stub_thread.openai_url)
    with GatewayThread(config) as gateway:
        assert gateway.server is not None
        for method, path, headers, status in PROBES:
            got, body = _ask(gateway.server.port, method, path, headers)
            assert got == status, (method, path)
            if status == 426:
                assert b"WebSockets are not served" in body
        summary = gateway.stop()
    assert stub_thread.received == []
    assert (summary.replayed, summary.live, summary.misses) == (0, 0, [])
    if cassette.exists():
        assert load(cassette).interactions == []


def test_an_upstream_refusing_the_websocket_is_passed_on_and_http_recorded(tmp_path: Path):
    cassette = tmp_path / "c.json"
    with run_stub(websockets=False) as stub:  # an API served over HTTP only
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=stub.openai_url)
        with GatewayThread(config) as gateway:
            assert gateway.server is not None
            port = gateway.server.port
            assert _ask(port, "GET", "/v1/responses", WEBSOCKET)[0] == 426
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            body = b'{"model": "m", "input": "hi"}'
            connection.request("POST", "/v1/responses", body, {"content-type": "application/json"})
            assert connection.getresponse().status == 200
            connection.close()
            summary = gateway.stop()
        received = [(r.method, r.path) for r in stub.received]
    assert received == [("GET", "/v1/responses"), ("POST", "/v1/responses")]
    assert (summary.live, summary.misses) == (1, [])
    # replayed as recorded: the upgrade refused again, the call answered over HTTP
    config = GatewayConfig(mode="strict", cassette=cassette)
    with GatewayThread(config) as gateway:
        assert gateway.server is not None
        port = gateway.server.port
        assert _ask(port, "GET", "/v1/responses", WEBSOCKET)[0] == 426
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/v1/responses", body, {"content-type": "application/json"})
        assert connection.getresponse().status == 200
        connection.close()
        summary = gateway.stop()
    assert (summary.replayed, summary.misses) == (1, [])
    (interaction,) = load(cassette).interactions
    assert interaction.request.endpoint == "/v1/responses"


URL = "http://127.0.0.1:4321/v1"


@pytest.mark.parametrize(
    "command",
    [
        ["codex", "exec", "hi"],
        ["/opt/node_modules/.bin/codex", "exec", "hi"],
        ["/opt/@openai/codex/bin/codex.js", "exec", "hi"],
        ["C:\\tools\\codex.exe", "exec", "hi"],
    ],
)
def test_codex_is_given_the_gateway_on_its_command_line(command):
    env = {"OPENAI_BASE_URL": URL}
    given = agent_command(command, env)
    assert given == [command[0], "-c", f'openai_base_url="{URL}"', *command[1:]]


@pytest.mark.parametrize(
    "command", [["python", "agent.py"], ["codexify", "run"], ["claude", "-p", "hi"], []]
)
def test_other_commands_run_as_given(command):
    assert agent_command(command, {"OPENAI_BASE_URL": URL}) == command


def test_codex_without_a_gateway_url_runs_as_given():
    assert agent_command(["codex", "exec", "hi"], {}) == ["codex", "exec", "hi"]
