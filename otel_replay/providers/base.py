"""The provider seam: what the gateway, the span readers and replay need from a provider.

A provider knows its own wire format and nothing else: how to read a request body into the
canonical request, how its errors and streams look, and how to rebuild a response from the
semantic-convention view of a trace when the exact body was not recorded. Which requests
reach it, its environment and its hosts are declared in the ``PROVIDERS`` table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from otel_replay.core.exchange import JSON, CanonicalRequest, SSEEvent


@dataclass(slots=True)
class OutputView:
    """The response as a semantic-convention span records it.

    ``messages`` is ``gen_ai.output.messages`` in the parts form:
    ``[{"role": "assistant", "parts": [...], "finish_reason": "stop"}]`` with parts of type
    ``text``, ``tool_call`` (``id``, ``name``, ``arguments``), ``reasoning``, ...
    ``usage`` uses the semconv names: ``input_tokens``, ``output_tokens`` and, when known,
    ``cache_read.input_tokens`` / ``cache_creation.input_tokens``.
    ``embeddings`` carries vectors for an embeddings call when the trace had them (rarely).
    """

    messages: list[JSON] = field(default_factory=list)
    response_id: str | None = None
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    embeddings: list[list[float]] | None = None


class Provider(Protocol):
    """One provider's API surface. Implementations are stateless singletons."""

    name: str
    """``"openai"``, ``"anthropic"``: the value of ``gen_ai.provider.name``."""

    def operation(self, path: str) -> str:
        """The exchange operation for a path: ``chat``, ``responses``, ``embeddings``,
        ``completions``, ``messages``, ``count_tokens``, ``models`` or ``other``."""
        ...

    def endpoint(self, operation: str, *, model: str | None = None) -> str:
        """The canonical path for an operation, e.g. ``chat`` -> ``/v1/chat/completions``;
        ``model`` for an API whose paths hold it (``/v1beta/models/{model}:generateContent``)."""
        ...

    def canonical(self, path: str, body: JSON) -> CanonicalRequest:
        """The canonical request for a request body sent to ``path``.

        Never raises on odd bodies: unknown shapes land in ``params`` or generic parts."""
        ...

    def parameters(self, operation: str) -> frozenset[str]:
        """The request body fields the provider's API takes for an operation, as its
        official SDK's request type declares them; empty for an operation it does not
        describe. A parameter a trace records counts only when it is one of these."""
        ...

    def wants_stream(
        self, body: JSON, path: str = "", query: Mapping[str, str] | None = None
    ) -> bool:
        """Whether the request asks for a streamed answer: by its body, or by its path
        and query for an API that says so there."""
        ...

    def error_body(self, status: int, message: str, kind: str) -> JSON:
        """An error body in the provider's own format (``kind`` e.g. ``replay_miss``)."""
        ...

    def stream_from_body(self, operation: str, body: JSON) -> list[SSEEvent]:
        """A correct SSE event sequence equivalent to a non-streamed response body,
        as the provider would have streamed it (usage chunk included)."""
        ...

    def body_from_stream(self, operation: str, events: list[SSEEvent]) -> JSON:
        """The non-streamed response body equivalent to a recorded event sequence."""
        ...

    def stream_done(self, events: list[SSEEvent]) -> bool:
        """Whether ``events`` end with the event that closes a stream of this provider, so
        an agent that hangs up after it saw the whole answer, not a timeout."""
        ...

    def response_from_view(self, operation: str, view: OutputView) -> JSON:
        """A non-streamed response body rebuilt from a trace's semantic-convention view:
        text, tool calls, finish reasons and usage in the provider's own format."""
        ...

    def view_from_response(self, operation: str, body: JSON) -> OutputView:
        """The semantic-convention view of a non-streamed response body (for spans)."""
        ...
