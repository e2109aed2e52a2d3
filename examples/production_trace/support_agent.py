"""A customer-support agent as it runs in production: the OpenAI SDK, a tool, and no
knowledge of otel-replay. In production it is traced by OpenInference's OpenAI
instrumentation and its spans reach an OpenTelemetry Collector (see make_trace.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import openai

MODEL = "gpt-4o-mini"
SYSTEM = "You are a support agent for an online shop. Look orders up before answering."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "The status of an order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def lookup_order(order_id: str) -> str:
    found = re.search(r"[A-Z]-\d+", order_id)
    return f"order {found.group(0) if found else order_id} shipped yesterday"


def run(question: str = "Where is order A-1042?") -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question},
    ]
    with openai.OpenAI(max_retries=0) as client:
        for _ in range(4):
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                result = lookup_order(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "gave up"
