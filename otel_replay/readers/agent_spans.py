"""The agent's other spans: what happened around the model calls, kept beside them.

``build`` carries the spans of the selected traces that are not model calls — the agent's
``invoke_agent`` / ``execute_tool`` spans, a framework's chain and tool spans — into the
cassette's ``source.spans``, so a replay can be compared with what happened in
production. Each is kept compactly (``compact``): its ids, name, instrumentation, times,
status and the attributes that say what it was (``KEPT``: the operation, agent and tool
names, ids, span kind), never message content or tool arguments and results.

Only traces that hold a model call are kept. Memory is bounded: spans of a trace whose
model call has not been seen yet wait among at most ``PENDING`` spans, and at most
``LIMIT`` spans are kept (the count of those left out is reported). A kept span is held
as its compact JSON text, in a temporary file in ``folder`` when one is given (what
``build_file`` does: then each costs a few integers of memory).
"""

from __future__ import annotations

import json
from array import array
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.exchange import JSON
from otel_replay.core.ids import hex_id
from otel_replay.core.jsontext import encodes
from otel_replay.core.spill import Spill
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
    """Collects the agent spans of the traces that hold model calls; ``close`` releases
    the temporary file."""

    def __init__(
        self, limit: int = LIMIT, pending: int = PENDING, folder: Path | None = None
    ) -> None:
        self.limit = limit
        self.pending_limit = pending
        self.omitted = 0
        self._calls: set[str] = set()
        self._pending: OrderedDict[str, list[dict[str, JSON]]] = OrderedDict()
        self._waiting = 0
        # the kept spans: their texts; per span its trace's number and start time
        self._texts: list[str] | Spill = [] if folder is None else Spill(folder, "surrogatepass")
        self._traces: dict[str, int] = {}
        self._trace_of = array("L")
        self._starts: array[int] | list[int] = array("Q")
        self._surrogates: set[int] = set()

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
        texts = self._texts
        if len(texts) >= self.limit:
            self.omitted += 1
            return
        # NaN stays NaN (written, it is refused as any value without a JSON form is)
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        number = len(texts)
        texts.append(text)
        if not text.isascii() and not encodes(text):
            self._surrogates.add(number)
        traces = self._traces
        self._trace_of.append(traces.setdefault(str(record["trace_id"]), len(traces)))
        start = int(str(record["start_ns"]))
        try:
            self._starts.append(start)
        except OverflowError:  # beyond OTLP's unsigned 64 bits: keep them as Python ints
            self._starts = [*self._starts, start]

    def order(self, trace_ids: set[str]) -> list[int]:
        """The numbers of the kept spans of ``trace_ids`` (the traces of the cassette's
        interactions), in start order within each trace, traces by id."""
        names = list(self._traces)
        trace_of, starts = self._trace_of, self._starts
        chosen = [i for i, trace in enumerate(trace_of) if names[trace] in trace_ids]
        chosen.sort(key=lambda i: (names[trace_of[i]], starts[i]))
        return chosen

    def record(self, number: int) -> dict[str, JSON]:
        """The kept span of that number, as ``compact`` made it."""
        found: dict[str, JSON] = json.loads(self._texts[number])
        return found

    def records(self, trace_ids: set[str]) -> list[dict[str, JSON]]:
        """The kept spans of ``trace_ids``, in the order of ``order``."""
        return [self.record(i) for i in self.order(trace_ids)]

    def surrogates(self, numbers: list[int]) -> list[int]:
        """Those of ``numbers`` whose span holds a lone surrogate, which UTF-8 cannot carry."""
        return [i for i in numbers if i in self._surrogates] if self._surrogates else []

    def close(self) -> None:
        if isinstance(self._texts, Spill):
            self._texts.close()
