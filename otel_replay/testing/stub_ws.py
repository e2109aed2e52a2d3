"""The stub upstream's WebSockets, speaking the APIs' documented frames:

- the Responses API's WebSocket mode (``/v1/responses``): each ``response.create``
  frame answered with the events its HTTP stream would carry, as text frames
  (``response.processed`` acknowledges an answer and gets none);
- the Realtime API (``/v1/realtime?model=``): ``session.created`` on connect,
  ``session.updated`` for ``session.update``, ``conversation.item.added`` and ``.done``
  for ``conversation.item.create``, a response for ``response.create`` ending in
  ``response.done`` (text, or with the session's ``output_modalities`` ``["audio"]`` its
  transcript and the audio: a base64 PCM chunk per word, the same word the same chunk),
  as compact JSON; the conversation is kept on the server, as the API does (with
  ``OpenAI-Beta: realtime=v1``, the beta interface's names: ``response.text.delta``,
  ``response.audio.delta``, ``conversation.item.created``);
- the Gemini Live API (``/ws/google.ai.generativelanguage.{version}.GenerativeService.
  BidiGenerateContent``, and Vertex AI's ``/ws/google.cloud.aiplatform.{version}.
  LlmBidiService/BidiGenerateContent``): ``setupComplete`` for ``setup``, the model's turn for a
  completed ``clientContent`` as ``serverContent`` messages ending in ``turnComplete``,
  sent as binary frames of JSON the way the service sends them.

Answers are the stub's usual ones (``stub reply to: <last user text>``), made from the
conversation so far, so the same session always gets the same frames.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from otel_replay.testing import stub_openai
from otel_replay.testing.stub_turns import digest, last_text, reply_to, tokens, words

__all__ = ["serve"]

_LIVE = re.compile(
    r"/ws/google\.(?:ai\.generativelanguage\.v1(?:alpha|beta)?\.GenerativeService\."
    r"|cloud\.aiplatform\.v1(?:beta1)?\.LlmBidiService/)BidiGenerateContent"
)


async def serve(
    request: web.Request, scripted: deque[list[dict[str, Any]]], cut: Callable[[], int | None]
) -> web.WebSocketResponse | None:
    """Serves an upgrade on a path with a WebSocket form; None for any other path.
    ``cut()``: after how many frames the next Responses answer breaks off (a scripted
    ``reset_mid_stream`` fault), or None."""
    path = request.path
    if path not in ("/v1/responses", "/v1/realtime") and not _LIVE.fullmatch(path):
        return None
    ws = web.WebSocketResponse(compress=True)
    await ws.prepare(request)
    if path == "/v1/responses":
        await _responses(ws, scripted, cut)
    elif path == "/v1/realtime":
        beta = "realtime=v1" in request.headers.get("openai-beta", "")
        await _realtime(ws, request.query.get("model", "gpt-realtime"), beta)
    else:
        await _live(ws)
    return ws


async def _frames(ws: web.WebSocketResponse) -> Any:
    async for message in ws:
        if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
            yield json.loads(message.data)


def _data(chunk: bytes) -> str:
    """The data line of one SSE event."""
    for line in chunk.decode().splitlines():
        if line.startswith("data: "):
            return line[len("data: ") :]
    return ""


async def _responses(
    ws: web.WebSocketResponse,
    scripted: deque[list[dict[str, Any]]],
    cut: Callable[[], int | None],
) -> None:
    async for frame in _frames(ws):
        kind = frame.get("type")
        if kind == "response.processed":
            continue
        if kind != "response.create":
            error = {"type": "invalid_request_error", "message": f"stub: unknown frame {kind}"}
            await ws.send_str(json.dumps({"type": "error", "status": 400, "error": error}))
            continue
        body = {k: v for k, v in frame.items() if k != "type"}
        if body.get("generate") is False:  # state prepared, no output: nothing scripted used
            answer = stub_openai.responses({**body, "stream": True})
            assert isinstance(answer, list)
            created, completed = json.loads(_data(answer[0])), json.loads(_data(answer[-1]))
            completed["response"] = {**completed["response"], "output": []}
            completed["sequence_number"] = 1
            for event in (created, completed):
                await ws.send_str(json.dumps(event))
            continue
        answer = stub_openai.responses(
            {**body, "stream": True}, scripted.popleft() if scripted else None
        )
        assert isinstance(answer, list)
        after = cut()
        for n, chunk in enumerate(answer):
            if n == after:  # the connection breaks off mid-answer
                await ws.close(code=1011, message=b"stub: reset")
                return
            await ws.send_str(_data(chunk))


class _Realtime:
    """One Realtime session's state on the server."""

    def __init__(self, model: str) -> None:
        self.session: dict[str, Any] = {
            "type": "realtime",
            "object": "realtime.session",
            "id": "sess_stub",
            "model": model,
            "instructions": "",
            "output_modalities": ["audio"],
            "tools": [],
        }
        self.items: list[dict[str, Any]] = []
        self.count = 0

    def event(self, kind: str, **fields: Any) -> str:
        self.count += 1
        return _compact({"type": kind, "event_id": f"event_stub_{self.count}", **fields})

    def added(self, item: dict[str, Any]) -> list[str]:
        previous = self.items[-1]["id"] if self.items else None
        self.items.append(item)
        return [
            self.event("conversation.item.added", previous_item_id=previous, item=item),
            self.event("conversation.item.done", previous_item_id=previous, item=item),
        ]

    def respond(self) -> list[str]:
        text = reply_to(last_text([_as_message(i) for i in self.items]))
        rid = "resp_" + digest([self.session, self.items])
        item_id = "item_" + digest([rid, "out"])
        base = {"id": rid, "object": "realtime.response", "conversation_id": "conv_stub"}
        item = {"id": item_id, "type": "message", "role": "assistant", "object": "realtime.item"}
        where = {"response_id": rid, "item_id": item_id, "output_index": 0, "content_index": 0}
        # the beta interface names them ``modalities`` (default text and audio)
        said = self.session.get("modalities") or self.session.get("output_modalities")
        audio = "audio" in (said or [])
        part = {"type": "output_audio", "transcript": ""} if audio else _TEXT_PART
        out = [
            self.event(
                "response.created", response={**base, "status": "in_progress", "output": []}
            ),
            self.event(
                "response.output_item.added",
                response_id=rid,
                output_index=0,
                item={**item, "status": "in_progress", "content": []},
            ),
            *self.added({**item, "status": "in_progress", "content": []})[:1],
            self.event("response.content_part.added", **where, part=part),
        ]
        for word in words(text):
            if not audio:
                out.append(self.event("response.output_text.delta", **where, delta=word))
                continue
            out.append(self.event("response.output_audio_transcript.delta", **where, delta=word))
            out.append(self.event("response.output_audio.delta", **where, delta=_pcm(word)))
        if audio:
            part = {**part, "transcript": text}
            out.append(self.event("response.output_audio.done", **where))
            out.append(
                self.event("response.output_audio_transcript.done", **where, transcript=text)
            )
        else:
            part = {**part, "text": text}
            out.append(self.event("response.output_text.done", **where, text=text))
        done = {**item, "status": "completed", "content": [part]}
        self.items[-1] = done
        usage = {
            "input_tokens": tokens(json.dumps(self.items)),
            "output_tokens": tokens(text),
            "total_tokens": tokens(json.dumps(self.items)) + tokens(text),
        }
        out += [
            self.event("response.content_part.done", **where, part=part),
            self.event("response.output_item.done", response_id=rid, output_index=0, item=done),
            self.event("conversation.item.done", previous_item_id=None, item=done),
            self.event(
                "response.done",
                response={**base, "status": "completed", "output": [done], "usage": usage},
            ),
        ]
        return out


