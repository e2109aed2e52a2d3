"""A run's entry: what the agent was asked and what it finally answered, from its trace.

``build --emit-test`` makes a test that calls the agent's entry point the way the recorded
run was called and expects what it answered. Both come from the trace's root span,
through projections from the attribute groups it carries (``INPUTS``, ``OUTPUTS``):
OpenInference's ``input.value`` / ``output.value`` (a decorated entry point, a LangChain
chain), OpenLLMetry's ``traceloop.entity.input`` / ``.output`` (a workflow's arguments and
result), the GenAI conventions' ``gen_ai.input.messages`` (its first user message) and
``gen_ai.output.messages``, pydantic-ai's agent run (``pydantic_ai.all_messages``,
``final_result``).

A root that is a model call, or an agent span that does not carry its own input or output
(the OpenAI Agents SDK's workflow and agent spans), stands for the run of model calls in
its trace: the first call's first user message, the last call's answer. One whose
instrumentation was told to leave content out does not: that is said, with the setting.
A root that is neither (a web request's span) gives way to the outermost agent span
beneath it.

``EntrySpans`` collects what this needs while ``build`` reads the spans (``read_exchanges``
hands it every selected span) and ``entry`` decides, or says which of input and output is
missing and the setting that records it.
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.errors import ConfigError
from otel_replay.core.exchange import JSON, Exchange
from otel_replay.core.ids import hex_id
from otel_replay.readers.diagnose import capture_fix, model_call
from otel_replay.readers.messages import content_stripped
from otel_replay.readers.view import json_value, plain

__all__ = [
    "INPUTS",
    "OUTPUTS",
    "Call",
    "Entry",
    "EntrySpans",
    "answer_text",
    "is_agent",
    "span_input",
    "span_output",
]

HIDDEN = "__REDACTED__"
"""OpenInference's value for an input or output it was told to hide."""
TRACELOOP_INPUT = "traceloop.entity.input"
TRACELOOP_OUTPUT = "traceloop.entity.output"
TRACELOOP_KIND = "traceloop.span.kind"
PYDANTIC_AI_MESSAGES = "pydantic_ai.all_messages"
PYDANTIC_AI_NEW = "pydantic_ai.new_message_index"
PYDANTIC_AI_RESULT = "final_result"
AGENT_NAME = "gen_ai.agent.name"
_AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
_AGENT_KINDS = frozenset({"AGENT", "CHAIN"})  # OpenInference
_TRACELOOP_AGENT_KINDS = frozenset({"agent", "workflow"})


@dataclass(frozen=True, slots=True)
class Call:
    """The arguments a run's entry point was called with."""

    args: tuple[JSON, ...] = ()
    kwargs: Mapping[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Entry:
    """A recorded run to call again: its trace, the span it was read from, the call and
    the final output."""

    trace_id: str
    span_name: str
    call: Call
    output: JSON


# --- projections: attribute groups → the call and the output ---------------------------


def _text_of(message: Any) -> str | None:
    if not isinstance(message, Mapping):
        return None
    texts = [
        str(part.get("content"))
        for part in message.get("parts") or ()
        if isinstance(part, Mapping) and part.get("type") == "text" and "content" in part
    ]
    return "".join(texts) if texts else None


def _first_user(messages: Any, start: int = 0) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in messages[start:]:
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _text_of(message)
    return None


def _last_text(messages: Any) -> str | None:
    return _text_of(messages[-1]) if isinstance(messages, list) and messages else None


def _arguments(value: JSON) -> Call:
    """A JSON object whose keys are all names is keyword arguments (OpenInference's form
    for an entry point of several parameters); any other value is the one argument."""
    if isinstance(value, dict) and value and all(_is_name(k) for k in value):
        return Call(kwargs=value)
    return Call(args=(value,))


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def _oi_value(attrs: Mapping[str, Any], side: str) -> JSON:
    value = attrs.get(f"{side}.value")
    if not isinstance(value, str) or value == HIDDEN:
        return None
    if attrs.get(f"{side}.mime_type") == genai.OI_JSON:
        try:
            parsed: JSON = json.loads(value)
        except ValueError:
            return value
        return parsed
    return value


def _openinference_input(attrs: Mapping[str, Any]) -> Call | None:
    value = _oi_value(attrs, "input")
    return None if value is None else _arguments(value)


def _traceloop_input(attrs: Mapping[str, Any]) -> Call | None:
    found = json_value(attrs.get(TRACELOOP_INPUT))
    if not isinstance(found, dict):
        return None
    if "inputs" in found:  # a LangChain chain's callback: what the chain was invoked with
        return _arguments(found["inputs"])
    args, kwargs = found.get("args"), found.get("kwargs", {})  # a decorated workflow
    if isinstance(args, list) and isinstance(kwargs, dict):
        return Call(tuple(args), kwargs)
    return None


def _genai_input(attrs: Mapping[str, Any]) -> Call | None:
    text = _first_user(json_value(attrs.get(genai.INPUT_MESSAGES)))
    return None if text is None else Call(args=(text,))


def _pydantic_ai_input(attrs: Mapping[str, Any]) -> Call | None:
    start = attrs.get(PYDANTIC_AI_NEW, 0)
    messages = json_value(attrs.get(PYDANTIC_AI_MESSAGES))
    text = _first_user(messages, start if isinstance(start, int) else 0)
    return None if text is None else Call(args=(text,))


def _openinference_output(attrs: Mapping[str, Any]) -> JSON:
    return _oi_value(attrs, "output")


def _traceloop_output(attrs: Mapping[str, Any]) -> JSON:
    value = attrs.get(TRACELOOP_OUTPUT)
    if not isinstance(value, str):
        return None
    try:
        parsed: JSON = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, dict) and "outputs" in parsed:  # a LangChain chain's callback
        return parsed["outputs"]
    return parsed


