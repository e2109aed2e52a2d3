"""A server in a subprocess of its own, so client and server never share a core unfairly.

``python -m benchmarks._server SPEC_JSON`` starts one of:
``{"kind": "bare", "body": PATH, "stream": PATH, "port": PORT}`` — a bare aiohttp handler
answering every POST with the bytes of ``body`` (or, for a streamed request, ``stream`` as
SSE), on ``port`` when one is given;
``{"kind": "ws", "frames": PATH}`` — a bare aiohttp WebSocket server answering the n-th
text frame of a connection with the n-th list of frames in ``frames`` (JSON);
``{"kind": "stub", "event_delay": SECONDS}`` — the project's stub upstream (``event_delay``:
the pause between two events of a stream, none by default);
``{"kind": "proxy", "upstream": URL}`` — a bare aiohttp proxy forwarding every request to
``URL`` and streaming the answer back, on the gateway's loop with its client's settings:
what any proxy built on aiohttp adds;
``{"kind": "relay", "upstream": URL}`` — a TCP relay passing bytes both ways, a connection
to ``URL`` per connection accepted, reading no HTTP at all: what the extra hop alone costs
on this machine, the floor under any proxy;
``{"kind": "mcp"}`` — a real MCP server (the official SDK's ``MCPServer``, one tool,
Streamable HTTP at ``/mcp``, stateless with JSON answers) on uvicorn;
``{"kind": "gateway", "mode": ..., "cassette": ..., "traces": ..., "upstream": URL,
"rules": PATH, "mcp": {NAME: URL}}`` (``rules``: a rule file, as ``--rules`` gives one;
``mcp``: MCP servers, as ``--mcp NAME=URL`` gives them).
It prints one JSON line with its ports, serves until stdin closes, then prints the
gateway's stop time and exits.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web


async def _bare(spec: dict[str, Any]) -> tuple[web.AppRunner, int]:
    body = Path(spec["body"]).read_bytes() if spec.get("body") else b"{}"
    stream = Path(spec["stream"]).read_bytes() if spec.get("stream") else b""

    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if b'"stream":true' in raw or b'"stream": true' in raw:
            response = web.StreamResponse(
                headers={"content-type": "text/event-stream; charset=utf-8"}
            )
            await response.prepare(request)
            await response.write(stream)
            await response.write_eof()
            return response
        return web.Response(body=body, content_type="application/json")

    return await _serve(handle, spec.get("port", 0))


async def _bare_ws(spec: dict[str, Any]) -> tuple[web.AppRunner, int]:
    """A bare aiohttp WebSocket server: the n-th text frame a connection sends is answered
    with the n-th list of frames in the JSON file ``frames``, each sent as it is."""
    answers = json.loads(Path(spec["frames"]).read_text())

    async def handle(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(compress=True)
        await ws.prepare(request)
        turn = 0
        async for message in ws:
            if message.type == web.WSMsgType.TEXT:
                for frame in answers[turn % len(answers)]:
                    await ws.send_str(frame)
                turn += 1
        return ws

    return await _serve(handle)


async def _serve(handle: Any, port: int = 0) -> tuple[web.AppRunner, int]:
    """Serve every path and method with ``handle`` on a loopback port (a free one: 0)."""
    app = web.Application(client_max_size=1024**3)
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    server: Any = site._server
    return runner, server.sockets[0].getsockname()[1]


_HOP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}
_HOP |= {"accept-encoding", "content-encoding"}


async def _proxy(spec: dict[str, Any]) -> tuple[web.AppRunner, int, Any]:
    import aiohttp

    upstream = spec["upstream"].rstrip("/")
    client = aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
        cookie_jar=aiohttp.DummyCookieJar(),
    )

    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        url = upstream + request.path_qs
        async with client.request(request.method, url, headers=headers, data=raw) as answer:
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
            if "text/event-stream" not in answer.headers.get("content-type", ""):
                body = await answer.read()
                return web.Response(status=answer.status, body=body, headers=kept)
            out = web.StreamResponse(status=answer.status, headers=kept)
            await out.prepare(request)
            async for chunk in answer.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    runner, port = await _serve(handle)
    return runner, port, client


class _Pipe(asyncio.Protocol):
    """One side of a relayed connection: what it reads goes to ``peer`` as it comes."""

    def __init__(self, peer: Any = None) -> None:
        self.peer = peer  # the other side's transport
        self.transport: Any = None
        self.early: list[bytes] = []  # read before the other side's connection was made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport's

    def data_received(self, data: bytes) -> None:
        if self.peer is None:
            self.early.append(data)
        else:
            self.peer.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None:
            self.peer.close()


async def _relay(spec: dict[str, Any]) -> tuple[asyncio.Server, int]:
    from urllib.parse import urlsplit

    target = urlsplit(spec["upstream"])
    loop = asyncio.get_running_loop()

    class Accepted(_Pipe):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self.connecting = asyncio.ensure_future(self._connect())  # held till it is done

        async def _connect(self) -> None:
            assert self.transport is not None
            _, onward = await loop.create_connection(
                lambda: _Pipe(self.transport), target.hostname, target.port
            )
            self.peer = onward.transport
            if self.transport.is_closing():  # the client left while the connection was made
                self.peer.close()
                return
            for data in self.early:
                self.peer.write(data)
            self.early.clear()

    server = await loop.create_server(Accepted, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _mcp() -> tuple[Any, Any, int]:
    import socket

    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("weather")

    @server.tool()
    def get_forecast(city: str) -> str:
        """The weather forecast for a city."""
        return f"sunny in {city}"

    app = server.streamable_http_app(stateless_http=True, json_response=True)
    with socket.socket() as sock:  # a free port (a socket handed to uvicorn answers late)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    runner = uvicorn.Server(config)
    task = asyncio.ensure_future(runner.serve())
    while not runner.started:
        await asyncio.sleep(0.01)
    return runner, task, port


async def _wait_stdin() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


async def main(spec: dict[str, Any]) -> None:
    kind = spec["kind"]
    if kind == "bare":
        runner, port = await _bare(spec)
        print(json.dumps({"port": port}), flush=True)
        await _wait_stdin()
        await runner.cleanup()
        return
    if kind == "ws":
        runner, port = await _bare_ws(spec)
        print(json.dumps({"port": port}), flush=True)
        await _wait_stdin()
        await runner.cleanup()
        return
    if kind == "proxy":
        runner, port, client = await _proxy(spec)
        print(json.dumps({"port": port}), flush=True)
        await _wait_stdin()
        await client.close()
        await runner.cleanup()
        return
    if kind == "relay":
        server, port = await _relay(spec)
        print(json.dumps({"port": port}), flush=True)
        await _wait_stdin()
        server.close()
        return
    if kind == "mcp":
        server, task, port = await _mcp()
        print(json.dumps({"port": port}), flush=True)
        await _wait_stdin()
        server.should_exit = True
        await task
        return
    if kind == "stub":
        from otel_replay.testing.stub import StubUpstream

        stub = await StubUpstream(event_delay=spec.get("event_delay", 0.0)).start()
        print(json.dumps({"port": stub.port}), flush=True)
        await _wait_stdin()
        await stub.stop()
        return
    from otel_replay.frontends.rulefiles import rule_sources
    from otel_replay.gateway.runner import GatewayConfig, GatewayServer

    def path(key: str) -> Path | None:
        return Path(spec[key]) if spec.get(key) else None

    upstream = spec.get("upstream") or "http://127.0.0.1:9"
    config = GatewayConfig(
        mode=spec["mode"],
        cassette=path("cassette"),
        traces=path("traces"),
        upstream_openai=f"{upstream}/v1",
        upstream_anthropic=upstream,
        grpc_port=0 if spec.get("grpc") else None,
        environ={},
        rules=rule_sources(None, spec.get("rules")),
        mcp=spec.get("mcp") or {},
    )
    gateway = GatewayServer(config)
    await gateway.start()
    print(json.dumps({"port": gateway.port, "grpc_port": gateway.grpc_port}), flush=True)
    await _wait_stdin()
    started = time.perf_counter()
    summary = await gateway.stop()
    stop = time.perf_counter() - started
    print(json.dumps({"stop_seconds": stop, "summary": summary.to_json()}), flush=True)


if __name__ == "__main__":
    SPEC = json.loads(sys.argv[1])
    if SPEC["kind"] in ("gateway", "proxy", "relay", "ws"):  # on the gateway's own loop
        from otel_replay.gateway.loop import new_loop

        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(main(SPEC))
    else:
        asyncio.run(main(SPEC))