_TEXT_PART = {"type": "output_text", "text": ""}


def _compact(value: Any) -> str:
    """JSON as the Realtime API sends it, without spaces."""
    return json.dumps(value, separators=(",", ":"))


def _pcm(word: str) -> str:
    """A word's audio: 50 ms of 24 kHz 16-bit PCM, base64, the same for the same word."""
    seed = hashlib.sha256(word.strip().encode()).digest()
    return base64.b64encode(seed * 75).decode()


def _as_message(item: dict[str, Any]) -> dict[str, Any]:
    blocks = item.get("content") or item.get("parts") or []  # Realtime's, or Gemini's
    content = [
        {"text": block.get("text") or block.get("transcript") or ""}
        for block in blocks
        if isinstance(block, dict)
    ]
    return {"role": item.get("role", "user"), "content": content}


_BETA_NAMES = {
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "conversation.item.added": "conversation.item.created",
}


def _as_beta(text: str) -> str | None:
    """An event as the Realtime API's beta interface (``OpenAI-Beta: realtime=v1``) names
    it, or None where it sends none (``conversation.item.done``)."""
    event = json.loads(text)
    if event["type"] == "conversation.item.done":
        return None
    event["type"] = _BETA_NAMES.get(event["type"], event["type"])
    text = _compact(event).replace('"type":"output_text"', '"type":"text"')
    return text.replace('"type":"output_audio"', '"type":"audio"')


async def _realtime(ws: web.WebSocketResponse, model: str, beta: bool) -> None:
    state = _Realtime(model)
    await ws.send_str(state.event("session.created", session=state.session))
    async for frame in _frames(ws):
        kind = frame.get("type")
        if kind == "session.update":
            state.session.update(frame.get("session") or {})
            sent = [state.event("session.updated", session=state.session)]
        elif kind == "conversation.item.create":
            item = {"object": "realtime.item", "status": "completed", **frame["item"]}
            item.setdefault("id", "item_" + digest([len(state.items), item]))
            sent = state.added(item)
        elif kind == "response.create":
            sent = state.respond()
        else:
            error = {"type": "invalid_request_error", "message": f"stub: unknown event {kind}"}
            sent = [state.event("error", error=error)]
        for text in sent:
            out = _as_beta(text) if beta else text
            if out is not None:
                await ws.send_str(out)


async def _live(ws: web.WebSocketResponse) -> None:
    contents: list[dict[str, Any]] = []
    async for frame in _frames(ws):
        sent: list[dict[str, Any]] = []
        if "setup" in frame:
            sent = [{"setupComplete": {}}]
        elif "clientContent" in frame or "client_content" in frame:  # the SDK sends the latter
            content = frame.get("clientContent") or frame["client_content"]
            contents.extend(content.get("turns") or [])
            if content.get("turnComplete") or content.get("turn_complete"):
                text = reply_to(last_text([_as_message(c) for c in contents]))
                contents.append({"role": "model", "parts": [{"text": text}]})
                sent = [
                    {"serverContent": {"modelTurn": {"parts": [{"text": w}]}}} for w in words(text)
                ]
                usage = {
                    "promptTokenCount": tokens(json.dumps(contents)),
                    "responseTokenCount": tokens(text),
                }
                sent += [
                    {"serverContent": {"generationComplete": True}},
                    {"serverContent": {"turnComplete": True}, "usageMetadata": usage},
                ]
        for message in sent:
            await ws.send_bytes(json.dumps(message).encode())
