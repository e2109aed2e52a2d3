"""The exchange: one model call, provider-neutral. The one record at the centre.

Everything else produces, stores or consumes exchanges: the gateway records them, the span
codec turns them into spans and back, the cassette stores them, the matcher compares their
canonical requests.

The canonical request holds the components that matching compares. ``system``,
``messages`` and ``tools`` are in the OpenTelemetry GenAI "parts" form
(``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.tool.definitions``),
so a request rebuilt from a semantic-convention span and one parsed from a provider body
compare directly. Content a part type cannot express is kept as a generic part carrying
the provider's own block, so nothing that changes the model's answer is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

JSON: TypeAlias = Any
"""A JSON value: dict, list, str, int, float, bool or None."""

# Component keys in the order a miss names them, and the words the miss message uses.
COMPONENTS: tuple[str, ...] = ("endpoint", "model", "system", "messages", "tools", "params")
COMPONENT_LABELS: dict[str, str] = {
    "endpoint": "endpoint",
    "model": "model",
    "system": "system prompt",
    "messages": "messages",
    "tools": "tools",
    "params": "params",
}
ALL_KNOWN: frozenset[str] = frozenset(COMPONENTS)
VIEWS: dict[str, tuple[str, ...]] = {
    "system-placement": ("system", "messages"),
    "tool-definitions": ("tools",),
    "tool-results": ("messages",),
    "bare-parts": ("messages",),
    "bare-messages": ("messages",),
}
"""The lossy forms a trace may record a request in, each with the components it covers (in
the order the forms apply). A recording made from such a form names it in
``CanonicalRequest.views``, and matching compares both sides in what that form can express
(``matching.views``): ``system-placement`` — the system prompt wherever the request carried
it, in its own field or as leading system/developer messages (the form records system
instructions apart from the conversation; a Responses API request carries them either
way); ``tool-definitions`` — tools by type, name, description and parameters only (the
GenAI tool-definition keys; no ``strict`` flag); ``tool-results`` — the role of a message
holding only tool results is not compared, consecutive such messages count as one
(instrumentations record it as ``user`` or ``tool``), and a result sent as the JSON text
of an object or array, or wrapped as a Gemini function response's ``{"name",
"content"}``, is that value (the form records the value the tool returned);
``bare-parts`` — a part recorded as its type alone (the form kept nothing else of it) is
not compared; ``bare-messages`` — the form recorded a message as its role alone, keeping
neither the tool calls an assistant message made nor the result a tool message carried
(OpenInference's Haystack instrumentation records a message's text only), so the
conversation's tool calls and results are not compared, its roles and text are."""


@dataclass(frozen=True, slots=True)
class CanonicalRequest:
    """What matching compares.

    ``endpoint`` is the API path under the provider's base, e.g. ``/v1/chat/completions``.
    ``system`` is a list of parts or None; ``messages`` a list of ``{"role", "parts"}``;
    ``tools`` a list of ``{"type", "name", "description", "parameters"}`` or None;
    ``params`` every other request field that changes the answer (temperature, max_tokens,
    tool_choice, response_format, ...), never transport fields such as ``stream``.
    ``known`` names the components the source actually recorded: a request rebuilt from a
    trace that did not capture tool definitions does not know ``tools``, and matching skips
    what the recording does not know. ``views`` names the lossy forms (``VIEWS``) the
    source recorded components in: such a component is compared, on both sides, in what
    its form can express.
    """

    endpoint: str
    model: str | None = None
    system: JSON = None
    messages: JSON = None
    tools: JSON = None
    params: dict[str, JSON] = field(default_factory=dict)
    known: frozenset[str] = ALL_KNOWN
    views: frozenset[str] = frozenset()

    def component(self, name: str) -> JSON:
        return getattr(self, name)


@dataclass(slots=True)
class SSEEvent:
    """One server-sent event: its ``event:`` name (if any), its ``data:`` text exactly,
    and its arrival time in seconds after the response headers."""

    data: str
    event: str | None = None
    t: float = 0.0


@dataclass(slots=True)
class Response:
    """What the upstream answered.

    ``body`` is the parsed JSON body, or the text when it is not JSON, or None.
    ``events`` is set for a streamed (SSE) response, in arrival order.
    ``fault`` names a transport failure instead of, or after, the HTTP response:
    ``"timeout"``, ``"reset"`` (connection reset before any response) or
    ``"reset_mid_stream"`` (the stream broke after ``events``).
    ``headers`` holds only headers worth replaying (lower-case names): content type,
    retry-after, rate-limit and request-id headers.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: JSON = None
    events: list[SSEEvent] | None = None
    fault: str | None = None

    @property
    def streamed(self) -> bool:
        return self.events is not None


@dataclass(slots=True)
class Exchange:
    """One model call.

    ``provider``: ``"openai"`` | ``"anthropic"`` | ...; ``operation``: ``"chat"``,
    ``"responses"``, ``"embeddings"``, ``"completions"``, ``"messages"``,
    ``"count_tokens"``, ``"models"`` or ``"other"``.
    ``raw_request`` is the exact (redacted) JSON body as sent, when the source knew it.
    ``stream`` tells whether the request asked for a stream.
    ``trace_id`` / ``span_id`` (lower-case hex) link to the span that carries it;
    ``parent_span_id`` to the agent's span when the request carried ``traceparent``.
    ``source`` names what produced it: ``"otel-replay"``, ``"openinference"``,
    ``"genai-semconv"``, ``"openllmetry"``, ``"claude-code"``, ...
    ``provenance`` says how the answer came to be where a run forked a recording
    (``session.fork``): the call's place in the run, whether it was replayed from the
    cassette forked or went live, and the model that answered.
    ``context`` holds the settings a trace recorded with the call that are not request
    parameters of the provider's API (a framework's client settings: a context-window
    size, a base URL): kept for whoever reads the cassette, never compared.
    """

    provider: str
    operation: str
    request: CanonicalRequest
    response: Response
    raw_request: JSON = None
    method: str = "POST"
    stream: bool = False
    start_ns: int = 0
    end_ns: int = 0
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    source: str = "otel-replay"
    provenance: dict[str, JSON] | None = None
    context: dict[str, JSON] = field(default_factory=dict)
