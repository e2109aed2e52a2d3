"""Where a request's canonical messages come from one item at a time: the body's array
whose items each become one message, in order (``matching.continuation`` matches a
coding agent's next turn by the items it adds)."""

from __future__ import annotations

from collections.abc import Callable

from otel_replay.core.exchange import JSON
from otel_replay.core.memo import by_identity
from otel_replay.providers.anthropic import canonical_message
from otel_replay.providers.openai_request import responses_item

__all__ = ["item_messages"]

_ITEM_MESSAGES: dict[tuple[str, str], tuple[str, Callable[[JSON], JSON]]] = {
    # an item met again (the same redacted object) gives the same message object
    ("anthropic", "messages"): ("messages", by_identity(canonical_message)),
    ("openai", "responses"): ("input", responses_item),
}


def item_messages(provider: str, operation: str) -> tuple[str, Callable[[JSON], JSON]] | None:
    """The body's field whose array's items ``provider``'s canonical form makes into its
    messages one for one, and what makes one; None for an operation whose messages are
    not so made (chat completions take the system messages out)."""
    return _ITEM_MESSAGES.get((provider, operation))
