"""A four-call tool loop on the official ``openai`` or ``anthropic`` SDK, for the fork
tests: the model calls the weather tool (call 1), answers from its result (call 2), then
the user asks twice more (calls 3 and 4). Prints each call's answer text, one a line.

``python fork_agent.py openai|anthropic [--stream] [--city CITY]``; ``run`` in-process.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from otel_replay.testing.demo_agent import WEATHER_TOOL

OPENAI_MODEL = "gpt-4o"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a travel helper. Use the weather tool, then answer in one sentence."
FOLLOW_UPS = ("And tomorrow?", "Should I pack an umbrella?")
TOOL: dict[str, Any] = WEATHER_TOOL["function"]


def weather(city: str) -> str:
    return f"sunny in {city}"


def run(api: str, *, stream: bool = False, city: str = "Lisbon") -> list[str]:
    """The loop's answers, one per model call."""
    return _openai(stream, city) if api == "openai" else _anthropic(stream, city)


def _openai(stream: bool, city: str) -> list[str]:
    import openai

    tools: Any = [{"type": "function", "function": TOOL}]
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": city}]
    answers: list[str] = []
    follow_ups = list(FOLLOW_UPS)
    with openai.OpenAI(max_retries=0) as client:
        while len(answers) < 4:
            if stream:
                with client.chat.completions.stream(
                    model=OPENAI_MODEL, messages=messages, tools=tools
                ) as events:
                    message: Any = events.get_final_completion().choices[0].message
            else:
                reply = client.chat.completions.create(
                    model=OPENAI_MODEL, messages=messages, tools=tools
                )
                message = reply.choices[0].message
            calls = message.tool_calls or []
            messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
            answers.append(message.content or f"tool {calls[0].function.name}")
            for call in calls:
                result = weather(json.loads(call.function.arguments)["city"])
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            if not calls and follow_ups:
                messages.append({"role": "user", "content": follow_ups.pop(0)})
    return answers


def _anthropic(stream: bool, city: str) -> list[str]:
    import anthropic

    tools: Any = [
        {
            "name": TOOL["name"],
            "description": TOOL["description"],
            "input_schema": TOOL["parameters"],
        }
    ]
    messages: list[Any] = [{"role": "user", "content": city}]
    answers: list[str] = []
    follow_ups = list(FOLLOW_UPS)
    with anthropic.Anthropic(max_retries=0) as client:
        while len(answers) < 4:
            asked: dict[str, Any] = {
                "model": ANTHROPIC_MODEL,
                "max_tokens": 256,
                "system": SYSTEM,
                "messages": messages,
                "tools": tools,
            }
            if stream:
                with client.messages.stream(**asked) as events:
                    message: Any = events.get_final_message()
            else:
                message = client.messages.create(**asked)
            content = [block.model_dump(exclude_none=True) for block in message.content]
            messages.append({"role": "assistant", "content": content})
            uses = [block for block in message.content if block.type == "tool_use"]
            texts = [block.text for block in message.content if block.type == "text"]
            answers.append(" ".join(texts) or f"tool {uses[0].name}")
            if uses:
                results = [
                    {
                        "type": "tool_result",
                        "tool_use_id": use.id,
                        "content": weather(use.input["city"]),
                    }
                    for use in uses
                ]
                messages.append({"role": "user", "content": results})
            elif follow_ups:
                messages.append({"role": "user", "content": follow_ups.pop(0)})
    return answers


if __name__ == "__main__":
    args = sys.argv[1:]
    city = args[args.index("--city") + 1] if "--city" in args else "Lisbon"
    for answer in run(args[0], stream="--stream" in args, city=city):
        print(answer)
