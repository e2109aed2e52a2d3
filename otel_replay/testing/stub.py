"""A stub upstream: a small, deterministic fake of the OpenAI, Anthropic and Gemini APIs.

It is the built-in upstream of ``otel-replay demo`` and the peer the tests start. Answers
are computed from the request, so the same request always gets the same answer:

- with tools offered and no tool result yet in the conversation, the model calls the first
  tool with ``{"<first parameter>": "<last user text>"}``;
- otherwise it answers ``stub reply to: <last user or tool text>`` (``voice``: another word
  than ``stub``, so that a second stub stands for another model);
- a user's text may script the turn (Anthropic Messages): ``stub:call NAME {json}`` calls
  the offered tool ``NAME`` with those arguments, ``stub:text`` answers in text although
  tools are offered (``stub_turns.directive``).

The Gemini API's model methods (``/v1beta/models/{model}:generateContent`` and the
rest) answer from ``stub_gemini``; AWS Bedrock Runtime's ``/model/{modelId}/...`` paths as
``stub_bedrock`` says; Vertex AI's ``.../publishers/{google,anthropic}/models/{model}:{method}``
paths like the Gemini and Anthropic ones. Azure OpenAI's paths answer like the OpenAI ones:
``/openai/deployments/{deployment}/...`` and ``/openai/...`` (both requiring
``?api-version=``; the deployment is the default model) and ``/openai/v1/...``; an Azure
chat stream opens with the prompt-filter chunk Azure sends.

Streams are produced here independently of otel-replay's own stream code, the way the real
APIs stream them, so tests that replay through the gateway check one against the other.
``python -m otel_replay.testing.stub`` runs it for a test in another language: it prints
one JSON line ``{"url": ..., "openai_url": ..., "anthropic_url": ...}`` once it serves,
and serves until its standard input ends.

Faults can be scripted per request with :meth:`StubUpstream.enqueue`, and the output items of
the next Responses API answers (a coding agent's shell call) with :meth:`StubUpstream.script`.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from otel_replay.testing import stub_anthropic, stub_bedrock, stub_gemini, stub_openai, stub_ws
from otel_replay.testing.stub_turns import VOICE, Reply, digest, tokens

__all__ = ["STS_PATH", "Fault", "StubUpstream", "main", "run_stub"]


@dataclass(slots=True)
class Fault:
    """A scripted answer for the next matching request.

    ``kind``: ``"status"`` (answer ``status`` with ``body`` and ``headers``), ``"reset"``
    (drop the connection before any response), ``"hang"`` (never answer), ``"malformed"``
    (200 with a body that is not JSON), ``"reset_mid_stream"`` (stream ``after_events``
    events, then drop the connection), ``"stream_exception"`` (an AWS event stream sends
    ``after_events`` events, then the exception ``headers["exception"]``). ``path``
    restricts it to paths ending so.
    """

    kind: str
    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    after_events: int = 2
    path: str = ""


@dataclass(slots=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""
    raw_path: str = ""
    raw: bytes = b""


class StubUpstream:
    """The fake provider server. Use ``async with StubUpstream() as stub`` or
    :func:`run_stub` from synchronous code."""

    def __init__(
        self, *, event_delay: float = 0.0, voice: str = "stub", websockets: bool = True
    ) -> None:
        self.event_delay = event_delay
        self.websockets = websockets  # False: every upgrade refused (426), as an HTTP-only API
        self.voice = voice  # text answers read "<voice> reply to: ..."
        self.received: list[Received] = []
        self.faults: deque[Fault] = deque()
        self.scripted: deque[list[dict[str, Any]]] = deque()
        self.release_last_event: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.url

    async def start(self) -> StubUpstream:
        self.loop = asyncio.get_running_loop()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server: Any = site._server
        self.port = int(server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> StubUpstream:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def release(self) -> None:
        """Let streams send their last event (thread-safe)."""
        event, loop = self.release_last_event, self.loop
        if event is not None and loop is not None:
            loop.call_soon_threadsafe(event.set)

    def enqueue(self, *faults: Fault) -> None:
        """Script the answers to the next requests (first in, first used)."""
        self.faults.extend(faults)

    def script(self, *outputs: list[dict[str, Any]]) -> None:
        """Script the output items of the next Responses API answers, one list per
        request (first in, first used); answers are computed again once they run out."""
        self.scripted.extend(outputs)

    # -- dispatch ----------------------------------------------------------------------
    def _cut(self) -> int | None:
        """After how many events the next Responses answer over a WebSocket breaks off."""
        for fault in list(self.faults):
            if fault.kind == "reset_mid_stream" and "/v1/responses".endswith(fault.path):
                self.faults.remove(fault)
                return fault.after_events
        return None

    def _take_fault(self, path: str) -> Fault | None:
        for fault in list(self.faults):
            if path.endswith(fault.path):
                self.faults.remove(fault)
                return fault
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        VOICE.set(self.voice)  # this request's task only
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(
            Received(
                request.method,
                request.path,
                headers,
                body,
                request.query_string,
                request.raw_path.partition("?")[0],
                raw,
            )
        )
        if "websocket" in headers.get("upgrade", "").lower():
            served = (
                await stub_ws.serve(request, self.scripted, self._cut) if self.websockets else None
            )
            if served is not None:
                return served
            # no WebSocket form here: the client's cue to stream over HTTP instead
            return web.json_response({"error": {"message": "stub: no WebSockets"}}, status=426)
        fault = self._take_fault(request.path)
        if fault is not None and fault.kind not in ("reset_mid_stream", "stream_exception"):
            return await self._fault(request, fault)
        path = request.path
        anthropic = "anthropic-version" in headers or path.startswith("/v1/messages")
        body = body if isinstance(body, dict) else {}
        if path.startswith("/model/"):
            return await self._bedrock(request, path, body, fault)
        if path == STS_PATH:  # Google's token exchange (workload identity federation)
            return web.json_response(_sts_token(raw))
        vertex = _VERTEX.fullmatch(path)
        if vertex is not None:  # Vertex AI: the publisher's own API, the model in the path
            publisher, model, method = vertex.groups()
            if publisher == "google":
                path = f"/v1beta/models/{model}:{method}"
            elif model == "count-tokens":
                path, anthropic = "/v1/messages/count_tokens", True
            else:
                body.setdefault("model", model)
                path, anthropic = "/v1/messages", True
        azure = path.startswith("/openai/")
        if azure:
            route, deployment = _azure_route(path, request.query)
            if route is None:
                return web.json_response(
                    {"error": {"code": "404", "message": "Resource not found"}}, status=404
                )
            if deployment is not None:
                body.setdefault("model", deployment)
            path, anthropic = route, False
        if stub_gemini.is_gemini(path):
            reply = stub_gemini.answer(path, body)
            if reply is not None:
                return await self._answer(request, reply, fault)
        if path == "/v1/models":
            return web.json_response({"object": "list", "data": [stub_openai.model("stub-model")]})
        if anthropic and path == "/v1/messages/count_tokens":
            text = json.dumps(body.get("messages", []))
            return web.json_response({"input_tokens": tokens(text)})
        if anthropic and path == "/v1/messages":
            return await self._answer(request, stub_anthropic.messages(body), fault)
        if path == "/v1/chat/completions":
            return await self._answer(request, stub_openai.chat(body, azure=azure), fault)
        if path == "/v1/responses":
            scripted = self.scripted.popleft() if self.scripted else None
            return await self._answer(request, stub_openai.responses(body, scripted), fault)
        if path == "/v1/embeddings":
            return web.json_response(stub_openai.embeddings(body))
        if path == "/v1/completions":
            return web.json_response(stub_openai.completions(body))
        return web.json_response(
            {"error": {"message": f"stub: unknown path {path}", "type": "invalid_request_error"}},
            status=404,
        )

    async def _bedrock(
        self, request: web.Request, path: str, body: dict[str, Any], fault: Fault | None
    ) -> web.StreamResponse:
        model, action = stub_bedrock.split(path)
        stream = action.endswith("-stream")
        if action in ("converse", "converse-stream"):
            reply = stub_bedrock.converse(body, stream)
        elif action in ("invoke", "invoke-with-response-stream"):
            reply = stub_bedrock.invoke(model, body, stream)
        else:
            message = {"message": f"stub: unknown action {action}"}
            headers = {"x-amzn-errortype": "UnknownOperationException"}
            return web.json_response(message, status=404, headers=headers)
        ids = {"x-amzn-requestid": "req-" + digest(body, 8)}
        if fault is not None and fault.kind == "stream_exception" and isinstance(reply, list):
            error = stub_bedrock.exception(fault.headers.get("exception", "throttlingException"))
            reply, fault = [*reply[: fault.after_events], error], None
        if isinstance(reply, dict):
            return web.json_response(reply, headers=ids)
        return await self._stream(request, reply, fault, stub_bedrock.CONTENT_TYPE, ids)

    async def _fault(self, request: web.Request, fault: Fault) -> web.StreamResponse:
        if fault.kind == "status":
            body = fault.body if fault.body is not None else {"error": {"message": "stub fault"}}
            return web.json_response(body, status=fault.status, headers=fault.headers)
        if fault.kind == "malformed":
            return web.Response(text='{"id": "chatcmpl-broken", ', content_type="application/json")
        if fault.kind == "hang":
            await asyncio.sleep(3600)
        transport = request.transport
        if transport is not None:
            transport.abort()
        raise asyncio.CancelledError

    async def _answer(
        self, request: web.Request, reply: Reply, fault: Fault | None
    ) -> web.StreamResponse:
        if isinstance(reply, dict):
            return web.json_response(reply)
        return await self._stream(request, reply, fault)

    async def _stream(
        self,
        request: web.Request,
        chunks: list[bytes],
        fault: Fault | None,
        content_type: str = "text/event-stream",
        headers: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"content-type": content_type, **(headers or {"x-request-id": "req_stub"})}
        )
        await response.prepare(request)
        for i, chunk in enumerate(chunks):
            if fault is not None and i == fault.after_events:
                transport = request.transport
                if transport is not None:
                    transport.abort()
                return response
            if i == len(chunks) - 1 and self.release_last_event is not None:
                await self.release_last_event.wait()
            elif i and self.event_delay:
                await asyncio.sleep(self.event_delay)
            await response.write(chunk)
        await response.write_eof()
        return response


STS_PATH = "/v1/token"
"""Google's Security Token Service exchange (``https://sts.googleapis.com/v1/token``)."""


