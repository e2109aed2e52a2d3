"""The gateway's own work on a live call overlaps the provider's (``send_meanwhile``):
the request is on its way before the work starts, the answer is the provider's, a fault
in the work costs nothing, an answer that comes in meanwhile is not held by what is left
of the work, and an agent that gives up takes the provider call with it."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from otel_replay.cassette.model import load
from otel_replay.core.lazy import import_meanwhile, pending
from otel_replay.gateway.call import Call
from otel_replay.gateway.runner import GatewayConfig, GatewayServer, GatewayThread
from otel_replay.gateway.upstream import HttpUpstream, UpstreamRequest, send_meanwhile
from otel_replay.reports.run import Summary
from otel_replay.testing.stub import StubUpstream


class Provider:
    """A loopback server that answers only once told to, and notes what it saw."""

    def __init__(self) -> None:
        self.received = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.received.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return web.json_response({"echo": body.decode()})


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    served = Provider()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", served.handle)
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    served.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield served
    finally:
        await runner.cleanup()


def _request(body: bytes = b'{"model":"m"}') -> UpstreamRequest:
    return UpstreamRequest(
        provider="openai",
        method="POST",
        path="/v1/chat/completions",
        query="",
        headers={"content-type": "application/json"},
        body=body,
    )


def _recording(tmp_path: Path, upstream: str) -> GatewayConfig:
    """A record-mode gateway forwarding OpenAI calls to ``upstream``."""
    return GatewayConfig(
        mode="record",
        cassette=tmp_path / "c.json",
        upstream_openai=upstream,
        grpc_port=None,
        environ={},
    )


async def _read(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


async def test_the_work_runs_while_the_provider_holds_the_call(provider: Provider) -> None:
    upstream = HttpUpstream({"openai": provider.url})
    seen_during_work: list[bool] = []

    def work() -> Iterator[None]:
        seen_during_work.append(provider.received.is_set())
        provider.release.set()  # the provider answers only once the work has run
        yield

    try:
        answer = await asyncio.wait_for(send_meanwhile(upstream, _request(), work), 10)
        assert answer.status == 200
        assert await _read(answer.chunks) == b'{"echo": "{\\"model\\":\\"m\\"}"}'
    finally:
        await upstream.aclose()
    assert len(seen_during_work) == 1


async def test_a_fault_in_the_work_leaves_the_answer_alone(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    upstream = HttpUpstream({"openai": provider.url})
    provider.release.set()

    def work() -> Iterator[None]:
        yield
        raise ValueError("canonical form failed")

    try:
        with caplog.at_level(logging.DEBUG, logger="otel_replay.gateway"):
            answer = await send_meanwhile(upstream, _request(), work)
        assert answer.status == 200
        assert b"echo" in await _read(answer.chunks)
    finally:
        await upstream.aclose()
    assert "canonical form failed" in caplog.text


async def test_an_agent_that_gives_up_takes_the_provider_call_with_it(
    provider: Provider,
) -> None:
    upstream = HttpUpstream({"openai": provider.url})
    call = asyncio.ensure_future(send_meanwhile(upstream, _request(), lambda: iter(())))
    try:
        await asyncio.wait_for(provider.received.wait(), 10)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(provider.cancelled.wait(), 10)  # its connection was closed
    finally:
        await upstream.aclose()


async def test_a_send_with_no_work_is_the_send_itself(provider: Provider) -> None:
    upstream = HttpUpstream({"openai": provider.url})
    provider.release.set()
    try:
        answer = await send_meanwhile(upstream, _request(b'{"stream":true}'), None)
        assert answer.status == 200
        assert await _read(answer.chunks) == b'{"echo": "{\\"stream\\":true}"}'
    finally:
        await upstream.aclose()


async def test_a_cookie_the_provider_sets_is_in_its_answer_and_never_sent_back() -> None:
    """The gateway forwards what the agent sends: a cookie a provider sets (a CDN's bot
    cookie) stays in the answer the agent gets, and the gateway's own client keeps none
    of it, so no later call, whoever makes it, carries a cookie its agent did not send."""
    cookies: list[str | None] = []

    async def handle(request: web.Request) -> web.Response:
        cookies.append(request.headers.get("Cookie"))
        answer = web.json_response({"id": "r"})
        answer.set_cookie("__cf_bm", "provider-set", domain="localhost")
        return answer

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    upstream = HttpUpstream({"openai": f"http://localhost:{port}/v1"})  # a name, not an IP
    try:
        for _ in range(2):
            answer = await upstream.send(_request())
            assert "__cf_bm=provider-set" in answer.headers.get("Set-Cookie", "")
            await _read(answer.chunks)
    finally:
        await upstream.aclose()
        await runner.cleanup()
    assert cookies == [None, None]


async def test_an_answer_that_comes_in_is_not_held_by_the_work_left(
    provider: Provider,
) -> None:
    """Work far longer than the provider takes (a coding agent's new request redacted on
    a run's first call) is taken in slices: the answer is handed on once it is in, and the
    steps left are there for whoever needs their result."""
    upstream = HttpUpstream({"openai": provider.url})
    provider.release.set()
    taken: list[int] = []

    def work() -> Iterator[None]:
        for step in range(400):
            time.sleep(0.001)  # 400 ms of work in all, the loop let run between slices
            taken.append(step)
            yield

    steps = work()
    try:
        answer = await asyncio.wait_for(send_meanwhile(upstream, _request(), lambda: steps), 10)
        assert answer.status == 200
        assert b"echo" in await _read(answer.chunks)
    finally:
        await upstream.aclose()
    left = 400 - len(taken)
    assert 0 < left < 400  # begun, and left once the answer was in
    assert sum(1 for _ in steps) == left  # the rest, there for whoever needs it


async def test_a_streamed_call_is_prepared_while_its_provider_works(
    provider: Provider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Record mode prepares a call (its body redacted, its span's request half drafted)
    while the provider holds it, streamed or not: the provider here answers only once
    the preparing is done, and the recording is whole."""
    held: list[bool] = []
    preparing = Call.preparing
    loop = asyncio.get_running_loop()

    def prepared_then_answered(call: Call) -> Iterator[None]:  # on the gateway's thread
        # released once per call: a later ``preparing()`` takes what is left of the same
        # steps, and releasing again could reach the next call's provider early
        first = call._steps is None
        if first:
            held.append(not provider.release.is_set())
        yield from preparing(call)
        if first:
            loop.call_soon_threadsafe(provider.release.set)

    monkeypatch.setattr(Call, "preparing", prepared_then_answered)
    config = _recording(tmp_path, provider.url)
    with GatewayThread(config) as gateway:
        url = gateway.env["OPENAI_BASE_URL"] + "/chat/completions"
        for stream in (True, False):
            body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
            provider.release.clear()
            provider.received.clear()
            async with aiohttp.ClientSession() as session:
                # without the preparing first, the provider would never answer
                answer = await asyncio.wait_for(session.post(url, json=body), 10)
                assert answer.status == 200
                await answer.read()
        await loop.run_in_executor(None, gateway.stop)
    assert held == [True, True]
    assert len(load(tmp_path / "c.json").interactions) == 2


async def test_a_stream_is_not_held_by_a_long_preparing(
    stub_thread: StubUpstream, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A recorded stream's first events reach the agent while its call is still being
    prepared (a long preparing: a run's first, new coding-agent request), and the
    recording made at its end is whole: the rest of the preparing was taken by then."""
    preparing = Call.preparing
    taken: list[int] = []
    total = 300

    def slow(call: Call) -> Iterator[None]:  # on the gateway's thread
        if call._steps is None:
            call._steps = _slowly(preparing(call))
        return call._steps

    def _slowly(steps: Iterator[None]) -> Iterator[None]:
        for step in range(total):
            time.sleep(0.001)  # 300 ms of preparing
            taken.append(step)
            yield
        yield from steps

    monkeypatch.setattr(Call, "preparing", slow)
    config = _recording(tmp_path, stub_thread.url)
    loop = asyncio.get_running_loop()
    with GatewayThread(config) as gateway:
        url = gateway.env["OPENAI_BASE_URL"] + "/chat/completions"
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        async with aiohttp.ClientSession() as session:
            answer = await asyncio.wait_for(session.post(url, json=body), 10)
            first = await asyncio.wait_for(answer.content.readline(), 10)
            taken_at_first = len(taken)
            rest = await asyncio.wait_for(answer.read(), 10)
        await loop.run_in_executor(None, gateway.stop)
    assert first.startswith(b"data: ")
    assert b"[DONE]" in rest
    assert taken_at_first < total  # the first event did not wait for the preparing
    assert len(taken) == total  # which was all done by the recording
    recorded = load(tmp_path / "c.json").interactions
    assert len(recorded) == 1 and recorded[0].response.events


async def test_the_work_waits_until_the_body_is_written(provider: Provider) -> None:
    """The work begins once the request's body is written, a new connection made first:
    it never slows the request's way out (a run's first call makes the connection)."""
    upstream = HttpUpstream({"openai": provider.url})
    provider.release.set()
    body = b'{"model":"m","messages":"' + b"x" * 300_000 + b'"}'
    request = _request(body)
    written: list[bool] = []

    def work() -> Iterator[None]:
        assert request.sent is not None
        written.append(request.sent.done())
        yield

    try:
        for _ in range(2):  # a new connection, then the same one again
            request.sent = None
            answer = await send_meanwhile(upstream, request, work)
            assert answer.status == 200
            assert len(await _read(answer.chunks)) > 300_000
    finally:
        await upstream.aclose()
    assert written == [True, True]


async def test_a_module_still_loading_is_waited_for_with_the_loop_serving(
    provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Work that needs a module the gateway is still loading on a worker thread (the
    span encoder, as a recording gateway starts, slow on a cold machine) waits for it
    with the loop serving: the answer is handed on before the module is loaded, where
    importing it on the loop would hold everything until then."""
    name = "otel_replay_slow_module_for_test"
    (tmp_path / f"{name}.py").write_text("import time\n\ntime.sleep(0.6)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    loading = asyncio.ensure_future(import_meanwhile(name))
    while pending(name) is None:  # the load begun on its thread
        assert not loading.done()
        await asyncio.sleep(0.005)
    upstream = HttpUpstream({"openai": provider.url})
    provider.release.set()

    def work() -> Iterator[object]:
        while (waiting := pending(name)) is not None:
            yield waiting
        importlib.import_module(name)
        yield None

    steps = work()
    try:
        answer = await send_meanwhile(upstream, _request(), lambda: steps)
        answered_before_loaded = not loading.done()
        assert answer.status == 200
        assert b"echo" in await _read(answer.chunks)
    finally:
        await upstream.aclose()
        await loading
    assert answered_before_loaded
    assert sum(1 for _ in steps) == 1  # the rest: the import, done by now
    assert name in sys.modules
    monkeypatch.delitem(sys.modules, name)


@contextlib.asynccontextmanager
async def _loading_encoder(
    stub: StubUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    summaries: list[Summary],
) -> AsyncIterator[tuple[str, asyncio.Future[None]]]:
    """A recording gateway whose span encoder is a module of ``source``, still loading on
    the gateway's worker thread: yields its chat completions URL and the load; its
    summary goes into ``summaries`` once it has stopped."""
    name = f"otel_replay_encoder_{uuid.uuid4().hex}"  # never met before in this process
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("otel_replay.gateway.call._ENCODER", name)
    record = GatewayServer(_recording(tmp_path, stub.url + "/v1"))
    await record.start()
    loading = asyncio.ensure_future(import_meanwhile(name))
    try:
        while pending(name) is None:  # the load begun on its thread
            assert not loading.done()
            await asyncio.sleep(0.005)
        yield record.env["OPENAI_BASE_URL"] + "/chat/completions", loading
    finally:
        summaries.append(await record.stop())
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.mark.parametrize("stream", [True, False])
async def test_an_agent_that_leaves_while_a_module_loads_is_recorded(
    stream: bool, stub: StubUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The span encoder still loading when the answer is in, the agent leaves: a stream
    it had every event of is recorded whole; a plain call it gave up on, as the timeout
    it saw. Nothing it was given goes unrecorded."""
    source = "import time\n\ntime.sleep(1.5)\n"
    summaries: list[Summary] = []
    async with _loading_encoder(stub, tmp_path, monkeypatch, source, summaries) as (url, loading):
        body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        async with aiohttp.ClientSession() as session:
            if stream:
                answer = await asyncio.wait_for(session.post(url, json=body), 10)
                while b"[DONE]" not in await asyncio.wait_for(answer.content.readline(), 10):
                    pass
                answer.close()  # the SDK's way after [DONE]: the stream's end is not awaited
            else:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(session.post(url, json=body), 0.5)
        assert not loading.done()  # the agent left while the module was loading
        await loading
    recorded = load(tmp_path / "c.json").interactions
    assert summaries[0].live == 1 and len(recorded) == 1
    response = recorded[0].response
    if stream:
        assert response.fault is None and response.events
        assert response.events[-1].data == "[DONE]"
    else:
        assert (response.status, response.fault) == (0, "timeout")


async def test_a_module_that_fails_to_load_costs_the_call_nothing(
    stub: StubUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load the call waits on that fails (logged with the gateway's start) is not the
    call's failure: the agent gets its answer and the exchange is recorded."""
    source = "import time\n\ntime.sleep(0.5)\nraise RuntimeError\n"
    summaries: list[Summary] = []
    async with _loading_encoder(stub, tmp_path, monkeypatch, source, summaries) as (url, loading):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        async with aiohttp.ClientSession() as session:
            answer = await asyncio.wait_for(session.post(url, json=body), 10)
            assert answer.status == 200
            assert (await answer.json())["object"] == "chat.completion"
        with pytest.raises(RuntimeError):
            await loading
    assert summaries[0].live == 1
    assert len(load(tmp_path / "c.json").interactions) == 1


@pytest.mark.parametrize("mode", ["record", "off"])
async def test_a_recording_gateway_builds_its_piece_check_off_the_loop_as_it_starts(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's first recorded call checks its body for pieces (``holds_no_piece``), whose
    automaton RE2 builds as text first needs it: a recording gateway builds it as it
    starts, once, on a worker thread rather than on its loop; a gateway that does not
    record leaves it alone."""
    import threading

    from otel_replay.spans import pieces

    warm, warmed = pieces.warm, []

    def noted() -> None:
        warmed.append(threading.current_thread())
        warm()

    monkeypatch.setattr(pieces, "warm", noted)
    cassette = tmp_path / "c.json" if mode == "record" else None
    config = GatewayConfig(mode=mode, cassette=cassette, traces=tmp_path / "t.jsonl")
    gateway = GatewayServer(config)
    await gateway.start()
    try:
        assert gateway._warming is not None
        await gateway._warming
    finally:
        await gateway.stop()
    if mode == "off":
        assert warmed == []
        return
    assert len(warmed) == 1 and warmed[0] is not threading.current_thread()
    raw = b'{"text": "' + b"x" * pieces.MIN_PIECE + b'"}'
    assert not pieces.holds_no_piece(raw) and pieces.holds_no_piece(raw[:-12] + b'"}')


SECRET = "sk-proj-" + "A1b2C3d4" * 5


def _new_conversation(stream: bool) -> dict[str, object]:
    """A request whose items are all new to the gateway, 20 KB and more of them."""
    words = " ".join(f"word{i}" for i in range(4000))
    return {
        "model": "m",
        "stream": stream,
        "messages": [
            {"role": "system", "content": f"{words} key {SECRET}"},
            {"role": "user", "content": words[::-1]},
        ],
    }


async def test_a_new_conversation_is_redacted_aside_while_its_stream_starts(
    stub_thread: StubUpstream, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A new conversation's items (a run's first request) are redacted on a worker
    thread: the first event reaches the agent while the worker still holds them, and the
    recording made at the stream's end waits for it, its secret redacted."""
    import threading

    from otel_replay.redaction.redact import Redactor

    release, workers = threading.Event(), []
    json_of = Redactor.json

    def held_aside(self: Redactor, value: object, **kw: object) -> object:
        if "executor" in threading.current_thread().name:  # the gateway loop's executor
            workers.append(threading.current_thread().name)
            assert release.wait(10)
        return json_of(self, value, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Redactor, "json", held_aside)
    config = _recording(tmp_path, stub_thread.url)
    loop = asyncio.get_running_loop()
    with GatewayThread(config) as gateway:
        url = gateway.env["OPENAI_BASE_URL"] + "/chat/completions"
        async with aiohttp.ClientSession() as session:
            answer = await asyncio.wait_for(session.post(url, json=_new_conversation(True)), 10)
            first = await asyncio.wait_for(answer.content.readline(), 10)
            held = not release.is_set() and bool(workers)
            release.set()
            rest = await asyncio.wait_for(answer.read(), 10)
        await loop.run_in_executor(None, gateway.stop)
    assert first.startswith(b"data: ") and b"[DONE]" in rest
    assert held  # the first event came while the worker held the items
    text = (tmp_path / "c.json").read_text()
    assert SECRET not in text and "[REDACTED" in text
    (recorded,) = load(tmp_path / "c.json").interactions
    assert recorded.response.events


def test_redacting_aside_gives_the_redaction_done_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a loop, without one, and with a worker that fails (its items are redacted in
    place), a new conversation's body comes out redacted as the whole body would be."""
    import json

    from otel_replay.gateway import body as body_module
    from otel_replay.gateway.bodies import Bodies
    from otel_replay.gateway.call import redacted_body
    from otel_replay.redaction.redact import Redactor

    redactor = Redactor()
    raw = json.dumps(_new_conversation(False)).encode()
    want = redacted_body(redactor, raw, json.loads(raw))
    assert SECRET not in json.dumps(want)

    body = Bodies(redactor).read(raw)  # no loop: in place, a step per item
    assert all(step is None for step in body.redacting())
    assert body.redacted() == want
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)

        async def in_loop(body: body_module.Body) -> tuple[object, int]:
            futures = 0
            for step in body.redacting():
                if isinstance(step, asyncio.Future):
                    futures += 1
                    await asyncio.wait([step])
            return body.redacted(), futures

        assert loop.run_until_complete(in_loop(Bodies(redactor).read(raw))) == (want, 1)

        def failing(items: object, redactor: object) -> None:
            raise RuntimeError("worker fault")

        monkeypatch.setattr(body_module, "_clean_all", failing)
        assert loop.run_until_complete(in_loop(Bodies(redactor).read(raw))) == (want, 1)
    finally:
        asyncio.set_event_loop(None)
        loop.close()
