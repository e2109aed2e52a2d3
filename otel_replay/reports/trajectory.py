"""A run's trajectory: its model calls and tool executions in order, provider-neutral.

A :class:`Step` is a model call (the model, a digest of its system prompt, tools and
messages, the messages new since the previous call, and its answer: text and tool calls),
a tool execution (name and arguments) or a miss (the request that found no recording, and
why). From a trace file, tool executions are the ``execute_tool`` spans; where a run has
none (a cassette, a production trace without agent spans) they are the tool calls each
answer asked for, so a cassette and a trace of the same run have the same trajectory.
Values are normalised as matching normalises them (ids, UUIDs, timestamps), so two runs
of the same agent compare equal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_replay import providers
from otel_replay.cassette.model import load
from otel_replay.core.errors import CassetteError, ConfigError, OtelReplayError
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange
from otel_replay.core.ids import short_hash
from otel_replay.matching.normalize import DEFAULT, Normalizer
from otel_replay.reports.spantree import SpanNode, load_spans
from otel_replay.spans import attributes as own

__all__ = [
    "Step",
    "Trajectory",
    "answer_parts",
    "load_trajectory",
    "trajectory_from_spans",
    "trajectory_of",
]


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a run. ``facts`` are what comparing two steps looks at (label → value,
    already normalised); ``shown`` is what a reader of the diff sees of it."""

    kind: str  # "model" | "tool" | "miss"
    name: str  # the model, the tool, or the miss line
    facts: tuple[tuple[str, str], ...]
    shown: str = ""
    span_id: str | None = None
    state: str | None = None  # "replayed" | "live" | "miss" when known

    @property
    def key(self) -> tuple[str, str]:
        """What aligning two trajectories pairs steps by."""
        return self.kind, self.name

    def fact(self, label: str) -> str | None:
        return dict(self.facts).get(label)


@dataclass(slots=True)
class Trajectory:
    """The steps of one run, and where it came from."""

    source: str
    steps: list[Step] = field(default_factory=list)


def _text(value: JSON) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def answer_parts(exchange: Exchange) -> list[dict[str, Any]]:
    """The answer's parts (text, tool calls) in the GenAI parts form, ids left out; an
    error answer is one part ``{"type": "error", ...}``."""
    response = exchange.response
    if response.fault is not None or response.status >= 400:
        return [{"type": "error", "status": response.status, "fault": response.fault}]
    provider = providers.get(exchange.provider)
    try:
        body = response.body
        if response.events is not None:
            body = provider.body_from_stream(exchange.operation, response.events)
        view = provider.view_from_response(exchange.operation, body)
    except Exception:  # an answer no provider view reads: compared as recorded
        return [{"type": "body", "body": response.body}]
    parts: list[dict[str, Any]] = []
    for message in view.messages:
        for part in message.get("parts", []) if isinstance(message, dict) else []:
            if isinstance(part, dict):
                parts.append({k: v for k, v in part.items() if k != "id"})
    return parts


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return _text(value)


def _new_messages(request: CanonicalRequest, before: int) -> JSON:
    messages = request.messages
    return messages[before:] if isinstance(messages, list) else messages


def _model_step(
    exchange: Exchange, normal: CanonicalRequest, before: int, span: SpanNode | None
) -> Step:
    answer = answer_parts(exchange)
    tools = normal.tools if isinstance(normal.tools, list) else []
    names = [t.get("name") for t in tools if isinstance(t, dict)]
    facts = (
        ("model", normal.model or ""),
        ("system prompt", short_hash(_text(normal.system))),
        ("tools", f"{', '.join(str(n) for n in names)} ({short_hash(_text(normal.tools))})"),
        ("params", _text(normal.params)),
        ("messages", short_hash(_text(normal.messages))),
        ("answer", _text(answer)),
    )
    shown = _text(_new_messages(normal, before))
    origin = (exchange.provenance or {}).get("origin")  # a fork's: replayed or live
    state = span.state if span is not None else origin if isinstance(origin, str) else None
    span_id = span.span_id if span is not None else None
    return Step("model", normal.model or exchange.operation, facts, shown, span_id, state)


