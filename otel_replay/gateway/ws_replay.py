"""A WebSocket session replayed: each client frame that asks for a model call is matched
like an HTTP request (the same components, rules and placeholders: the body ``frames``
makes of it read by its provider), and the recorded server frames of the call are sent
back, at once or at the recorded pace (``--timing recorded``). A call recorded over HTTP
answers too (its events are the Responses API's frames). A miss is the API's own error
(an ``error`` event; the Live API closes the socket with code 1007 and the reason) and
the run's miss, naming the component.

A stateful session's other client frames (a Realtime ``session.update``, a Live
``setup``) are answered with the frames the provider answered them with, from the
recording the session's next call is most likely to match: the first one of its path
not yet replayed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange, SSEEvent
from otel_replay.gateway.call import BodyTooDeep, Call
from otel_replay.gateway.decide import Decision
from otel_replay.gateway.frames import Frames, call_exchange, parsed_frame, request_bytes
from otel_replay.providers.parts import as_dict, dumps
from otel_replay.session.session import Session

__all__ = ["Decided", "Door", "Player", "protocols_of"]

log = logging.getLogger("otel_replay.gateway")

_CLOSE_INVALID = 1007
"""The close code the Live API ends a session with on a request it cannot serve."""
_CLOSE_ABNORMAL = 1011
"""The close code of a session whose answer was cut short (a server's failure)."""
_REASON_MAX = 123
"""The longest close reason a WebSocket frame carries, in bytes."""


def protocols_of(request: web.Request) -> tuple[str, ...]:
    """The subprotocols an upgrade offers (``Sec-WebSocket-Protocol``)."""
    value = request.headers.get("Sec-WebSocket-Protocol", "")
    return tuple(p.strip() for p in value.split(",") if p.strip())


@dataclass(frozen=True, slots=True)
class Decided:
    """What a door found for a model call's body (``app.Gateway.decided_body``): the
    decision; the call, when the full path read it; what to run once the answer is sent
    (the conversation's next turn made ahead)."""

    decision: Decision
    call: Call | None = None
    after: Callable[[], None] | None = None


Door = Callable[[bytes], Decided | None]
"""Finds a Responses call's body as an HTTP request's is (``app.Gateway.decided_body``,
its WebSocket's upgrade and session bound): as sent, as its conversation's next turn,
else in full; None when it cannot (the player's matcher then decides)."""


class Player:
    """One replayed connection: ``place`` is its trace and parent span. ``live``, in an
    ``auto`` run: answers a missed call's client frame from the provider (False when it
    cannot); ``keyless``: a miss there could not go live for want of the provider's key."""

    def __init__(
        self,
        session: Session,
        frames: Frames,
        ws: web.WebSocketResponse,
        timing: str,
        place: tuple[str, str | None],
        live: Callable[[str | bytes], Awaitable[bool]] | None = None,
        keyless: bool = False,
        door: Door | None = None,
    ) -> None:
        self.session, self.frames, self.ws, self.place = session, frames, ws, place
        self.door = door
        self.live, self.keyless = live, keyless
        self.paced = timing == "recorded"
        self.provider = providers.get(frames.provider)
        self.taken: set[int] = set()
        self.sent = 0  # frames of the candidate's turn sent so far
        self.candidate = self._next_candidate()

    async def run(self) -> None:
        """Serves the connection until the agent closes it."""
        await self._ack(0)
        async for message in self.ws:
            if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                await self.client(message.data)

    async def client(self, data: str | bytes) -> None:
        frame = parsed_frame(data)
        position = len(self.frames.client_events)
        body = self.frames.client(frame)
        if body is None:
            await self._ack(position + 1)
        else:
            await self._answer(body, data, as_dict(frame))

    def _next_candidate(self) -> int | None:
        """The first recording of a stateful session's path not yet replayed."""
        if not self.frames.stateful:
            return None
        used = self.session.matcher.used
        for index, recorded in enumerate(self.session.recordings):
            if index in used or index in self.taken:
                continue
            raw = recorded.raw_request
            if recorded.request.endpoint == self.frames.endpoint and "served" in as_dict(raw):
                return index
        return None

    async def _ack(self, position: int) -> None:
        """The candidate's frames up to those that came before client frame ``position``."""
        if self.candidate is None:
            return
        recorded = self.session.recording(self.candidate)
        served = as_dict(recorded.raw_request).get("served") or []
        if position < len(served) and recorded.response.events:
            upto = int(served[position])
            await self._send(recorded.response.events[self.sent : upto])
            self.sent = max(self.sent, upto)

    async def _answer(self, body: dict[str, Any], data: str | bytes, frame: dict[str, Any]) -> None:
        session, frames = self.session, self.frames
        start_ns = time.time_ns()
        asked = _Asked(self, body, data)
        try:
            index = asked.index()
        except ReplayMiss as miss:
            raw, canonical = asked.raw, asked.canonical
            if self.live is not None and await self.live(data):  # answered by the provider
                self._next_turn()
                return
            place = (self.place[0], self.place[1], start_ns)
            session.missed(
                miss,
                self.provider.name,
                frames.endpoint,
                raw,
                request=canonical,
                place=place,
                keyless=self.keyless,
            )
            log.info("%s", miss)
            self._next_turn()
            await self._miss(miss, frame)
            return
        sent = data if isinstance(data, bytes) else data.encode()
        session.replayed_hit(index, sent=sent, trace_id=self.place[0])
        recorded = session.recording(index)
        events = recorded.response.events
        if events is None:  # recorded over HTTP, as a plain answer
            events = self.provider.stream_from_body(recorded.operation, recorded.response.body)
        start = self.sent if index == self.candidate else _turn_start(recorded)
        self.taken.add(index)
        await self._send(events[start:])
        self._next_turn()
        if asked.after is not None:  # what the conversation's next turn needs, made ahead
            asyncio.get_running_loop().call_soon(asked.after)
        if recorded.response.fault is not None:  # the answer was cut short: so is the socket
            await self.ws.close(code=_CLOSE_ABNORMAL, message=b"otel-replay: as recorded")
        if session.writes_replayed_spans:  # the agent has its answer first
            request, raw = asked.canonical, asked.raw
            answered = call_exchange(
                frames, recorded.operation, request, recorded.response, raw, start_ns, self.place
            )
            session.replayed_span(answered)

    def _next_turn(self) -> None:
        self.frames.ended()
        self.sent = 0
        self.candidate = self._next_candidate()

    async def _send(self, events: list[SSEEvent]) -> None:
        if not events:
            return
        began, first = time.monotonic(), events[0].t
        stateful = self.frames.stateful
        for event in events:
            if self.paced:
                delay = (event.t - first) - (time.monotonic() - began)
                if delay > 0:
                    await asyncio.sleep(delay)
            await self.ws.send_str(event.data)
            if stateful:  # the session's state follows the answers, as the provider's did
                self.frames.server(parsed_frame(event.data))

    async def _miss(self, miss: ReplayMiss, frame: dict[str, Any]) -> None:
        """The miss as the API tells the client a request failed."""
        text = str(miss)
        api = self.frames.api
        if api == "live":
            reason = text.encode()[:_REASON_MAX].decode("utf-8", "ignore").encode()
            await self.ws.close(code=_CLOSE_INVALID, message=reason)
            return
        error = {"type": "invalid_request_error", "code": "replay_miss", "message": text}
        if api == "responses":
            answer = {"type": "error", "status": 400, "error": {**error, "param": None}}
        else:
            cause = {**error, "param": None, "event_id": frame.get("event_id")}
            answer = {"type": "error", "event_id": "event_otel_replay_miss", "error": cause}
        await self.ws.send_str(dumps(answer))


class _Asked:
    """A call's body as matched: by the player's door for the Responses API (whose frame
    is an HTTP request's body), else by the matcher; its redacted form and canonical
    request made when first needed (a turn matched by what it adds needs neither)."""

    def __init__(self, player: Player, body: dict[str, Any], data: str | bytes) -> None:
        self.player, self.body, self.data = player, body, data
        self.call: Call | None = None  # the full path's
        self.after: Callable[[], None] | None = None
        self._raw: JSON = None
        self._canonical: CanonicalRequest | None = None

    def index(self) -> int:
        """The recording the call replays, consumed; raises ReplayMiss."""
        player = self.player
        if player.door is not None and player.frames.api == "responses":
            try:
                decided: Decided | None = player.door(request_bytes(self.data, self.body))
            except BodyTooDeep:
                decided = None  # matched as the frame it was read as
            if decided is not None:
                self.call, self.after = decided.call, decided.after
                decision = decided.decision
                if decision.index is not None:
                    return decision.index
                if decision.miss is not None:
                    raise decision.miss
        # no door, another session swapped in, a call a live rule or fork sends live: matched
        return player.session.match(self.canonical)

    @property
    def raw(self) -> JSON:
        """The body, redacted."""
        if self.call is not None:
            return self.call.body
        if self._raw is None:
            self._raw = self.player.session.redactor.json(self.body)
        return self._raw

    @property
    def canonical(self) -> CanonicalRequest:
        if self.call is not None:
            return self.call.canonical
        if self._canonical is None:
            self._canonical = self.player.provider.canonical(self.player.frames.endpoint, self.raw)
        return self._canonical


def _turn_start(recorded: Exchange) -> int:
    """Where a recorded call's own answer begins among its frames: after those that
    answered the client frames before the one that asked for it."""
    served = as_dict(recorded.raw_request).get("served")
    return int(served[-1]) if isinstance(served, list) and served else 0