def _sts_token(raw: bytes) -> dict[str, Any]:
    """A Google access token for a token exchange, named after its subject token."""
    return {
        "access_token": "ya29.stub-" + digest(raw.decode("utf-8", "replace"), 24),
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": 3600,
    }


_VERTEX = re.compile(
    r"/v1(?:beta1)?/(?:projects/[^/]+/locations/[^/]+/)?publishers/(google|anthropic)/models/"
    r"([^/:]+):([A-Za-z]+)"
)


def _azure_route(path: str, query: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The OpenAI path an Azure OpenAI path stands for and the deployment it names. The
    path is None, as Azure's 404, when a versioned route lacks ``api-version``."""
    rest = path[len("/openai") :]
    if rest.startswith("/v1/"):
        return rest, None
    if "api-version" not in query:
        return None, None
    parts = rest.split("/")
    if len(parts) > 3 and parts[1] == "deployments":
        return "/v1/" + "/".join(parts[3:]), parts[2]
    return "/v1" + rest, None


@contextmanager
def run_stub(**kwargs: Any) -> Iterator[StubUpstream]:
    """Run a :class:`StubUpstream` on its own event loop thread, for synchronous code."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stub = StubUpstream(**kwargs)

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(stub.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="otel-replay-stub", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield stub
    finally:
        asyncio.run_coroutine_threadsafe(stub.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def main() -> int:
    """The stub as a command: its URLs on one line, then serve until stdin ends."""
    import sys

    with run_stub() as stub:
        urls = {"url": stub.url, "openai_url": stub.openai_url, "anthropic_url": stub.url}
        print(json.dumps(urls), flush=True)
        while sys.stdin.readline():
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
