"""A recording gateway opens its connection to the upstream the run points at while the
agent starts, and the agent's first call goes over it; a replay opens none, and a host
that cannot be reached leaves the calls to fail as they would have."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from otel_replay.gateway.environment import ahead_upstreams
from otel_replay.gateway.runner import GatewayConfig, GatewayServer
from otel_replay.testing.stub import StubUpstream

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


class Counting:
    """A TCP relay in front of ``target`` counting the connections made to it."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.accepted = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Counting:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@contextlib.asynccontextmanager
async def _gateway(tmp_path: Path, mode: str, upstream: str) -> AsyncIterator[GatewayServer]:
    cassette = tmp_path / "c.json"
    config = GatewayConfig(
        mode=mode, cassette=cassette, upstream_openai=upstream, grpc_port=None, environ={}
    )
    gateway = GatewayServer(config)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()


async def _until(condition: object, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)


async def test_the_first_call_goes_over_the_connection_opened_at_start(tmp_path):
    async with StubUpstream() as stub, Counting(stub.port) as counted:
        upstream = f"http://127.0.0.1:{counted.port}/v1"
        async with _gateway(tmp_path, "record", upstream) as gateway:
            await _until(lambda: counted.accepted == 1)
            assert counted.accepted == 1 and not stub.received  # opened, nothing sent
            assert gateway._ahead is not None
            await _until(gateway._ahead.done)  # its task ends a loop turn after the accept
            assert gateway._ahead.exception() is None
            async with aiohttp.ClientSession() as client:
                url = gateway.env["OPENAI_BASE_URL"] + "/chat/completions"
                for _ in range(2):
                    async with client.post(url, json=CHAT) as answer:
                        assert answer.status == 200, await answer.text()
        assert len(stub.received) == 2
        assert counted.accepted == 1  # no other connection made


async def test_a_replay_opens_no_connection(tmp_path):
    async with StubUpstream() as stub, Counting(stub.port) as counted:
        upstream = f"http://127.0.0.1:{counted.port}/v1"
        async with _gateway(tmp_path, "record", upstream) as gateway:
            async with aiohttp.ClientSession() as client:
                url = gateway.env["OPENAI_BASE_URL"] + "/chat/completions"
                async with client.post(url, json=CHAT) as answer:
                    assert answer.status == 200
        before = counted.accepted
        async with _gateway(tmp_path, "strict", upstream) as gateway:
            assert gateway._ahead is None
            await asyncio.sleep(0.2)
        assert counted.accepted == before


async def test_an_unreachable_host_leaves_the_call_to_fail_as_before(tmp_path):
    with contextlib.closing(__import__("socket").socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        async with _gateway(tmp_path, "record", f"http://127.0.0.1:{port}/v1") as gateway:
            assert gateway._ahead is not None
            await _until(gateway._ahead.done)
            assert gateway._ahead.exception() is None  # logged, not raised
            async with aiohttp.ClientSession() as client:
                url = gateway.env["OPENAI_BASE_URL"] + "/chat/completions"
                # the refused connection reaches the agent as a connection fault, as ever
                with pytest.raises(aiohttp.ServerDisconnectedError):
                    async with client.post(url, json=CHAT):
                        pass


@pytest.mark.parametrize(
    ("command", "environ", "named", "expected"),
    [
        (["claude", "-p", "hi"], {}, {}, ["anthropic"]),
        (["/usr/local/bin/codex", "exec", "hi"], {}, {}, ["openai"]),
        (["python", "agent.py"], {}, {}, []),  # whatever it calls is not known ahead
        (["python", "agent.py"], {"ANTHROPIC_BASE_URL": "http://h"}, {}, ["anthropic"]),
        (["claude"], {}, {"upstream_openai": "http://h/v1"}, ["openai", "anthropic"]),
    ],
)
def test_the_upstreams_connected_ahead(command, environ, named, expected):
    config = GatewayConfig(mode="record", command=command, **named)
    assert ahead_upstreams(config, environ) == expected
