"""The gateway's own boundary, as an attacker and a bad day reach it: requests a web page
sends (DNS rebinding, cross-origin calls, CORS preflights), request bodies that never end,
upstream answers that inflate without bound, bodies nested beyond reason.

Each is refused with a one-line error; nothing is forwarded, recorded or counted for it,
and the gateway keeps serving the official SDKs and the OTLP exporter."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web

from otel_replay.cassette.model import load
from otel_replay.gateway.limits import Limits
from otel_replay.gateway.runner import GatewayConfig, GatewayServer, GatewayThread
from otel_replay.testing import stub_openai
from otel_replay.testing.stub import StubUpstream, run_stub

KEY = "sk-proj-" + "a" * 40
ANTHROPIC_KEY = "sk-ant-api03-" + "b" * 40
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _raw(port: int, request: bytes, *, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes to the gateway; (status, headers, body) of its answer, read until the
    connection closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def _post(path: str, host: str, body: bytes, extra: str = "") -> bytes:
    key = ANTHROPIC_KEY if path.startswith("/v1/messages") else KEY  # each API its own key
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n{extra}"
        "Connection: close\r\n\r\n"
    ).encode() + body


def _one_line_error(body: bytes) -> str:
    message = json.loads(body)["error"]["message"]
    assert isinstance(message, str) and "\n" not in message and "Traceback" not in message
    return message


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[tuple[GatewayThread, StubUpstream]]:
    with (
        run_stub() as stub,
        GatewayThread(
            GatewayConfig(
                mode="record",
                cassette=tmp_path / "c.json",
                traces=tmp_path / "t.jsonl",
                grpc_port=None,
                upstream_openai=stub.openai_url,
                upstream_anthropic=stub.anthropic_url,
                environ={"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
                limits=Limits(body_timeout=1.0),
            )
        ) as gw,
    ):
        yield gw, stub


def test_requests_from_web_pages_are_refused_and_never_forwarded(
    recording: tuple[GatewayThread, StubUpstream],
) -> None:
    gw, stub = recording
    assert gw.server is not None
    port = gw.server.port
    body = json.dumps(CHAT).encode()
    refused = [
        # DNS rebinding: the page's own name, re-pointed at loopback
        (_post("/v1/chat/completions", f"evil.example:{port}", body), 403, "Host"),
        (_post("/v1/chat/completions", "evil.example", body), 403, "Host"),
        # the right name on another port: some other server's page
        (_post("/v1/chat/completions", "127.0.0.1:1", body), 403, "Host"),
        (b"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", 403, "Host"),
        # a cross-origin fetch from a web page, Host right
        (
            _post(
                "/v1/chat/completions", f"127.0.0.1:{port}", body, "Origin: https://a.example\r\n"
            ),
            403,
            "Origin",
        ),
        (
            _post("/v1/chat/completions", f"localhost:{port}", body, "Origin: null\r\n"),
            403,
            "Origin",
        ),
        # CORS preflights, on a model route and on the OTLP receiver
        (
            f"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Origin: https://a.example\r\nAccess-Control-Request-Method: POST\r\n\r\n".encode(),
            405,
            "OPTIONS",
        ),
        (f"OPTIONS /v1/traces HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode(), 405, "OPTIONS"),
        (_post("/v1/traces", f"evil.example:{port}", b"{}"), 403, "Host"),
    ]
    for request, status, word in refused:
        got, headers, answer = _raw(port, request)
        assert got == status, request
        assert headers["content-type"].startswith("application/json")
        assert word in _one_line_error(answer)
        assert "access-control-allow-origin" not in headers
    assert stub.received == []

    # what the agent itself sends still works: the SDKs by 127.0.0.1 and by localhost, a
    # loopback Origin, and OTLP/HTTP
    client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key=KEY, max_retries=0)
    assert client.chat.completions.create(**CHAT).choices[0].message.content  # type: ignore[call-overload]
    local = gw.env["ANTHROPIC_BASE_URL"].replace("127.0.0.1", "localhost")
    claude = anthropic.Anthropic(base_url=local, api_key=ANTHROPIC_KEY, max_retries=0)
    reply = claude.messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.content
    status, _, _ = _raw(
        port,
        _post(
            "/v1/chat/completions", f"[::1]:{port}", body, "Origin: http://localhost:3000\r\n"
        ).replace(b"[::1]", b"127.0.0.1"),
    )
    assert status == 200
    status, _, _ = _raw(port, _post("/v1/traces", f"localhost:{port}", b"{}"))
    assert status == 200
    # a Host judged once is judged the same again, between allowed ones
    for request, status, _ in refused[:3]:
        assert _raw(port, request)[0] == status == 403
    summary = gw.stop()
    assert (summary.live, summary.misses, summary.spans_received) == (3, [], 0)
    assert len(stub.received) == 3


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/v1/traces"])
def test_a_request_body_that_never_ends_is_answered_408_and_closed(
    recording: tuple[GatewayThread, StubUpstream], path: str
) -> None:
    gw, stub = recording
    assert gw.server is not None
    port = gw.server.port
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    # one chunk, then silence: the last chunk never comes; _raw reads until the gateway
    # closes the connection (a hang fails on the socket's timeout)
    status, headers, body = _raw(port, head.encode() + b'5\r\n{"a":\r\n')
    assert status == 408
    if path == "/v1/traces":
        assert headers["content-type"] == "application/json"
    else:
        assert "not received within 1 s" in _one_line_error(body)
    assert stub.received == []
    client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key=KEY, max_retries=0)
    assert client.chat.completions.create(**CHAT).choices[0].message.content  # type: ignore[call-overload]
    summary = gw.stop()
    assert (summary.live, summary.misses) == (1, [])


def test_a_body_sent_in_pieces_is_read_whole_and_one_past_the_limit_is_413(
    recording: tuple[GatewayThread, StubUpstream], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway reads a body in the pieces it arrives in (one copy): sent in many
    chunks, it reaches the provider byte for byte; past the largest body it reads, it is
    a 413 and nothing is forwarded, and the gateway keeps serving."""
    from otel_replay.gateway import guard

    gw, stub = recording
    assert gw.server is not None
    port = gw.server.port
    body = json.dumps({**CHAT, "messages": [{"role": "user", "content": "é" * 40_000}]})
    raw = body.encode()
    pieces = b"".join(
        f"{len(raw[i : i + 997]):x}\r\n".encode() + raw[i : i + 997] + b"\r\n"
        for i in range(0, len(raw), 997)
    )
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {KEY}\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    status, _, _ = _raw(port, head.encode() + pieces + b"0\r\n\r\n")
    assert status == 200
    assert [r.raw for r in stub.received] == [raw]
    monkeypatch.setattr(guard, "MAX_BODY", len(raw) - 1)
    status, _, _ = _raw(port, head.encode() + pieces + b"0\r\n\r\n")
    assert status == 413
    assert len(stub.received) == 1
    monkeypatch.setattr(guard, "MAX_BODY", len(raw))
    client = openai.OpenAI(base_url=gw.env["OPENAI_BASE_URL"], api_key=KEY, max_retries=0)
    assert client.chat.completions.create(**CHAT).choices[0].message.content  # type: ignore[call-overload]
    assert len(stub.received) == 2


