"""The litellm agent of the conformance suite: ``litellm.completion`` with a tool, its
OpenTelemetry callback on (``callbacks=["otel"]``, exporting through the process's
tracer provider), run in ``framework_worker.py``: litellm's callbacks are process-wide.
The worker's environment has ``LITELLM_LOCAL_MODEL_COST_MAP`` set, so that litellm reads
its bundled model prices instead of downloading them when imported."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import litellm
from framework_agents import MODEL, QUESTIONS, SYSTEM, Outcome, Traced, weather
from litellm.litellm_core_utils.thread_pool_executor import executor
from opentelemetry import trace
from third_party_agents import OPENAI_TOOLS


def instrumentors(variant: str) -> list[Callable[[], Any]]:
    del variant
    return []


def agent(variant: str) -> Callable[[str, Traced | None], Outcome]:
    del variant
    return run


def run(base_url: str, telemetry: Traced | None) -> Outcome:
    if telemetry is not None:
        trace.set_tracer_provider(telemetry.tracer_provider)  # what the callback exports to
        litellm.callbacks = ["otel"]
    else:
        litellm.callbacks = []
    outcome = Outcome()
    for turn, question in enumerate(QUESTIONS):
        messages: list[Any] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ]
        while True:
            reply = _ask(base_url, messages, stream=bool(turn))
            messages.append(reply)
            if not reply.get("tool_calls"):
                break
            for call in reply["tool_calls"]:
                args = json.loads(call["function"]["arguments"])
                result = weather(outcome, args["city"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        outcome.answers.append(reply["content"])
    _logged()
    litellm.callbacks = []
    return outcome


def _logged(timeout: float = 30.0) -> None:
    """Wait until litellm's logging threads have run every callback (they export the
    spans after the call has returned)."""
    deadline = time.monotonic() + timeout
    slots = executor._pending_slots  # no public way to wait for the backlog
    while slots._value < executor._max_pending_tasks and time.monotonic() < deadline:
        time.sleep(0.01)


def _ask(base_url: str, messages: list[Any], *, stream: bool) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": f"openai/{MODEL}",
        "messages": messages,
        "tools": OPENAI_TOOLS,
        "api_base": base_url,
        "api_key": "sk-test",
    }
    if not stream:
        message = litellm.completion(**kwargs).choices[0].message
    else:
        chunks = list(litellm.completion(**kwargs, stream=True))
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
