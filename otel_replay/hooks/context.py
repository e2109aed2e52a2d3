"""Where a tool call happens in the agent's trace: its current span as a ``traceparent``,
so the call's ``execute_tool`` span is placed under it (nothing when the agent does not
use OpenTelemetry)."""

from __future__ import annotations

import sys

__all__ = ["traceparent"]


def traceparent() -> str | None:
    """The W3C ``traceparent`` of the agent's current span, or None."""
    if "opentelemetry.trace" not in sys.modules:  # the agent uses no tracing: nothing to find
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