def _asked_tools(step: Step) -> list[Step]:
    answer = json.loads(step.fact("answer") or "[]")
    return [
        Step("tool", str(part.get("name")), (("arguments", _arguments(part.get("arguments"))),))
        for part in answer
        if isinstance(part, dict) and part.get("type") == "tool_call"
    ]


def _asked_for(
    asked: Sequence[tuple[int, int, Step]], taken: set[int], name: str, before_ns: int
) -> tuple[tuple[str, str], ...]:
    """The arguments of the first call of tool ``name`` an answer before ``before_ns``
    asked for and no tool span has taken yet (for an agent that does not record them)."""
    for i, (start, _, step) in enumerate(asked):
        if i not in taken and step.name == name and start <= before_ns:
            taken.add(i)
            return step.facts
    return ()


def trajectory_of(
    exchanges: Sequence[tuple[Exchange, SpanNode | None]],
    tools: Sequence[SpanNode] = (),
    misses: Sequence[SpanNode] = (),
    source: str = "",
    normalizer: Normalizer = DEFAULT,
) -> Trajectory:
    """The trajectory of model calls (each with its span, when known), tool spans and miss
    spans, in start order. Without tool spans, the tool calls answers asked for stand in."""
    items: list[tuple[int, int, Step]] = []
    before = 0
    asked: list[tuple[int, int, Step]] = []
    for order, (exchange, span) in enumerate(exchanges):
        normal = normalizer.normalize(exchange.request)
        step = _model_step(exchange, normal, before, span)
        before = len(normal.messages) if isinstance(normal.messages, list) else 0
        start = span.start_ns if span is not None else exchange.start_ns
        items.append((start, order, step))
        asked.extend((start, order, tool) for tool in _asked_tools(step))
    taken: set[int] = set()
    for node in tools:
        name = node.tool_name or node.name
        args = node.attrs.get("gen_ai.tool.call.arguments")
        if args is not None:
            facts: tuple[tuple[str, str], ...] = (("arguments", _arguments(args)),)
        else:  # a span without its arguments: those the answer asked it for
            facts = _asked_for(asked, taken, name, node.start_ns)
        step = Step("tool", name, facts, span_id=node.span_id)
        items.append((node.start_ns, len(items), step))
    if not tools:
        items.extend(asked)
    for node in misses:
        step = Step(
            "miss",
            str(node.attrs.get(own.MISS, "replay miss")),
            (("component", str(node.attrs.get(own.MISS_COMPONENT, ""))),),
            str(node.attrs.get(own.MISS_WHY, "")),
            node.span_id,
            "miss",
        )
        items.append((node.start_ns, len(items), step))
    items.sort(key=lambda item: (item[0], item[1]))
    return Trajectory(source, [step for _, _, step in items])


def load_trajectory(path: Path) -> Trajectory:
    """The trajectory of a cassette (the run it was recorded or built from) or of trace
    files (the run they show). Raises an OtelReplayError naming the file when neither."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    if _looks_like_cassette(path):
        cassette = load(path)
        return trajectory_of([(ex, None) for ex in cassette.interactions], source=str(path))
    try:
        nodes = load_spans([path])
    except OtelReplayError as exc:
        raise ConfigError(f"{path}: neither a cassette nor a trace file ({exc})") from exc
    return trajectory_from_spans(nodes, str(path), [path])


def trajectory_from_spans(
    nodes: Sequence[SpanNode], source: str, paths: Sequence[Path]
) -> Trajectory:
    """The trajectory of a run's spans: the gateway's model calls when it recorded them,
    else the model calls ``build`` reads from the files (a production trace)."""
    calls: list[tuple[Exchange, SpanNode | None]]
    calls = [(n.exchange, n) for n in nodes if n.exchange is not None]
    tools = [n for n in nodes if n.role == "tool"]
    misses = [n for n in nodes if n.role == "miss"]
    if not calls:
        from otel_replay.pipeline.build import build

        calls = [(ex, None) for ex in build(list(paths)).interactions]
    return trajectory_of(calls, tools, misses, source)


def _looks_like_cassette(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError as exc:
        raise CassetteError(path, "", f"cannot read: {exc.strerror or exc}") from None
    # a cassette is one JSON object opening with its version; trace JSON opens with spans
    return head.startswith(b"{") and head[1:].lstrip().startswith(b'"version"')