def _genai_output(attrs: Mapping[str, Any]) -> JSON:
    return _last_text(json_value(attrs.get(genai.OUTPUT_MESSAGES)))


def _pydantic_ai_output(attrs: Mapping[str, Any]) -> JSON:
    value = attrs.get(PYDANTIC_AI_RESULT)
    if not isinstance(value, str):
        return plain(value)
    return json_value(value)


INPUTS: tuple[Callable[[Mapping[str, Any]], Call | None], ...] = (
    _traceloop_input,
    _openinference_input,
    _genai_input,
    _pydantic_ai_input,
)
"""The projections an entry's call is read with, first that gives one wins."""
OUTPUTS: tuple[Callable[[Mapping[str, Any]], JSON], ...] = (
    _traceloop_output,
    _openinference_output,
    _pydantic_ai_output,
    _genai_output,
)
"""The projections an entry's output is read with, first that gives one wins."""
_CARRIERS = {
    "input": "input.value, gen_ai.input.messages, traceloop.entity.input, pydantic_ai.all_messages",
    "output": "output.value, gen_ai.output.messages, traceloop.entity.output, final_result",
}


def span_input(attrs: Mapping[str, Any]) -> Call | None:
    """The call a span records, or None."""
    return next((c for c in (p(attrs) for p in INPUTS) if c is not None), None)


def span_output(attrs: Mapping[str, Any]) -> JSON:
    """The output a span records, or None."""
    return next((v for v in (p(attrs) for p in OUTPUTS) if v is not None), None)


def is_agent(attrs: Mapping[str, Any]) -> bool:
    """Whether a span stands for an agent's (or a workflow's) run."""
    return (
        attrs.get(genai.OPERATION_NAME) in _AGENT_OPERATIONS
        or attrs.get(genai.OI_SPAN_KIND) in _AGENT_KINDS
        or attrs.get(TRACELOOP_KIND) in _TRACELOOP_AGENT_KINDS
        or AGENT_NAME in attrs
        or PYDANTIC_AI_MESSAGES in attrs
    )


def _why_missing(attrs: Mapping[str, Any], scope: str, side: str) -> tuple[bool, str]:
    """Whether a span's input or output was withheld (the instrumentation has a place for
    it and left the content out), and why it cannot be read, with the setting that
    records it."""
    messages = genai.INPUT_MESSAGES if side == "input" else genai.OUTPUT_MESSAGES
    withheld = (
        attrs.get(f"{side}.value") == HIDDEN
        or f"{side}.mime_type" in attrs
        or content_stripped(json_value(attrs.get(messages)))
        or content_stripped(json_value(attrs.get(PYDANTIC_AI_MESSAGES)))
    )
    if withheld:
        return True, f"its {side} was not recorded: {capture_fix(attrs, scope)}"
    return False, (
        f"it carries none of {_CARRIERS[side]}: record the agent's entry point as a span with"
        " its input and output, e.g. OpenInference's @tracer.agent on the function, or a"
        " GenAI invoke_agent span with content capture on"
    )


# --- the collector ---------------------------------------------------------------------


@dataclass(slots=True)
class _Span:
    span_id: str
    parent: str
    name: str
    start_ns: int
    agent: bool
    model: bool
    call: Call | None = None
    output: JSON = None
    missing: dict[str, str] = field(default_factory=dict)  # side: why it cannot be read
    withheld: set[str] = field(default_factory=set)  # sides recorded without content


@dataclass(slots=True)
class _Trace:
    spans: dict[str, _Span] = field(default_factory=dict)
    first: tuple[int, str | None] | None = None  # the first model call: start, user text
    last: tuple[int, JSON] | None = None  # the last model call: start, its answer


