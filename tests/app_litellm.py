"""The litellm agent of the conformance suite: ``litellm.completion`` with a tool, its
OpenTelemetry callback on (``callbacks=["otel"]``, exporting through the process's
tracer provider), run in ``framework_worker.py``: litellm's callbacks are process-wide.
Variant ``otel`` makes its first turn's calls plainly and its second turn's streamed;
variant ``forms`` makes its calls in each of litellm's forms in turn: plain, awaited
(``acompletion``), streamed, and streamed and awaited.
The worker's environment has ``LITELLM_LOCAL_MODEL_COST_MAP`` set, so that litellm reads
its bundled model prices instead of downloading them when imported."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import litellm
from framework_agents import MODEL, QUESTIONS, SYSTEM, Outcome, Traced, weather
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from third_party_agents import OPENAI_TOOLS


def instrumentors(variant: str) -> list[Callable[[], Any]]:
    del variant
    return []


FORMS = ("plain", "awaited", "streamed", "streamed-awaited")
"""litellm's call forms: ``completion`` and ``acompletion``, each with and without
``stream=True``."""


_LOOP = asyncio.new_event_loop()
"""The awaited calls' event loop, kept running between them as an async agent's is:
litellm logs an awaited call in a task on it."""


def agent(variant: str) -> Callable[[str, Traced | None], Outcome]:
    if variant == "forms":
        return lambda base_url, telemetry: run(base_url, telemetry, every_form=True)
    return run


class _Ended(SpanProcessor):
    """Counts the spans of model calls that have ended (litellm ends them on its logging
    threads, after the call has returned)."""

    def __init__(self) -> None:
        self.count = 0

    def on_end(self, span: ReadableSpan) -> None:
        if span.name == "litellm_request":
            self.count += 1


def run(base_url: str, telemetry: Traced | None, *, every_form: bool = False) -> Outcome:
    ended = _Ended()
    if telemetry is not None:
        telemetry.tracer_provider.add_span_processor(ended)
        trace.set_tracer_provider(telemetry.tracer_provider)  # what the callback exports to
        litellm.callbacks = ["otel"]
    else:
        litellm.callbacks = []
    outcome = Outcome()
    calls = 0
    for turn, question in enumerate(QUESTIONS):
        messages: list[Any] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ]
        while True:
            form = FORMS[calls % len(FORMS)] if every_form else FORMS[2 * bool(turn)]
            reply = _ask(base_url, messages, form)
            calls += 1
            messages.append(reply)
            if not reply.get("tool_calls"):
                break
            for call in reply["tool_calls"]:
                args = json.loads(call["function"]["arguments"])
                result = weather(outcome, args["city"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        outcome.answers.append(reply["content"])
    deadline = time.monotonic() + 30
    while telemetry is not None and ended.count < calls and time.monotonic() < deadline:
        _LOOP.run_until_complete(asyncio.sleep(0.01))
    litellm.callbacks = []
    return outcome


def _ask(base_url: str, messages: list[Any], form: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": f"openai/{MODEL}",
        "messages": messages,
        "tools": OPENAI_TOOLS,
        "api_base": base_url,
        "api_key": "sk-test",
    }
    if form == "plain":
        message = litellm.completion(**kwargs).choices[0].message
    elif form == "awaited":
        message = _LOOP.run_until_complete(litellm.acompletion(**kwargs)).choices[0].message
    elif form == "streamed":
        chunks = list(litellm.completion(**kwargs, stream=True))
        message = litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message
    else:
        chunks = _LOOP.run_until_complete(_streamed(kwargs))
        message = litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in message.tool_calls or []
    ]
    reply: dict[str, Any] = {"role": "assistant", "content": message.content}
    if calls:
        reply["tool_calls"] = calls
    return reply


async def _streamed(kwargs: dict[str, Any]) -> list[Any]:
    """An awaited streamed call's chunks."""
    return [chunk async for chunk in await litellm.acompletion(**kwargs, stream=True)]
