"""An agent whose tools are behind MCP: the official ``openai`` SDK for the model and the
official ``mcp`` SDK's client for the tools.

``python mcp_agent.py PROMPT [--stdio CMD...]``: the server is the gateway's
(``OTEL_REPLAY_MCP_WEATHER_URL``), or the stdio command given. ``AGENT_MCP_MODE``: the
client's protocol negotiation (``auto``: the 2026 revision's discovery, falling back;
``legacy``: the 2025 session handshake). ``AGENT_EXTRA_ARGS`` (JSON) is added to every
tool call's arguments. Prints the tools, each tool's answer and the model's last words;
a tool error is printed and ends the run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from openai import AsyncOpenAI


async def main(prompt: str, stdio: list[str]) -> int:
    target: Any = os.environ.get("OTEL_REPLAY_MCP_WEATHER_URL")
    if stdio:
        target = StdioServerParameters(command=stdio[0], args=stdio[1:], env=dict(os.environ))
    extra = json.loads(os.environ.get("AGENT_EXTRA_ARGS", "{}"))
    async with Client(target, mode=os.environ.get("AGENT_MCP_MODE", "auto")) as tools:
        listed = (await tools.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in listed))
        functions: Any = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description or "",
                    "parameters": tool.input_schema,
                },
            }
            for tool in listed
        ]
        messages: list[Any] = [{"role": "user", "content": prompt}]
        async with AsyncOpenAI() as model:
            first = await model.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=functions
            )
            message = first.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls or []:
                arguments = {**json.loads(call.function.arguments), **extra}
                try:
                    result = await tools.call_tool(call.function.name, arguments)
                except MCPError as exc:
                    print(f"tool error: {exc}")
                    return 0  # strict replay itself fails the run
                text = "".join(getattr(block, "text", "") for block in result.content)
                print(f"tool {call.function.name}: {text}")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            last = await model.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=functions
            )
        print("model:", last.choices[0].message.content)
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    command = argv[argv.index("--stdio") + 1 :] if "--stdio" in argv else []
    sys.exit(asyncio.run(main(argv[0], command)))
