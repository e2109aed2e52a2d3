"""A stub upstream: a small, deterministic fake of the OpenAI and Anthropic APIs.

It is the built-in upstream of ``otel-replay demo`` and the peer the tests start. Answers
are computed from the request, so the same request always gets the same answer:

- with tools offered and no tool result yet in the conversation, the model calls the first
  tool with ``{"<first parameter>": "<last user text>"}``;
- otherwise it answers ``stub reply to: <last user or tool text>``.

Azure OpenAI's paths answer like the OpenAI ones: ``/openai/deployments/{deployment}/...``
and ``/openai/...`` (both requiring ``?api-version=``; the deployment is the default model)
and ``/openai/v1/...``; an Azure chat stream opens with the prompt-filter chunk Azure sends.

Streams are produced here independently of otel-replay's own stream code, the way the real
APIs stream them, so tests that replay through the gateway check one against the other.
Faults can be scripted per request with :meth:`StubUpstream.enqueue`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["Fault", "StubUpstream", "run_stub"]


@dataclass(slots=True)
class Fault:
    """A scripted answer for the next matching request.

    ``kind``: ``"status"`` (answer ``status`` with ``body`` and ``headers``), ``"reset"``
    (drop the connection before any response), ``"hang"`` (never answer), ``"malformed"``
    (200 with a body that is not JSON), ``"reset_mid_stream"`` (stream ``after_events``
    events, then drop the connection). ``path`` restricts it to paths ending so.
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


def _last_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content:
            return content
        if isinstance(content, list):
            for block in reversed(content):
                if not isinstance(block, dict):
                    continue
                if isinstance(block.get("text"), str):
                    return str(block["text"])
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, str):
                        return inner
                    if isinstance(inner, list) and inner and isinstance(inner[0], dict):
                        return str(inner[0].get("text", ""))
        if isinstance(message, dict) and message.get("type") == "function_call_output":
            return str(message.get("output", ""))
    return ""


def _has_tool_result(messages: list[Any]) -> bool:
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" or message.get("type") == "function_call_output":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return True
    return False


def _first_param(schema: Any) -> str:
    if isinstance(schema, dict):
        required = schema.get("required")
        if isinstance(required, list) and required:
            return str(required[0])
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            return str(next(iter(props)))
    return "input"