class EntrySpans:
    """Collects, per trace, the spans an entry can be read from and the first and last
    model calls; ``redact`` is applied to everything ``entry`` returns."""

    def __init__(self, redact: Callable[[JSON], JSON] = lambda value: value) -> None:
        self.redact = redact
        self._traces: dict[str, _Trace] = {}

    def add(self, span: Span, attrs: Mapping[str, Any], scope: str, found: Exchange | None) -> None:
        """A selected span, with the exchange a reader found in it (None: not a call)."""
        trace_id = hex_id(span.trace_id) or ""
        trace = self._traces.setdefault(trace_id, _Trace())
        model = found is not None or model_call(attrs)
        kept = _Span(
            hex_id(span.span_id) or "",
            hex_id(span.parent_span_id) or "",
            span.name,
            span.start_time_unix_nano,
            not model and is_agent(attrs),
            model,
        )
        if not model:
            kept.call, kept.output = span_input(attrs), span_output(attrs)
            for side, value in (("input", kept.call), ("output", kept.output)):
                if value is None:
                    withheld, kept.missing[side] = _why_missing(attrs, scope, side)
                    if withheld:
                        kept.withheld.add(side)
        trace.spans[kept.span_id] = kept
        if found is not None:
            self._call(trace, found)

    def _call(self, trace: _Trace, exchange: Exchange) -> None:
        start = exchange.start_ns
        if trace.first is None or start < trace.first[0]:
            trace.first = (start, _first_user(exchange.request.messages))
        if trace.last is None or start >= trace.last[0]:
            trace.last = (start, answer_text(exchange))

    def runs(self) -> list[str]:
        """The traces read that hold model calls: one run each."""
        return sorted(t for t, trace in self._traces.items() if trace.first is not None)

    def entry(self, trace_id: str | None = None) -> Entry:
        """The entry of the run of ``trace_id``, or of the one run read; ``ConfigError``
        saying what is missing (no run, several, or a root whose input or output is not
        recorded)."""
        runs = self.runs() if trace_id is None else [t for t in self.runs() if t == trace_id]
        if not runs:
            raise ConfigError("--emit-test: no model call in the traces read; nothing written")
        if len(runs) > 1:
            shown = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
            raise ConfigError(
                f"--emit-test: the traces hold {len(runs)} runs with model calls ({shown}); "
                "a test replays one: choose its trace with --trace-id; nothing written"
            )
        trace_id = runs[0]
        trace = self._traces[trace_id]
        span = _entry_span(trace)
        call, output = span.call, span.output
        # the run of model calls stands for a model call, or an agent span without content
        stand_in = span.model or span.agent
        first, last = trace.first, trace.last
        if call is None and stand_in and "input" not in span.withheld and first and first[1]:
            call = Call(args=(first[1],))
        if output is None and stand_in and "output" not in span.withheld and last:
            output = last[1]
        where = f"--emit-test: the root span {span.name!r} of trace {trace_id}"
        if call is None:
            why = span.missing.get("input", "no model call in it records a user message")
            raise ConfigError(f"{where} has no usable input: {why}; nothing written")
        if output is None:
            why = span.missing.get("output", "its last model call answered no text")
            raise ConfigError(f"{where} has no usable output: {why}; nothing written")
        args, kwargs = self.redact(list(call.args)), self.redact(dict(call.kwargs))
        assert isinstance(args, list) and isinstance(kwargs, dict)
        return Entry(trace_id, span.name, Call(tuple(args), kwargs), self.redact(output))


def _entry_span(trace: _Trace) -> _Span:
    """The trace's root (the earliest span whose parent is not in it); a root that is
    neither an agent nor a model call and records no input gives way to the outermost
    agent span."""
    spans = trace.spans
    roots = sorted((s for s in spans.values() if s.parent not in spans), key=lambda s: s.start_ns)
    root = roots[0]
    if root.call is not None or root.agent or root.model:
        return root
    agents = [s for s in spans.values() if s.agent]
    if not agents:
        return root
    return min(agents, key=lambda s: (_depth(s, spans), s.start_ns))


def _depth(span: _Span, spans: Mapping[str, _Span]) -> int:
    depth, seen = 0, {span.span_id}
    while span.parent in spans and span.parent not in seen:
        span = spans[span.parent]
        seen.add(span.span_id)
        depth += 1
    return depth


def answer_text(exchange: Exchange) -> str | None:
    """The text of a model call's answer (None: an error, or no text in it)."""
    response = exchange.response
    if response.fault is not None or response.status >= 400:
        return None
    try:
        provider = providers.get(exchange.provider)
        body = response.body
        if response.events is not None:
            body = provider.body_from_stream(exchange.operation, response.events)
        view = provider.view_from_response(exchange.operation, body)
    except Exception:  # an answer no provider view reads has no text to give
        return None
    return _last_text(view.messages)
