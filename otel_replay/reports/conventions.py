"""The GenAI semantic-conventions check on the agent's own spans.

A span claims to be a model call when its ``gen_ai.operation.name`` is a model operation
(``chat``, ``text_completion``, ``generate_content``, ``embeddings``). The conventions
then require attributes of it, and a trace can only be replayed when it carries the
call's content (as attributes, span events or log records). The rules are the rows of
:data:`RULES` — data, so the trace ``doctor`` can share them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.core import genai
from otel_replay.otlp.received import LogRecord, Span

__all__ = ["RULES", "Rule", "genai_problems"]

MODEL_OPERATIONS = frozenset({*genai.EXCHANGE_OF_OPERATION, "generate_content"})
"""``gen_ai.operation.name`` values that make a span a model call."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A model-call span must carry one of ``any_of`` (attributes; ``events`` also counts
    a span event or correlated log record of those names); ``why`` is what a missing one
    costs and ``fix`` the setting that usually brings it."""

    any_of: tuple[str, ...]
    why: str
    fix: str = ""
    events: frozenset[str] = frozenset()


_CAPTURE = (
    "capture message content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, "
    "or the instrumentation's own content setting)"
)
RULES: tuple[Rule, ...] = (
    Rule((genai.PROVIDER_NAME, genai.SYSTEM), "required: which provider answered"),
    Rule((genai.REQUEST_MODEL,), "required when known: the model asked for"),
    Rule(
        (genai.INPUT_MESSAGES, genai.PROMPT_PREFIX + "0.content", genai.PROMPT),
        "no request content: the call cannot be matched or replayed",
        _CAPTURE,
        genai.MESSAGE_EVENTS | {genai.DETAILS_EVENT},
    ),
    Rule(
        (genai.OUTPUT_MESSAGES, genai.COMPLETION_PREFIX + "0.content", genai.COMPLETION),
        "no response content: the answer cannot be replayed",
        _CAPTURE,
        frozenset({genai.CHOICE_EVENT, genai.COMPLETION_EVENT, genai.DETAILS_EVENT}),
    ),
)


def _claims_model_call(span: Span) -> bool:
    return span.attributes.get(genai.OPERATION_NAME) in MODEL_OPERATIONS


def _has(rule: Rule, span: Span, events: set[str]) -> bool:
    if any(key in span.attributes for key in rule.any_of):
        return True
    return bool(rule.events & events)


def genai_problems(spans: Sequence[Span], logs: Sequence[LogRecord] = ()) -> list[str]:
    """One line per model-call span and rule it breaks: the span, what is missing, why
    it matters and what fixes it."""
    by_span: dict[tuple[str | None, str | None], set[str]] = {}
    for record in logs:
        name = record.event_name or str(record.attributes.get(genai.EVENT_NAME, ""))
        by_span.setdefault((record.trace_id, record.span_id), set()).add(name)
    problems: list[str] = []
    for span in spans:
        if not _claims_model_call(span):
            continue
        events = {e.name for e in span.events} | by_span.get((span.trace_id, span.span_id), set())
        for rule in RULES:
            if not _has(rule, span, events):
                fix = f"; {rule.fix}" if rule.fix else ""
                problems.append(
                    f"span {span.name!r} ({span.scope or 'no scope'}) lacks "
                    f"{' or '.join(rule.any_of)}: {rule.why}{fix}"
                )
    return problems
