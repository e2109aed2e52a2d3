"""A run's spans as a tree: the agent's own spans with the gateway's model-call spans and
miss spans in place under the span whose ``traceparent`` they carried.

Every span keeps its place (trace, parent, times), its attributes and a role read from
what it carries: ``model`` (a model call: the gateway's span, or another instrumentation's
GenAI span), ``miss`` (the gateway's miss span), ``tool`` (``execute_tool``), ``agent``
(``invoke_agent``), ``http`` (HTTP semantic conventions) or ``span``. A gateway span also
keeps the exchange it carries, and whether it was replayed or went live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core import genai
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import Exchange
from otel_replay.core.ids import hex_id
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.files import iter_trace_requests
from otel_replay.providers.mcp import MCP_SERVER
from otel_replay.readers.own import span_to_exchange
from otel_replay.readers.pieces import Pieces
from otel_replay.spans import attributes as own

__all__ = ["SpanNode", "load_spans", "roots", "walk"]

TOOL_OPERATION = "execute_tool"
AGENT_OPERATIONS = ("invoke_agent", "create_agent")
_HTTP = ("http.request.method", "http.method")


@dataclass(slots=True)
class SpanNode:
    """One span of the run."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    service: str
    attrs: dict[str, Any]
    role: str = "span"
    state: str | None = None  # "replayed" | "live" | "miss" on the gateway's spans
    error: str | None = None
    exchange: Exchange | None = None
    children: list[SpanNode] = field(default_factory=list)

    @property
    def tool_name(self) -> str | None:
        """The tool an ``execute_tool`` span ran (its attribute, else its name's tail)."""
        name = self.attrs.get("gen_ai.tool.name")
        if isinstance(name, str):
            return name
        head, _, tail = self.name.partition(" ")
        return tail or None if head == TOOL_OPERATION else None


def _role(name: str, attrs: dict[str, Any]) -> tuple[str, str | None]:
    if own.FORMAT_ATTRIBUTE in attrs:
        return "model", "replayed" if attrs.get(own.REPLAYED) else "live"
    if own.MISS in attrs:
        return "miss", "miss"
    operation = attrs.get(genai.OPERATION_NAME)
    head = name.split(" ", 1)[0]
    if operation == TOOL_OPERATION or head == TOOL_OPERATION:
        if MCP_SERVER in attrs:  # a tool call through the gateway: replayed or live
            return "tool", "replayed" if attrs.get(own.REPLAYED) else "live"
        return "tool", None
    if operation in AGENT_OPERATIONS or head in AGENT_OPERATIONS:
        return "agent", None
    if genai.PROVIDER_NAME in attrs or genai.SYSTEM in attrs or operation is not None:
        return "model", None
    if any(key in attrs for key in _HTTP):
        return "http", None
    return "span", None


def _node(span: Span, service: str, pieces: Pieces) -> SpanNode:
    stored = pieces.absorb(span)
    attrs = (
        pieces.expand(span, stored) if stored is not None else attributes_to_dict(span.attributes)
    )
    role, state = _role(span.name, attrs)
    error = None
    if span.status.code == Status.STATUS_CODE_ERROR:
        error = span.status.message or "error"
    node = SpanNode(
        trace_id=hex_id(span.trace_id) or "",
        span_id=hex_id(span.span_id) or "",
        parent_id=hex_id(span.parent_span_id),
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=max(span.end_time_unix_nano, span.start_time_unix_nano),
        service=service,
        attrs=attrs,
        role=role,
        state=state,
        error=error,
    )
    if state in ("replayed", "live"):
        node.exchange = span_to_exchange(span, attrs=attrs)
    return node


def load_spans(
    paths: Sequence[Path], on_error: Callable[[TraceFormatError], None] | None = None
) -> list[SpanNode]:
    """The spans of trace files (any form ``build`` reads), each once, linked into trees
    (``roots`` gives the tops). A bad record goes to ``on_error`` (default: raise), named
    by its file."""
    nodes: dict[tuple[str, str], SpanNode] = {}
    pieces = Pieces()  # long strings and lists the gateway's spans store once per file
    for path in paths:
        for request in iter_trace_requests(path, on_error=on_error):
            for resource_spans in request.resource_spans:
                service = _service(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        try:
                            node = _node(span, service, pieces)
                        except TraceFormatError as exc:
                            named = TraceFormatError(f"{path}: {exc.source}", exc.problem)
                            if on_error is None:
                                raise named from exc
                            on_error(named)
                            continue
                        nodes.setdefault((node.trace_id, node.span_id), node)
    ordered = sorted(nodes.values(), key=lambda n: (n.start_ns, n.end_ns))
    for node in ordered:
        parent = nodes.get((node.trace_id, node.parent_id or ""))
        if parent is not None and parent is not node:
            parent.children.append(node)
    return ordered


def _service(attributes: Iterable[Any]) -> str:
    for kv in attributes:
        if kv.key == genai.SERVICE_NAME:
            return str(kv.value.string_value)
    return ""


def roots(nodes: Sequence[SpanNode]) -> list[SpanNode]:
    """The spans whose parent is not among ``nodes`` (in start order)."""
    children = {id(child) for node in nodes for child in node.children}
    return [node for node in nodes if id(node) not in children]


def walk(tops: Iterable[SpanNode]) -> list[tuple[SpanNode, int]]:
    """Every span below ``tops`` depth first, in start order, with its depth; a span
    reached twice (a cycle of parent ids) is listed once."""
    out: list[tuple[SpanNode, int]] = []
    seen: set[int] = set()
    stack = [(node, 0) for node in reversed(list(tops))]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append((node, depth))
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return out