LIMITS = Limits(max_response_bytes=1024 * 1024, max_event_bytes=256 * 1024)


def _chunk(text: str) -> bytes:
    delta = {
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return f"data: {json.dumps(delta)}\n\n".encode()


async def _hostile_upstream(request: web.Request) -> web.StreamResponse:
    """An upstream whose answers inflate beyond reason: a gzip bomb (8 MiB of zeros in a
    few KiB) and a stream whose third event is 1 MiB, sent in pieces."""
    body = await request.json()
    prompt = body["messages"][-1]["content"]
    if prompt == "bomb":
        bomb = gzip.compress(b"0" * (8 * 1024 * 1024))
        return web.Response(
            body=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}
        )
    if prompt == "huge event":
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        await stream.write(_chunk("first ") + _chunk("second"))
        huge = _chunk("x" * 1024 * 1024)
        for i in range(0, len(huge), 64 * 1024):
            await stream.write(huge[i : i + 64 * 1024])
        await stream.write(b"data: [DONE]\n\n")
        return stream
    return web.json_response(stub_openai.chat(body))


async def _three_calls(base_url: str) -> list[Any]:
    """What the agent sees: a plain call, the bomb, the stream with the huge event."""
    seen: list[Any] = []
    async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        reply = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
        )
        seen.append(reply.choices[0].message.content)
        with pytest.raises(openai.APIStatusError) as bomb:
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "bomb"}]
            )
        seen.append((bomb.value.status_code, bomb.value.message))
        texts: list[str] = []
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "huge event"}], stream=True
        )
        with pytest.raises(openai.APIError) as event:
            async for chunk in stream:
                texts.append(chunk.choices[0].delta.content or "")
        seen.append(("".join(texts), event.value.message))
    return seen


