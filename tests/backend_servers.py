"""Jaeger v2 and Tempo query APIs, answering from the fixtures in ``backend_fixtures/``
in their documented shapes, as small aiohttp servers on loopback: Tempo (not run here),
and Jaeger only for what a real Jaeger cannot be made to show (a token it checks; the
real one is in ``go_servers.py``). Each fixture names the API version whose shape it has:
``jaeger-api-v3-trace.json`` (``GET /api/v3/traces/{id}``: OTLP JSON under ``result``),
``tempo-api-v2-trace.json`` (``GET /api/v2/traces/{id}``: ``TraceByIDResponse``,
base64 ids), ``tempo-api-v1-trace.json`` (``GET /api/traces/{id}``: ``batches``)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from otel_replay.otlp.codec import traces_from_json

FIXTURES = Path(__file__).resolve().parent / "backend_fixtures"
PROTOBUF = "application/protobuf"
SEEN: web.AppKey[list[dict[str, str]]] = web.AppKey("seen", list)
"""The query parameters of each search a fixture server answered."""


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def fixture_trace_id() -> str:
    """The agent trace's id (hex), as the Jaeger fixture carries it."""
    doc = fixture("jaeger-api-v3-trace.json")["result"]
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]


@contextmanager
def serving(app: web.Application) -> Iterator[str]:
    """``app`` on a free loopback port, on its own event loop thread; yields its URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    ready = threading.Event()
    port: list[int] = []

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="backend-fixture", daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield f"http://127.0.0.1:{port[0]}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def _auth(token: str | None) -> Callable[[web.Request], web.Response | None]:
    def check(request: web.Request) -> web.Response | None:
        if token and request.headers.get("Authorization") != f"Bearer {token}":
            return web.Response(status=401, text="unauthorized")
        return None

    return check


def jaeger_app(token: str | None = None) -> web.Application:
    """Jaeger v2's ``api/v3`` trace by id, behind a bearer ``token`` when given."""
    doc = fixture("jaeger-api-v3-trace.json")
    trace_id = fixture_trace_id()
    refused = _auth(token)
    app = web.Application()

    async def by_id(request: web.Request) -> web.Response:
        if (denied := refused(request)) is not None:
            return denied
        if request.match_info["trace_id"] != trace_id:
            body = {"error": {"httpCode": 404, "message": "trace not found"}}
            return web.json_response(body, status=404)
        return web.json_response(doc)

    app.router.add_get("/api/v3/traces/{trace_id}", by_id)
    return app


def tempo_app(version: str, *, protobuf: bool) -> web.Application:
    """Tempo answering trace by id in API ``version`` (``v2``, or ``v1`` only: no
    ``/api/v2``), in protobuf when asked and ``protobuf`` is on; and ``/api/search``."""
    name = f"tempo-api-{version}-trace.json"
    doc = fixture(name)
    trace_id = fixture_trace_id()
    app = web.Application()
    app[SEEN] = []

    def answer(request: web.Request) -> web.Response:
        if request.match_info["trace_id"].rjust(32, "0") != trace_id:
            return web.Response(status=404, text="trace not found")
        if protobuf and request.headers.get("Accept") == PROTOBUF:
            return web.Response(body=_protobuf(version, doc), content_type=PROTOBUF)
        return web.json_response(doc)

    async def search(request: web.Request) -> web.Response:
        app[SEEN].append(dict(request.query))
        found = [{"traceID": trace_id.lstrip("0"), "rootServiceName": "weather-agent"}]
        return web.json_response({"traces": found, "metrics": {"inspectedTraces": 1}})

    if version == "v2":
        app.router.add_get("/api/v2/traces/{trace_id}", _handler(answer))
    else:
        app.router.add_get("/api/traces/{trace_id}", _handler(answer))
    app.router.add_get("/api/search", search)
    return app


def _handler(answer: Callable[[web.Request], web.Response]) -> Any:
    async def handle(request: web.Request) -> web.Response:
        return answer(request)

    return handle


def _protobuf(version: str, doc: dict[str, Any]) -> bytes:
    """The fixture as Tempo's protobuf: ``Trace`` (v1; field 1 ``ResourceSpans``, as an
    export request's) or ``TraceByIDResponse`` (v2; field 1 the ``Trace``, field 3 its
    status)."""
    spans = doc["batches"] if version == "v1" else doc["trace"]["resourceSpans"]
    trace = traces_from_json({"resourceSpans": spans}).SerializeToString()
    if version == "v1":
        return trace
    return b"\x0a" + _varint(len(trace)) + trace + b"\x18\x01"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)
