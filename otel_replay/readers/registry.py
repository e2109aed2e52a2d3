"""The span readers, in one table: what each one reads, when it applies, how faithful it is.

A reader is a projection from the attribute groups a span carries to an exchange. It
declares the groups it needs (``carries``: each group is a set of alternatives, an
attribute name or, ending in ``.``, the prefix of a flattened group such as
``llm.output_messages.``) and its ``fidelity``. ``read_call`` tries the readers that apply
from the highest fidelity down (in table order among equals); the first exchange wins.
When several spans describe the same call, the exchange of the highest fidelity is the one
kept (see ``readers.window``).

Each row also says which API the model call a span stands for went to, whether or not
the span recorded its content (``calls``): ``model_call`` asks the rows, so whatever
``build`` reads as a model call is one everywhere else too (the bypass watch of a run
sees the calls of every instrumentation ``build`` reads).

A new instrumentation is one module with its projection plus one row in ``READERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core import genai
from otel_replay.core.exchange import Exchange
from otel_replay.readers import ai_sdk, openinference, semconv
from otel_replay.readers.claude_code import ClaudeCodeReader
from otel_replay.readers.own import span_to_exchange
from otel_replay.readers.view import Event, with_details
from otel_replay.spans.attributes import FORMAT_ATTRIBUTE, OWN_SOURCE

__all__ = [
    "BODY_EVENTS",
    "CALL_MARKS",
    "READERS",
    "Fidelity",
    "LogReader",
    "Reader",
    "Reading",
    "answered",
    "model_call",
    "read_call",
]


class Fidelity(IntEnum):
    """How much of a call a reader recovers."""

    MESSAGES = 1
    """Structured messages: the canonical request as recorded, the response rebuilt in the
    provider's format from the recorded output."""
    BODY = 2
    """The exact request (and response) bodies the SDK sent and received."""
    WIRE = 3
    """The gateway's own recording: exact bodies, replayable headers, SSE events and
    timing, one span per HTTP attempt."""

    @classmethod
    def of(cls, exchange: Exchange) -> Fidelity:
        """The fidelity an exchange shows by itself, when no reader declared one (one
        loaded from a cassette, or built by hand)."""
        if exchange.source == OWN_SOURCE:
            return cls.WIRE
        return cls.BODY if exchange.raw_request is not None else cls.MESSAGES


Projection = Callable[[Span, Mapping[str, Any], Sequence[Event]], Exchange | None]
"""A span, its attributes (with those of a linked details event) and its GenAI events
(span events and linked log records) → the exchange, or None."""

CallApi = Callable[[Span, Mapping[str, Any]], str | None]
"""A span and its attributes → the API of the model call it stands for, or None."""


@dataclass(frozen=True, slots=True)
class Reader:
    """One row of the table: a projection and when it applies."""

    name: str
    carries: tuple[tuple[str, ...], ...]
    """Attribute groups the span must carry, every one of them; a group is present when
    any of its names is (a name ending in ``.`` is the prefix of a flattened group)."""
    fidelity: Fidelity
    read: Projection
    calls: CallApi | None = None
    """The API of the model call a span carrying the first of ``carries`` stands for,
    content or not; None for a reader whose spans are no agent's model calls (the
    gateway's own: they are the calls it made), which then no other row places."""
    answers: tuple[str, ...] = ()
    """Attributes (names, or prefixes ending in ``.``) any one of which shows that the
    call was made and answered: a response id, output messages, token usage. A span of
    the instrumentation without any is a step that called nothing yet (a framework
    preparing arguments, a stream whose span ended before it was read)."""

    def applies(self, attrs: Mapping[str, Any]) -> bool:
        return all(any(_present(attrs, name) for name in group) for group in self.carries)

    def marks(self, attrs: Mapping[str, Any]) -> bool:
        """Whether the span carries the first group, which names the instrumentation."""
        return any(_present(attrs, name) for name in self.carries[0])

    def answered(self, attrs: Mapping[str, Any]) -> bool:
        """Whether the span shows an answer (``answers``)."""
        return any(_present(attrs, name) for name in self.answers)


