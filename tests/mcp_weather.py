"""A real MCP server (the official SDK's ``MCPServer``) for the tests: ``weather``, with a
tool, a prompt and a resource. Over Streamable HTTP on a free loopback port
(:func:`serving`, uvicorn on a thread), or over stdio (``python mcp_weather.py``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")
calls: list[tuple[str, int]] = []  # what the tool was asked, in this process


@server.tool()
def get_forecast(city: str, days: int = 1) -> str:
    """The weather forecast for a city."""
    calls.append((city, days))
    return f"sunny in {city} for {days} day{'s' if days != 1 else ''} (call {len(calls)})"


plain = MCPServer("weather")
"""The same tool declaring no output schema: its result is its text alone. A trace keeps
a tool's text, not the structured content a declared schema asks a client to check."""
plain.tool(name="get_forecast", structured_output=False)(get_forecast)


@server.prompt()
def packing(city: str) -> str:
    """What to pack for a city."""
    return f"Pack for {city}."


@server.resource("weather://cities")
def cities() -> str:
    """The cities with forecasts."""
    return "Paris, Lisbon"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    *, stateless: bool = False, json_response: bool = False, structured: bool = True
) -> Iterator[str]:
    """The server over Streamable HTTP until the block ends; yields its URL. The tool
    counts its calls from the start of the block."""
    import uvicorn

    calls.clear()
    chosen = server if structured else plain
    app = chosen.streamable_http_app(stateless_http=stateless, json_response=json_response)
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, name="mcp-weather", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the MCP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        runner.should_exit = True
        thread.join(20)


if __name__ == "__main__":
    server.run("stdio")
