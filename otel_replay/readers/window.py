"""The dedupe window: one model call seen by several spans becomes one exchange.

One model call often shows up as two or three spans (an instrumentation span, another
instrumentation stacked on the same SDK, the gateway's own span); those become one
exchange, the one its reader declared most faithful (``registry.Fidelity``). Memory stays
bounded: candidates wait in a window of ``WINDOW`` exchanges for their duplicates, and only
the parent links of recent spans are kept (see ``Links``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.exchange import Exchange
from otel_replay.readers.registry import Fidelity

__all__ = ["WINDOW", "Links", "Window", "keep"]

WINDOW = 512
"""How many exchanges wait for a duplicate before the earliest is released."""
PARENT_LINKS = 100_000
"""Parent links are held in generations of half this many at most, and no more than
twice this many while an exchange lingers in the window (see ``Links``)."""
_MAX_HOPS = 8


class Window:
    """Holds recent exchanges until their duplicates could have arrived.

    Releasing the earliest exchange compares it only with the exchanges that could be the
    same call: those of its trace (related through parent links) and, when another source
    is waiting, those starting before it ends (overlapping). Pending exchanges are kept in
    arrival order (ties keep the first), sorted by start time and grouped by trace id, so a
    release costs the size of those candidate sets, not of the window.
    """

    def __init__(self, size: int = WINDOW) -> None:
        self.size = size
        self.pending: dict[int, Exchange] = {}
        self.fidelity: dict[int, Fidelity] = {}
        self.links = Links(exchanges=size, spans=PARENT_LINKS // 2, limit=PARENT_LINKS * 2)
        self._oldest = 0  # no exchange before it is pending
        self._seq = 0
        self._by_start: list[tuple[int, int]] = []
        self._by_trace: dict[str, list[int]] = {}
        self._sources: dict[str, int] = {}

    def note(self, span: Span) -> None:
        """Remember a span's parent (any span: HTTP spans link the layers of one call)."""
        parent = span.parent_span_id
        if parent:
            self.links.add(span.span_id, parent)

    def add(self, exchange: Exchange, fidelity: Fidelity | None = None) -> Iterator[Exchange]:
        """Take an exchange (with the fidelity its reader declared) and release the
        exchanges it pushes out of the window."""
        seq = self._seq
        self._seq += 1
        self.links.tick(seq)
        self.pending[seq] = exchange
        self.fidelity[seq] = Fidelity.of(exchange) if fidelity is None else fidelity
        insort(self._by_start, (exchange.start_ns, seq))
        if exchange.trace_id:
            self._by_trace.setdefault(exchange.trace_id, []).append(seq)
        self._sources[exchange.source] = self._sources.get(exchange.source, 0) + 1
        if len(self.pending) > self.size:
            yield from self._release()

    def flush(self) -> Iterator[Exchange]:
        while self.pending:
            yield from self._release()

    def _release(self) -> list[Exchange]:
        first_seq = self._by_start[0][1]
        first = self.pending[first_seq]
        group = [
            seq
            for seq in sorted(self._candidates(first))
            if seq == first_seq or self._same_call(first, self.pending[seq])
        ]
        fidelities = [self.fidelity.pop(seq) for seq in group]
        exchanges = [self._remove(seq) for seq in group]
        oldest, pending = self._oldest, self.pending
        while oldest < self._seq and oldest not in pending:
            oldest += 1
        self._oldest = oldest
        self.links.released(oldest)
        return keep(exchanges, fidelities)

    def _candidates(self, first: Exchange) -> set[int]:
        """Every pending exchange ``_same_call`` could accept for ``first`` (a superset)."""
        found = set(self._by_trace.get(first.trace_id, ())) if first.trace_id else set()
        found.add(self._by_start[0][1])
        if len(self._sources) > 1:  # the overlap rule only joins different sources
            for start_ns, seq in self._by_start:
                if start_ns > first.end_ns:
                    break
                found.add(seq)
        return found

    def _remove(self, seq: int) -> Exchange:
        exchange = self.pending.pop(seq)
        by_start = self._by_start
        del by_start[bisect_left(by_start, (exchange.start_ns, seq))]
        if exchange.trace_id:
            same_trace = self._by_trace[exchange.trace_id]
            same_trace.remove(seq)
            if not same_trace:
                del self._by_trace[exchange.trace_id]
        left = self._sources[exchange.source] - 1
        if left:
            self._sources[exchange.source] = left
        else:
            del self._sources[exchange.source]
        return exchange

    def _related(self, a: Exchange, b: Exchange) -> bool:
        return a.trace_id == b.trace_id and (self._above(a, b) or self._above(b, a))

    def _above(self, upper: Exchange, lower: Exchange) -> bool:
        if lower.parent_span_id is None or upper.span_id is None:
            return False
        try:
            node: bytes | None = bytes.fromhex(lower.parent_span_id)
            target = bytes.fromhex(upper.span_id)
        except ValueError:
            return False
        for _ in range(_MAX_HOPS):
            if node is None:
                return False
            if node == target:
                return True
            node = self.links.get(node)
        return False

    def _same_call(self, a: Exchange, b: Exchange) -> bool:
        if a.provider != b.provider or a.operation != b.operation:
            return False
        if a.request.model and b.request.model and a.request.model != b.request.model:
            return False
        if a.trace_id and b.trace_id and self._related(a, b):
            return True
        if a.source == b.source or not (a.start_ns <= b.end_ns and b.start_ns <= a.end_ns):
            return False
        return _same_messages(a, b)


