"""The agent's other spans: what happened around the model calls, kept beside them.

``build`` carries the spans of the selected traces that are not model calls — the agent's
``invoke_agent`` / ``execute_tool`` spans, a framework's chain and tool spans — into the
cassette's ``source.spans``, so a replay can be compared with what happened in
production. Each is kept compactly (``compact``): its ids, name, instrumentation, times,
status and the attributes that say what it was (``KEPT``: the operation, agent and tool
names, ids, span kind), never message content or tool arguments and results.

Only traces that hold a model call are kept. Memory is bounded: spans of a trace whose
model call has not been seen yet wait among at most ``PENDING`` spans, and at most
``LIMIT`` spans are kept (the count of those left out is reported).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.exchange import JSON
from otel_replay.core.ids import hex_id
from otel_replay.readers.view import plain

__all__ = ["KEPT", "LIMIT", "PENDING", "AgentSpans", "compact"]

KEPT = (
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.agent.id",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.type",
    "gen_ai.conversation.id",
    "openinference.span.kind",
    "tool.name",
    "error.type",
)
"""Attributes kept on an agent span: what it was, never what it carried."""
LIMIT = 20_000
PENDING = 20_000
_STATUS = {1: "ok", 2: "error"}


def compact(span: Span, attrs: Mapping[str, Any], scope: str) -> dict[str, JSON]:
    """A span as ``source.spans`` holds it."""
    record: dict[str, JSON] = {
        "trace_id": hex_id(span.trace_id) or "",
        "span_id": hex_id(span.span_id) or "",
        "name": span.name,
        "scope": scope,
        "start_ns": span.start_time_unix_nano,
        "end_ns": span.end_time_unix_nano,
    }
    parent = hex_id(span.parent_span_id)
    if parent:
        record["parent_span_id"] = parent
    status = _STATUS.get(span.status.code)
    if status is not None:
        record["status"] = status
    kept = {k: plain(attrs[k]) for k in KEPT if k in attrs}
    if kept:
        record["attributes"] = kept
    return record


class AgentSpans:
    """Collects the agent spans of the traces that hold model calls."""

    def __init__(self, limit: int = LIMIT, pending: int = PENDING) -> None:
        self.limit = limit
        self.pending_limit = pending
        self.kept: list[dict[str, JSON]] = []
        self.omitted = 0
        self._calls: set[str] = set()
        self._pending: OrderedDict[str, list[dict[str, JSON]]] = OrderedDict()
        self._waiting = 0

    def call(self, trace_id: str | None) -> None:
        """A model call of ``trace_id`` was read: its trace's spans are kept."""
        if not trace_id or trace_id in self._calls:
            return
        self._calls.add(trace_id)
        for record in self._pending.pop(trace_id, ()):
            self._waiting -= 1
            self._keep(record)

    def add(self, span: Span, attrs: Mapping[str, Any], scope: str) -> None:
        """A span that is not a model call."""
        record = compact(span, attrs, scope)
        trace_id = str(record["trace_id"])
        if trace_id in self._calls:
            self._keep(record)
            return
        self._pending.setdefault(trace_id, []).append(record)
        self._waiting += 1
        while self._waiting > self.pending_limit:
            _, dropped = self._pending.popitem(last=False)
            self._waiting -= len(dropped)

    def _keep(self, record: dict[str, JSON]) -> None:
        if len(self.kept) < self.limit:
            self.kept.append(record)
        else:
            self.omitted += 1

    def records(self, trace_ids: set[str]) -> list[dict[str, JSON]]:
        """The kept spans of ``trace_ids`` (the traces of the cassette's interactions),
        in start order."""
        found = [r for r in self.kept if r["trace_id"] in trace_ids]
        return sorted(found, key=lambda r: (str(r["trace_id"]), int(str(r["start_ns"]))))
