"""A server in a subprocess of its own, so client and server never share a core unfairly.

``python -m benchmarks._server SPEC_JSON`` starts one of:
``{"kind": "bare", "body": PATH, "stream": PATH}`` — a bare aiohttp handler answering
every POST with the bytes of ``body`` (or, for a streamed request, ``stream`` as SSE);
``{"kind": "stub"}`` — the project's stub upstream;
``{"kind": "proxy", "upstream": URL}`` — a bare aiohttp proxy forwarding every request to
``URL`` and streaming the answer back, on the gateway's loop with its client's settings:
what any proxy built on aiohttp adds, the floor under the gateway's record mode;
``{"kind": "gateway", "mode": ..., "cassette": ..., "traces": ..., "upstream": URL,
"rules": PATH}`` (``rules``: a rule file, as ``--rules`` gives one).
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

    return await _serve(handle)


async def _serve(handle: Any) -> tuple[web.AppRunner, int]:
    """Serve every path and method with ``handle`` on a free loopback port."""
    app = web.Application(client_max_size=1024**3)
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
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
    if kind == "proxy":
        runner, port, client = await _proxy(spec)
        print(json.dumps({"port": port}), flush=True)
        await _wait_stdin()
        await client.close()
        await runner.cleanup()
        return
    if kind == "stub":
        from otel_replay.testing.stub import StubUpstream

        stub = await StubUpstream().start()
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
    if SPEC["kind"] in ("gateway", "proxy"):  # on the loop the CLI gives the gateway
        from otel_replay.gateway.loop import new_loop

        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(main(SPEC))
    else:
        asyncio.run(main(SPEC))