def _present(attrs: Mapping[str, Any], name: str) -> bool:
    if not name.endswith("."):
        return name in attrs
    return any(key.startswith(name) for key in attrs)


def _own(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> Exchange | None:
    del events
    return span_to_exchange(span, attrs=attrs)


READERS: tuple[Reader, ...] = (
    Reader("otel-replay", ((FORMAT_ATTRIBUTE,),), Fidelity.WIRE, _own),
    Reader(
        "openinference-body",
        ((genai.OI_SPAN_KIND,), (genai.oi_value("input"),)),
        Fidelity.BODY,
        openinference.read_body,
        openinference.call_api,
        openinference.ANSWERS,
    ),
    Reader(
        "openinference-messages",
        ((genai.OI_SPAN_KIND,), (genai.OI_OUTPUT_MESSAGES_PREFIX,)),
        Fidelity.MESSAGES,
        openinference.read_messages,
        openinference.call_api,
        openinference.ANSWERS,
    ),
    Reader(
        "ai-sdk",
        ((ai_sdk.PROVIDER,), (ai_sdk.MESSAGES,)),
        Fidelity.MESSAGES,
        ai_sdk.read,
        ai_sdk.call_api,
        ai_sdk.ANSWERS,
    ),
    Reader(
        "genai-semconv",
        ((genai.PROVIDER_NAME, genai.SYSTEM),),
        Fidelity.MESSAGES,
        semconv.read,
        semconv.call_api,
        semconv.ANSWERS,
    ),
)
"""Every span reader. Dispatch orders them by fidelity, then by their place here."""


CALL_MARKS: tuple[bytes, ...] = tuple(
    sorted({name.encode() for r in READERS if r.calls is not None for name in r.carries[0]})
)
"""Attribute names one of which a model-call span carries: a serialised batch holding
none of them holds no model call (checked before its attributes are read)."""


def model_call(span: Span, attrs: Mapping[str, Any]) -> str | None:
    """The API of the model call a span stands for, by the first row (in table order)
    whose instrumentation the span carries that places it; None when it stands for
    none, or is the gateway's own."""
    for reader in READERS:
        if reader.marks(attrs):
            if reader.calls is None:
                return None
            api = reader.calls(span, attrs)
            if api is not None:
                return api
    return None


_ANSWER_EVENTS = frozenset({genai.CHOICE_EVENT, genai.COMPLETION_EVENT, genai.DETAILS_EVENT})
"""Span events that carry a call's answer (the deprecated GenAI events, the details)."""


def answered(span: Span, attrs: Mapping[str, Any]) -> bool:
    """Whether a model-call span (``model_call``) shows that the call was made and
    answered, by the attributes of an instrumentation it carries (``Reader.answers``) or
    an event holding the answer."""
    if any(reader.marks(attrs) and reader.answered(attrs) for reader in READERS):
        return True
    return any(event.name in _ANSWER_EVENTS for event in span.events)


def _by_fidelity(readers: Sequence[Reader]) -> list[Reader]:
    return sorted(readers, key=lambda r: -r.fidelity)


_ORDERED = _by_fidelity(READERS)


@dataclass(frozen=True, slots=True)
class LogReader:
    """A reader of log events that pairs records into exchanges (it keeps state)."""

    name: str
    fidelity: Fidelity
    make: Callable[[], ClaudeCodeReader]


BODY_EVENTS = LogReader("claude-code", Fidelity.BODY, ClaudeCodeReader)
"""Claude Code's raw API body log events."""


@dataclass(frozen=True, slots=True)
class Reading:
    """An exchange and the fidelity of the reader that produced it."""

    exchange: Exchange
    fidelity: Fidelity


def read_call(
    span: Span,
    attrs: Mapping[str, Any],
    events: Sequence[Event] = (),
    readers: Sequence[Reader] = READERS,
) -> Reading | None:
    """The model call a span carries, from the most faithful reader that applies and
    reads it."""
    carried = with_details(attrs, events)
    for reader in _ORDERED if readers is READERS else _by_fidelity(readers):
        if reader.applies(carried):
            exchange = reader.read(span, carried, events)
            if exchange is not None:
                return Reading(exchange, reader.fidelity)
    return None
