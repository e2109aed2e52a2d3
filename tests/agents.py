"""Small agents on the official SDKs, used by the gateway, replay and CLI tests.

Each agent puts a fresh UUID and the current time into its system prompt, so replay must
see through volatile values, and runs a real tool-calling loop.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import uuid
from typing import Any

import anthropic
import openai

from otel_replay.testing.demo_agent import WEATHER_TOOL

WEATHER = WEATHER_TOOL
WEATHER_ANTHROPIC = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "input_schema": WEATHER["function"]["parameters"],
}


def system_prompt(extra: str = "") -> str:
    now = dt.datetime.now(dt.UTC).isoformat()
    return f"You are a travel helper.{extra} Session {uuid.uuid4()} started {now}."


def tool(city: str) -> str:
    return f"sunny in {city}"


def openai_agent(
    client: openai.OpenAI,
    city: str = "Lisbon",
    *,
    stream: bool = False,
    model: str = "gpt-4o-mini",
    system_extra: str = "",
    tools: list[dict[str, Any]] | None = None,
) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(system_extra)},
        {"role": "user", "content": city},
    ]
    for _ in range(4):
        kwargs: dict[str, Any] = {"model": model, "messages": messages, "tools": tools or [WEATHER]}
        if stream:
            final = _collect_openai_stream(
                client.chat.completions.create(
                    stream=True, stream_options={"include_usage": True}, **kwargs
                )
            )
        else:
            final = (
                client.chat.completions.create(**kwargs)
                .choices[0]
                .message.model_dump(exclude_none=True)
            )
        messages.append(final)
        calls = final.get("tool_calls") or []
        if not calls:
            return str(final.get("content"))
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": tool(args["city"])}
            )
    return "gave up"


def _collect_openai_stream(stream: Any) -> dict[str, Any]:
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                content.append(delta.content)
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(
                    tc.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if tc.id:
                    slot["id"] = tc.id
                if tc.function and tc.function.name:
                    slot["function"]["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    slot["function"]["arguments"] += tc.function.arguments
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def anthropic_agent(
    client: anthropic.Anthropic,
    city: str = "Lisbon",
    *,
    stream: bool = False,
    model: str = "claude-haiku-4-5",
    system_extra: str = "",
) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": city}]
    system = system_prompt(system_extra)
    for _ in range(4):
        kwargs: dict[str, Any] = {
            "model": model,
            "max_tokens": 256,
            "system": system,
            "messages": messages,
            "tools": [WEATHER_ANTHROPIC],
        }
        if stream:
            with client.messages.stream(**kwargs) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        content = [block.model_dump(exclude_none=True) for block in message.content]
        for block in content:
            block.pop("parsed_output", None)
            block.pop("citations", None)
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        if not uses:
            return "".join(b.get("text", "") for b in content)
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": b["id"],
                        "content": tool(b["input"]["city"]),
                    }
                    for b in uses
                ],
            }
        )
    return "gave up"


def main() -> int:
    """``python tests/agents.py openai|anthropic [stream] [CITY]`` — for CLI tests."""
    which = sys.argv[1]
    stream = "stream" in sys.argv[2:]
    rest = [a for a in sys.argv[2:] if a != "stream"]
    city = rest[0] if rest else "Lisbon"
    if which == "openai":
        print(openai_agent(openai.OpenAI(max_retries=0), city, stream=stream))
    else:
        print(anthropic_agent(anthropic.Anthropic(max_retries=0), city, stream=stream))
    return 0


if __name__ == "__main__":
    sys.exit(main())