async def test_an_upstream_answer_beyond_the_limits_is_a_502_recorded_as_that_fault(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "c.json"
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _hostile_upstream)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        record = GatewayServer(
            GatewayConfig(
                mode="record",
                cassette=cassette,
                grpc_port=None,
                upstream_openai=f"http://127.0.0.1:{port}/v1",
                environ={"OPENAI_API_KEY": KEY},
                limits=LIMITS,
            )
        )
        await record.start()
        try:
            live = await asyncio.wait_for(_three_calls(record.env["OPENAI_BASE_URL"]), 30)
        finally:
            summary = await record.stop()
    finally:
        await runner.cleanup()
    assert isinstance(live[0], str) and live[0]
    status, message = live[1]
    assert status == 502
    assert message == (
        "Error code: 502 - otel-replay: the upstream's response (decompressed) exceeds the "
        "gateway's limit of 1048576 bytes"
    )
    texts, message = live[2]
    assert texts == "first second"  # the events before the huge one, whole
    assert message == (
        "otel-replay: the upstream's stream event exceeds the gateway's limit of 262144 bytes"
    )
    assert summary.live == 3
    recorded = load(cassette)
    assert [i.response.status for i in recorded.interactions] == [200, 502, 200]
    hello = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
    assert recorded.interactions[0].response.body == stub_openai.chat(hello)

    # the faults replay as they were recorded, with no upstream at all
    replay = GatewayServer(
        GatewayConfig(mode="strict", cassette=cassette, grpc_port=None, environ={})
    )
    await replay.start()
    try:
        replayed = await asyncio.wait_for(_three_calls(replay.env["OPENAI_BASE_URL"]), 30)
    finally:
        summary = await replay.stop()
    assert replayed == live
    assert (summary.replayed, summary.misses) == (3, [])


def _nested(depth: int) -> bytes:
    """A chat request carrying a value ``depth`` levels deep (the request itself adds one)."""
    head = json.dumps(CHAT)[:-1].encode()
    return head + b', "metadata": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_a_body_nested_beyond_the_limit_is_a_400_without_a_traceback(
    recording: tuple[GatewayThread, StubUpstream],
    path: str,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    gw, stub = recording
    assert gw.server is not None
    port = gw.server.port
    host = f"127.0.0.1:{port}"
    for depth in (200_000, 600, 129):
        status, headers, body = _raw(port, _post(path, host, _nested(depth)))
        assert status == 400
        assert headers.get("x-should-retry") == "false"
        error = json.loads(body)["error"]
        assert error["message"] == "otel-replay: the request body nests deeper than 128 levels"
    # as deep as the limit allows: forwarded, answered and recorded like any other call
    status, _, _ = _raw(port, _post(path, host, _nested(128)))
    assert status == 200
    # brackets inside strings are text, not nesting
    text = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": '[{"' * 5000}]}
    status, _, _ = _raw(port, _post(path, host, json.dumps(text).encode()))
    assert status == 200
    summary = gw.stop()
    assert (summary.live, summary.misses) == (2, [])
    assert len(stub.received) == 2
    # and it replays: matching walks it as deep as recording did
    config = GatewayConfig(mode="strict", cassette=tmp_path / "c.json", grpc_port=None, environ={})
    with GatewayThread(config) as replay:
        assert replay.server is not None
        port = replay.server.port
        status, _, _ = _raw(port, _post(path, f"localhost:{port}", _nested(128)))
        assert status == 200
        status, _, _ = _raw(port, _post(path, f"localhost:{port}", _nested(200_000)))
        assert status == 400
    assert (replay.summary and replay.summary.replayed) == 1
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