class Links:
    """Parent links of recent spans, in generations kept while an exchange may need them.

    A generation closes after ``exchanges`` exchanges have arrived or ``spans`` links were
    noted. It is dropped once every exchange that arrived up to the close of the
    generation after it has left the window: a link joins the layers of one call, which
    end and are exported together, so it is noted close to the exchanges it joins — just
    before them (a child span ends first) or after them (another file read later). When
    an exchange lingers in the window (a start time far ahead of the others), the oldest
    generations go anyway once more than ``limit`` links are held. Memory follows the
    spans per exchange in the window, not the length of the file.
    """

    def __init__(self, exchanges: int, spans: int, limit: int) -> None:
        self._max_exchanges = exchanges
        self._max_spans = spans
        self._limit = limit
        self._current: dict[bytes, bytes] = {}
        self._closed: deque[tuple[int, dict[bytes, bytes]]] = deque()
        self._held = 0  # links in closed generations
        self._exchanges = 0
        self._last_seq = -1

    def __len__(self) -> int:
        return self._held + len(self._current)

    def add(self, child: bytes, parent: bytes) -> None:
        self._current[child] = parent
        if len(self._current) >= self._max_spans:
            self._close()

    def tick(self, seq: int) -> None:
        """Exchange ``seq`` arrived."""
        self._last_seq = seq
        self._exchanges += 1
        if self._exchanges >= self._max_exchanges:
            self._close()

    def released(self, oldest_pending: int) -> None:
        """Every exchange before ``oldest_pending`` has left the window."""
        closed = self._closed
        while len(closed) > 1 and closed[1][0] < oldest_pending:
            self._drop()

    def get(self, child: bytes) -> bytes | None:
        found = self._current.get(child)
        if found is None:
            for _, links in reversed(self._closed):
                found = links.get(child)
                if found is not None:
                    break
        return found

    def _close(self) -> None:
        self._closed.append((self._last_seq, self._current))
        self._held += len(self._current)
        self._current = {}
        self._exchanges = 0
        while self._held > self._limit:
            self._drop()

    def _drop(self) -> None:
        _, links = self._closed.popleft()
        self._held -= len(links)


def keep(group: list[Exchange], fidelities: Sequence[Fidelity] | None = None) -> list[Exchange]:
    """What one call's exchanges (in arrival order, with their readers' fidelities) leave
    in the cassette: the most faithful one, the one recording the most components among
    equals — except that the gateway's own spans are each an HTTP attempt (an SDK retrying
    a 429 sends several under one instrumentation span), so when the group holds several,
    every distinct one is kept, in start order."""
    ranks = list(fidelities) if fidelities is not None else [Fidelity.of(e) for e in group]
    attempts: dict[str | None, Exchange] = {}
    for exchange, fidelity in zip(group, ranks, strict=True):
        if fidelity is Fidelity.WIRE:
            attempts.setdefault(exchange.span_id, exchange)
    if len(attempts) > 1:
        return sorted(attempts.values(), key=lambda e: e.start_ns)
    best = max(range(len(group)), key=lambda i: (ranks[i], len(group[i].request.known)))
    return [group[best]]


def _same_messages(a: Exchange, b: Exchange) -> bool:
    """Whether two overlapping, unrelated spans describe the same conversation."""
    if "messages" not in a.request.known or "messages" not in b.request.known:
        return True
    ma, mb = a.request.messages or [], b.request.messages or []
    return len(ma) == len(mb) and (not ma or _text(ma[-1]) == _text(mb[-1]))


def _text(message: Any) -> str:
    parts = message.get("parts") if isinstance(message, dict) else None
    return "".join(
        str(p.get("content", p.get("response", ""))) for p in parts or [] if isinstance(p, dict)
    )
