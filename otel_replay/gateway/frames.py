"""The model calls in a WebSocket session's frames, for each API served over one: which
client frame asks for an answer, which server frame ends it, and the body the call is
recorded and matched by (``providers.openai_realtime`` and ``providers.gemini_live``
describe the bodies of the stateful APIs). Pure: the same frames give the same calls
whether they came from the provider (record) or from the cassette (replay).

A *turn* is what one call covers: the client and server frames since the last call's
answer ended (a Realtime ``session.update`` and its ``session.updated``, say), up to the
server frame that ends this one. ``served[k]`` counts the server frames of the turn that
came before its client frame ``k``: a replay answers each client frame with the recorded
frames up to the next one's count.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from otel_replay.core import jsontext
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, Response
from otel_replay.core.ids import new_span_id
from otel_replay.providers import gemini_live
from otel_replay.providers.openai_realtime import REALTIME_PATH
from otel_replay.providers.parts import as_dict, as_list, dumps

__all__ = [
    "RESPONSES_PATH",
    "Frames",
    "call_exchange",
    "frames_for",
    "parsed_frame",
    "request_bytes",
]

RESPONSES_PATH = "/v1/responses"
_RESPONSES_CLOSING = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "error"}
)


_CREATE = re.compile(rb'\{[ \t\n\r]*"type"[ \t\n\r]*:[ \t\n\r]*"response\.create"[ \t\n\r]*,?')


def request_bytes(data: str | bytes, body: dict[str, Any]) -> bytes:
    """A Responses API ``response.create`` frame's body (``body``, read from it) as the
    bytes an HTTP request of it carries: the frame's own without its ``type`` member, when
    it comes first (as the SDKs and Codex send it), else ``body``'s compact JSON."""
    sent = data if isinstance(data, bytes) else data.encode()
    found = _CREATE.match(sent)
    if found is None:
        return dumps(body).encode()
    return b"{" + sent[found.end() :]


def parsed_frame(data: str | bytes) -> JSON:
    """A frame's JSON (a binary frame read as UTF-8 text), or None when it is not JSON."""
    try:
        return jsontext.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass
class Frames:
    """One connection's calls as its frames come. ``api``: ``"responses"`` (the
    Responses API's WebSocket mode), ``"realtime"`` or ``"live"``."""

    api: str
    provider: str
    endpoint: str
    upstream: str  # the upstream it is forwarded to (``PROVIDERS``)
    model: str | None = None
    client_events: list[JSON] = field(default_factory=list)
    served: list[int] = field(default_factory=list)
    server_count: int = 0
    asked: dict[str, Any] | None = None  # the body of the call asked for, until it ends
    session: dict[str, Any] = field(default_factory=dict)  # Realtime settings, Live setup
    items: list[JSON] = field(default_factory=list)  # the conversation so far
    _answer: list[dict[str, Any]] = field(default_factory=list)  # Live: the model's parts

    @property
    def stateful(self) -> bool:
        """Whether the session keeps state between calls (its turns hold ack frames)."""
        return self.api != "responses"

    def client(self, frame: JSON) -> dict[str, Any] | None:
        """A client frame; the body of the call it asks for, or None."""
        data = as_dict(frame)
        self.client_events.append(frame)
        self.served.append(self.server_count)
        kind = data.get("type")
        if self.api == "responses":
            if kind != "response.create":
                return None
            self.asked = {k: v for k, v in data.items() if k != "type"}
            return self.asked
        if self.api == "realtime":
            return self._realtime_client(kind, data)
        return self._live_client(data)

    def server(self, frame: JSON) -> bool:
        """A server frame; whether it ends the answer of the call asked for."""
        data = as_dict(frame)
        self.server_count += 1
        kind = data.get("type")
        if self.api == "responses":
            return self.asked is not None and kind in _RESPONSES_CLOSING
        if self.api == "realtime":
            if kind != "response.done":
                return False
            output = as_list(as_dict(data.get("response")).get("output"))
            self.items.extend(output)
            return self.asked is not None
        self._answer.extend(gemini_live.turn_parts(data))
        content = as_dict(data.get("serverContent"))
        if content.get("turnComplete") or "toolCall" in data:
            if self._answer:
                self.items.append({"role": "model", "parts": list(self._answer)})
            self._answer.clear()
            return self.asked is not None
        return False

    def ended(self) -> None:
        """The call's answer has ended: the next turn begins."""
        self.client_events, self.served, self.server_count = [], [], 0
        self.asked = None

    # -- the stateful APIs ------------------------------------------------------------
    def _state(self, **state: JSON) -> dict[str, Any]:
        body = {**state, "client_events": list(self.client_events), "served": list(self.served)}
        self.asked = body
        return body

    def _realtime_client(self, kind: object, data: dict[str, Any]) -> dict[str, Any] | None:
        if kind == "session.update":
            self.session = {**self.session, **as_dict(data.get("session"))}
        elif kind == "conversation.item.create":
            self.items.append(data.get("item"))
        elif kind == "response.create":
            response = as_dict(data.get("response"))
            model = self.model or self.session.get("model")
            return self._state(
                model=model, session=self.session, input=list(self.items), response=response
            )
        return None

    def _live_client(self, data: dict[str, Any]) -> dict[str, Any] | None:
        if "setup" in data:
            self.session = as_dict(data.get("setup"))
            return None
        content = as_dict(data.get("clientContent") or data.get("client_content"))
        if content:
            self.items.extend(t for t in as_list(content.get("turns")) if isinstance(t, dict))
            if content.get("turnComplete") or content.get("turn_complete"):
                return self._state(setup=self.session, contents=list(self.items))
            return None
        answered = as_dict(data.get("toolResponse") or data.get("tool_response"))
        if answered:
            results = as_list(answered.get("functionResponses"))
            parts = [{"functionResponse": r} for r in results if isinstance(r, dict)]
            self.items.append({"role": "user", "parts": parts})
            return self._state(setup=self.session, contents=list(self.items))
        return None


def frames_for(path: str, query: dict[str, str]) -> Frames | None:
    """The calls of a WebSocket on ``path`` (its query: Realtime's ``?model=``), or None
    when no API is served over a WebSocket there."""
    if path == RESPONSES_PATH:
        return Frames("responses", "openai", RESPONSES_PATH, "openai")
    if path == REALTIME_PATH:
        return Frames("realtime", "openai", REALTIME_PATH, "openai", model=query.get("model"))
    if gemini_live.is_live_path(path):
        upstream = "vertex" if gemini_live.on_vertex(path) else "gemini"
        return Frames("live", "gcp.gemini", path, upstream)
    return None


def call_exchange(
    frames: Frames,
    operation: str,
    request: CanonicalRequest,
    response: Response,
    raw: JSON,
    start_ns: int,
    place: tuple[str, str | None],
) -> Exchange:
    """The exchange of one call made over ``frames``' WebSocket (``place``: the
    connection's trace and parent span): a ``GET``, its answer the server frames."""
    return Exchange(
        provider=frames.provider,
        operation=operation,
        request=request,
        response=response,
        raw_request=raw,
        method="GET",
        stream=True,
        start_ns=start_ns,
        end_ns=time.time_ns(),
        trace_id=place[0],
        span_id=new_span_id(),
        parent_span_id=place[1],
    )
