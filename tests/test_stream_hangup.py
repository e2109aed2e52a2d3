"""An agent that hangs up once it has its stream's closing event saw the whole answer.

The official OpenAI SDK closes the connection after ``[DONE]`` without waiting for the
server to end the response. When the upstream is slower to end it than the agent is to
leave, the recording must still be the complete answer — not a timeout, which would replay
as a ten-minute hang. Each provider says which event closes its streams.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import openai
import pytest
from aiohttp import web

from otel_replay import providers
from otel_replay.cassette.model import load
from otel_replay.core.exchange import SSEEvent
from otel_replay.gateway.runner import GatewayConfig, GatewayThread

CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}],
}
FINISH = {**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


async def _lingering(request: web.Request) -> web.StreamResponse:
    """Streams a whole answer, then keeps the response open until the client leaves."""
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    for data in (CHUNK, FINISH):
        await response.write(f"data: {json.dumps(data)}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    await asyncio.sleep(30)
    return response


@contextmanager
def lingering_upstream() -> Iterator[str]:
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/{tail:.*}", _lingering)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def _openai_text(env: dict[str, str]) -> str:
    client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="k", timeout=20)
    stream = client.chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "hello"}]
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream)


def test_an_agent_leaving_after_the_closing_event_records_the_whole_answer(tmp_path):
    cassette = tmp_path / "c.json"
    with lingering_upstream() as url:
        config = GatewayConfig(mode="record", cassette=cassette, upstream_openai=url)
        with GatewayThread(config) as gw:
            assert _openai_text(gw.env) == "hi"
    [recorded] = load(cassette).interactions
    assert recorded.response.fault is None
    assert recorded.response.events is not None and recorded.response.events[-1].data == "[DONE]"
    with GatewayThread(GatewayConfig(mode="strict", cassette=cassette)) as gw:
        assert _openai_text(gw.env) == "hi"  # a fault would replay as a hang: timeout=20
    assert gw.summary is not None and gw.summary.replayed == 1


@pytest.mark.parametrize(
    ("provider", "events", "done"),
    [
        ("openai", [SSEEvent(data="{}"), SSEEvent(data="[DONE]")], True),
        ("openai", [SSEEvent(data="{}")], False),
        ("openai", [SSEEvent(event="response.completed", data="{}")], True),
        ("openai", [SSEEvent(event="response.output_text.delta", data="{}")], False),
        ("anthropic", [SSEEvent(event="message_stop", data="{}")], True),
        ("anthropic", [SSEEvent(event="content_block_delta", data="{}")], False),
        ("anthropic", [], False),
    ],
)
def test_each_provider_names_the_event_that_closes_its_streams(provider, events, done):
    assert providers.get(provider).stream_done(events) is done
