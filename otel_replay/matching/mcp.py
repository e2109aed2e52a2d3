"""Matching MCP requests against the recorded tool calls.

A request hits the first unused recording with the same server, method, target (tool,
prompt, resource) and params (``providers.mcp.canonical``: ``_meta`` and the request id
left out); identical calls consume successive recordings in order, and a method that only
describes the server (``providers.mcp.REPEATABLE``) answers again from its last recording
once they are consumed. A miss names the first component that differs, checked in order
by one small function each: ``server``, ``method``, the target (``tool``, ``prompt``,
``resource``), ``arguments``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Sequence

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import JSON, CanonicalRequest
from otel_replay.core.ids import short_hash
from otel_replay.providers.mcp import (
    ANY_SERVER,
    REPEATABLE,
    arguments,
    server_of,
    server_path,
    target_label,
)

__all__ = ["ToolMatcher", "call_name", "explain_tool", "key_of"]


_ANYWHERE = server_path(ANY_SERVER)  # a call read from a trace that names no server


def _text(value: JSON) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def key_of(request: CanonicalRequest) -> str:
    """The identity of a call: server, target, method and params."""
    return _text([request.endpoint, request.model, request.params])


def _method(request: CanonicalRequest) -> str:
    return str(request.params.get("method", ""))


def call_name(request: CanonicalRequest) -> str:
    """``weather.get_forecast`` for a call of a tool (prompt, resource), else
    ``weather tools/list``; ``get_forecast`` for a tool of no server (the agent's own, or
    one a trace did not place)."""
    server = server_of(request.endpoint)
    if request.model is not None:
        return f"{server}.{request.model}" if server != ANY_SERVER else request.model
    return f"{server} {_method(request)}"


# --- one function per component: the recordings still in the running, or a miss -------

Narrow = Callable[[CanonicalRequest, list[CanonicalRequest], list[int]], list[int] | ReplayMiss]


def _server(
    request: CanonicalRequest, recorded: list[CanonicalRequest], left: list[int]
) -> list[int] | ReplayMiss:
    if request.endpoint == _ANYWHERE:  # a tool of no server: any recording may be its
        return left
    same = [i for i in left if recorded[i].endpoint == request.endpoint]
    if same:
        return same
    server = server_of(request.endpoint)
    return ReplayMiss(f"no call to the MCP server {server} was recorded", component="server")


def _method_(
    request: CanonicalRequest, recorded: list[CanonicalRequest], left: list[int]
) -> list[int] | ReplayMiss:
    same = [i for i in left if _method(recorded[i]) == _method(request)]
    if same:
        return same
    return ReplayMiss(f"{call_name(request)} was not recorded", component="method")


def _target(
    request: CanonicalRequest, recorded: list[CanonicalRequest], left: list[int]
) -> list[int] | ReplayMiss:
    same = [i for i in left if recorded[i].model == request.model]
    if same:
        return same
    label = target_label(_method(request))
    return ReplayMiss(f"{label} {call_name(request)} was not recorded", component=label)


def _arguments(
    request: CanonicalRequest, recorded: list[CanonicalRequest], left: list[int]
) -> list[int] | ReplayMiss:
    new = _text(arguments(request))
    same = [i for i in left if _text(arguments(recorded[i])) == new]
    if same:
        return same
    old = _text(arguments(recorded[left[0]]))
    label = target_label(_method(request))
    return ReplayMiss(
        f"{label} arguments changed for {call_name(request)} "
        f"(hash {short_hash(old)}→{short_hash(new)})",
        component="arguments",
    )


_COMPONENTS: tuple[Narrow, ...] = (_server, _method_, _target, _arguments)


class ToolMatcher:
    """The recorded MCP requests, indexed by call; which are used. Thread-safe."""

    def __init__(self, requests: Sequence[CanonicalRequest]) -> None:
        self.requests: list[CanonicalRequest] = list(requests)
        self._queues: dict[str, list[int]] = {}
        for index, request in enumerate(self.requests):
            self._queues.setdefault(key_of(request), []).append(index)
        self.used: set[int] = set()
        self._lock = threading.Lock()

    def match(self, request: CanonicalRequest) -> int:
        """The recording answering ``request`` (now used); raises ``ReplayMiss``."""
        anywhere = dataclasses.replace(request, endpoint=_ANYWHERE)
        with self._lock:
            queue = self._queues.get(key_of(request))
            # a call on this server, else one read from a trace that named no server
            for candidates in (queue, self._queues.get(key_of(anywhere))):
                for index in candidates or ():
                    if index not in self.used:
                        self.used.add(index)
                        return index
            if queue and _method(request) in REPEATABLE:
                return queue[-1]
            raise self._why(request, queue)

    def append(self, request: CanonicalRequest) -> int:
        """A call made live and recorded in this run: a new recording, already used."""
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)
            self._queues.setdefault(key_of(request), []).append(index)
            self.used.add(index)
            return index

    def _why(self, request: CanonicalRequest, queue: list[int] | None) -> ReplayMiss:
        if queue:  # every identical call is consumed
            label = target_label(_method(request))
            what = f"{label} {call_name(request)}" if request.model else call_name(request)
            return ReplayMiss(
                f"more calls of {what} than the {len(queue)} recorded",
                component=label if request.model else "method",
            )
        # the unused recordings first: a changed call is compared with the next one due
        left = sorted(range(len(self.requests)), key=lambda i: i in self.used)
        for narrow in _COMPONENTS:
            found = narrow(request, self.requests, left)
            if isinstance(found, ReplayMiss):
                return found
            left = found
        return ReplayMiss(f"{call_name(request)} was not recorded", component="arguments")


def explain_tool(
    request: CanonicalRequest, recorded: Sequence[CanonicalRequest], used: set[int]
) -> str:
    """``why`` for a tool call: the miss line, then the recorded calls of the same server
    and target (which were used) with their arguments, and the request's."""
    matcher = ToolMatcher(recorded)
    matcher.used = set(used)
    try:
        index = matcher.match(request)
        lines = [f"a hit now: recording #{index} answers {call_name(request)}"]
    except ReplayMiss as miss:
        lines = [str(miss)]
    same = [
        i
        for i, r in enumerate(recorded)
        if r.endpoint in (request.endpoint, _ANYWHERE)
        and _method(r) == _method(request)
        and r.model == request.model
    ]
    lines.append("")
    lines.append(f"recorded calls of {call_name(request)} ({len(same)}):")
    for i in same:
        state = "used" if i in used else "unused"
        lines.append(f"  #{i} ({state})  {_text(arguments(recorded[i]))}")
    lines.append(f"this call:  {_text(arguments(request))}")
    return "\n".join(lines)