def _digest(value: Any, n: int = 12) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class StubUpstream:
    """The fake provider server. Use ``async with StubUpstream() as stub`` or
    :func:`run_stub` from synchronous code."""

    def __init__(self, *, event_delay: float = 0.0) -> None:
        self.event_delay = event_delay
        self.received: list[Received] = []
        self.faults: deque[Fault] = deque()
        self.connections = 0
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

    # -- dispatch ----------------------------------------------------------------------
    def _take_fault(self, path: str) -> Fault | None:
        for fault in list(self.faults):
            if path.endswith(fault.path):
                self.faults.remove(fault)
                return fault
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(
            Received(request.method, request.path, headers, body, request.query_string)
        )
        fault = self._take_fault(request.path)
        if fault is not None and fault.kind != "reset_mid_stream":
            return await self._fault(request, fault)
        path = request.path
        anthropic = "anthropic-version" in headers or path.startswith("/v1/messages")
        body = body if isinstance(body, dict) else {}
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
        if path == "/v1/models":
            return web.json_response({"object": "list", "data": [_model("stub-model")]})
        if anthropic and path == "/v1/messages/count_tokens":
            text = json.dumps(body.get("messages", []))
            return web.json_response({"input_tokens": _tokens(text)})
        if anthropic and path == "/v1/messages":
            return await self._anthropic(request, body, fault)
        if path == "/v1/chat/completions":
            return await self._chat(request, body, fault, azure=azure)
        if path == "/v1/responses":
            return await self._responses(request, body, fault)
        if path == "/v1/embeddings":
            return web.json_response(_embeddings(body))
        if path == "/v1/completions":
            text = f"stub reply to: {body.get('prompt', '')}"
            return web.json_response(
                {
                    "id": "cmpl-" + _digest(body),
                    "object": "text_completion",
                    "created": 1700000000,
                    "model": body.get("model", "stub-model"),
                    "choices": [
                        {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
                    ],
                    "usage": _usage_openai(body, text),
                }
            )
        return web.json_response(
            {"error": {"message": f"stub: unknown path {path}", "type": "invalid_request_error"}},
            status=404,
        )

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

    async def _stream(
        self, request: web.Request, chunks: list[bytes], fault: Fault | None
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"content-type": "text/event-stream", "x-request-id": "req_stub"}
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

    # -- OpenAI chat -------------------------------------------------------------------
    def _chat_turn(self, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        if tools and not _has_tool_result(messages):
            fn = tools[0].get("function", tools[0])
            name = fn.get("name", "tool")
            args = {_first_param(fn.get("parameters")): _last_text(messages)}
            return "", {"id": "call_" + _digest(body, 16), "name": name, "arguments": args}
        return f"stub reply to: {_last_text(messages)}", None

    async def _chat(
        self, request: web.Request, body: dict[str, Any], fault: Fault | None, azure: bool = False
    ) -> web.StreamResponse:
        text, call = self._chat_turn(body)
        model = body.get("model", "stub-model")
        cid = "chatcmpl-" + _digest(body)
        usage = _usage_openai(body, text or json.dumps(call))
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if call:
                message["tool_calls"] = [_openai_call(call)]
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": 1700000000,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if call else "stop",
                            "logprobs": None,
                        }
                    ],
                    "usage": usage,
                }
            )

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _sse(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )

        chunks = [chunk({"role": "assistant", "content": ""})]
        if azure:
            chunks.insert(0, _sse(_AZURE_FILTER_CHUNK))
        if call:
            head = {
                "index": 0,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            chunks.append(chunk({"tool_calls": [head]}))
            arguments = json.dumps(call["arguments"])
            half = len(arguments) // 2
            for part in (arguments[:half], arguments[half:]):
                delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
                chunks.append(chunk(delta))
        else:
            chunks.extend(chunk({"content": word}) for word in _words(text))
        chunks.append(chunk({}, "tool_calls" if call else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(
                _sse(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": 1700000000,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                )
            )
        chunks.append(_sse("[DONE]"))
        return await self._stream(request, chunks, fault)

    # -- OpenAI Responses --------------------------------------------------------------
    async def _responses(
        self, request: web.Request, body: dict[str, Any], fault: Fault | None
    ) -> web.StreamResponse:
        raw_input = body.get("input")
        items = (
            [{"role": "user", "content": raw_input}]
            if isinstance(raw_input, str)
            else (raw_input or [])
        )
        tools = body.get("tools") or []
        rid = "resp_" + _digest(body)
        output: list[dict[str, Any]]
        if tools and not _has_tool_result(items):
            args = json.dumps({_first_param(tools[0].get("parameters")): _last_text(items)})
            output = [
                {
                    "type": "function_call",
                    "id": "fc_" + _digest(body),
                    "call_id": "call_" + _digest(body, 16),
                    "name": tools[0].get("name", "tool"),
                    "arguments": args,
                    "status": "completed",
                }
            ]
            text = args
        else:
            text = f"stub reply to: {_last_text(items)}"
            output = [
                {
                    "type": "message",
                    "id": "msg_" + _digest(body),
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ]
        usage = {
            "input_tokens": _tokens(json.dumps(items)),
            "output_tokens": _tokens(text),
            "total_tokens": _tokens(json.dumps(items)) + _tokens(text),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        base = {
            "id": rid,
            "object": "response",
            "created_at": 1700000000,
            "model": body.get("model", "stub-model"),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": tools,
            "instructions": body.get("instructions"),
        }
        done = {**base, "status": "completed", "output": output, "usage": usage}
        if not body.get("stream"):
            return web.json_response(done)
        seq = iter(range(1_000_000))
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(_sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind))

        emit("response.created", response={**base, "status": "in_progress", "output": []})
        emit("response.in_progress", response={**base, "status": "in_progress", "output": []})
        item = output[0]
        if item["type"] == "function_call":
            emit("response.output_item.added", output_index=0, item={**item, "arguments": ""})
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=0,
                delta=item["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=0,
                arguments=item["arguments"],
            )
        else:
            emit(
                "response.output_item.added",
                output_index=0,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=0,
                content_index=0,
                part=part,
            )
            for word in _words(text):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=0,
                    content_index=0,
                    delta=word,
                    logprobs=[],
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=0,
                content_index=0,
                text=text,
                logprobs=[],
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=0,
                content_index=0,
                part={**part, "text": text},
            )
        emit("response.output_item.done", output_index=0, item=item)
        emit("response.completed", response=done)
        return await self._stream(request, events, fault)

    # -- Anthropic Messages ------------------------------------------------------------
    async def _anthropic(
        self, request: web.Request, body: dict[str, Any], fault: Fault | None
    ) -> web.StreamResponse:
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        mid = "msg_" + _digest(body)
        model = body.get("model", "stub-model")
        content: list[dict[str, Any]]
        if tools and not _has_tool_result(messages):
            args = {_first_param(tools[0].get("input_schema")): _last_text(messages)}
            content = [
                {
                    "type": "tool_use",
                    "id": "toolu_" + _digest(body, 16),
                    "name": tools[0].get("name", "tool"),
                    "input": args,
                }
            ]
            stop = "tool_use"
            out_text = json.dumps(args)
        else:
            out_text = f"stub reply to: {_last_text(messages)}"
            content = [{"type": "text", "text": out_text}]
            stop = "end_turn"
        usage = {
            "input_tokens": _tokens(json.dumps(messages)),
            "output_tokens": _tokens(out_text),
        }
        message = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return web.json_response(message)
        events = [
            _sse(
                {
                    "type": "message_start",
                    "message": {
                        **message,
                        "content": [],
                        "stop_reason": None,
                        "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
                    },
                },
                event="message_start",
            )
        ]
        block = content[0]
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            events.append(
                _sse(
                    {"type": "content_block_start", "index": 0, "content_block": start},
                    event="content_block_start",
                )
            )
            partial = json.dumps(block["input"])
            for piece in (partial[: len(partial) // 2], partial[len(partial) // 2 :]):
                events.append(
                    _sse(
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                        event="content_block_delta",
                    )
                )
        else:
            events.append(
                _sse(
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                    event="content_block_start",
                )
            )
            events.extend(
                _sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": word},
                    },
                    event="content_block_delta",
                )
                for word in _words(out_text)
            )
        events.append(_sse({"type": "content_block_stop", "index": 0}, event="content_block_stop"))
        events.append(
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
                event="message_delta",
            )
        )
        events.append(_sse({"type": "message_stop"}, event="message_stop"))
        return await self._stream(request, events, fault)


# The first chunk of an Azure OpenAI chat stream: no choices, the prompt's filter results.
_AZURE_FILTER_CHUNK = {
    "id": "",
    "object": "",
    "created": 0,
    "model": "",
    "choices": [],
    "prompt_filter_results": [
        {"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}
    ],
}


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


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 1700000000, "owned_by": "stub"}


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
    }


def _usage_openai(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = _tokens(json.dumps(body.get("messages") or body.get("prompt") or ""))
    completion = _tokens(text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    raw = body.get("input", "")
    inputs = raw if isinstance(raw, list) else [raw]
    data = []
    for i, item in enumerate(inputs):
        digest = hashlib.sha256(json.dumps(item).encode()).digest()
        vector = [round(b / 255.0, 6) for b in digest[:8]]
        data.append({"object": "embedding", "index": i, "embedding": vector})
    tokens = sum(_tokens(json.dumps(i)) for i in inputs)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "stub-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


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
