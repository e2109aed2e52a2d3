"""Agents whose own tools reach a system the replay must not need: each asks the model
about an order, the model calls ``lookup_order``, the tool reads the order from the
orders database (SQLite, read-only: deleting the file takes the system away) or from the
orders service (HTTP: stopping it does), and the model answers from the result.

Each agent is a script run as a user runs it: ``python AGENT.py ORDERS QUESTION``, where
ORDERS is the database file or the service's URL. Every time the tool's body runs it
appends a line to ``ran.txt`` beside the script, so a test can tell that a replay never
ran it. The environment variable ``ORDER_PREFIX`` is put before the order id the model
asked for (a changed tool call, for the miss).
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ORDER = {"status": "shipped", "total": 42.5}
ORDER_ID = "A-17"

LOOKUP = """
import json, os, sys, urllib.request, sqlite3
from pathlib import Path

ORDERS = sys.argv[1]


def fetch_order(order_id):
    with open(Path(__file__).with_name("ran.txt"), "a") as ran:
        ran.write(order_id + "\\n")
    order_id = os.environ.get("ORDER_PREFIX", "") + order_id
    if ORDERS.startswith("http"):
        with urllib.request.urlopen(f"{ORDERS}/orders/{order_id}", timeout=5) as answer:
            return json.loads(answer.read())
    with sqlite3.connect(f"file:{ORDERS}?mode=ro", uri=True) as db:
        row = db.execute("select status, total from orders where id = ?", (order_id,)).fetchone()
    if row is None:
        raise KeyError(f"no order {order_id}")
    return {"status": row[0], "total": row[1]}
"""

DECORATED = LOOKUP + textwrap.dedent(
    """
    import openai
    import otel_replay


    @otel_replay.tool
    def lookup_order(order_id: str) -> dict:
        return fetch_order(order_id)


    TOOLS = [{"type": "function", "function": {
        "name": "lookup_order", "description": "An order's status and total",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]}}}]
    client = openai.OpenAI(api_key="sk-test", max_retries=0)
    messages = [{"role": "user", "content": sys.argv[2]}]
    while True:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        ).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            print(reply.content)
            break
        for call in reply.tool_calls:
            result = lookup_order(**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    """
)

PYDANTIC_AI = LOOKUP + textwrap.dedent(
    """
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = openai.OpenAI(api_key="sk-test", max_retries=0)
    model = OpenAIChatModel(
        "gpt-4o-mini", provider=OpenAIProvider(openai_client=openai.AsyncOpenAI(max_retries=0))
    )
    agent = Agent(model, system_prompt="You answer questions about orders.")


    @agent.tool_plain
    def lookup_order(order_id: str) -> dict:
        \"\"\"An order's status and total\"\"\"
        return fetch_order(order_id)


    print(agent.run_sync(sys.argv[2]).output)
    """
)

OPENAI_AGENTS = LOOKUP + textwrap.dedent(
    """
    from agents import (
        Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_trace_processors,
    )
    import openai

    set_trace_processors([])  # the SDK's own would send traces to OpenAI


    @function_tool
    def lookup_order(order_id: str) -> str:
        \"\"\"An order's status and total\"\"\"
        return json.dumps(fetch_order(order_id))


    client = openai.AsyncOpenAI(max_retries=0)
    agent = Agent(
        name="orders",
        instructions="You answer questions about orders.",
        tools=[lookup_order],
        model=OpenAIChatCompletionsModel("gpt-4o-mini", openai_client=client),
    )
    print(Runner.run_sync(agent, sys.argv[2]).final_output)
    """
)

LANGCHAIN = LOOKUP + textwrap.dedent(
    """
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI


    @tool
    def lookup_order(order_id: str) -> str:
        \"\"\"An order's status and total\"\"\"
        return json.dumps(fetch_order(order_id))


    model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools([lookup_order])
    messages = [SystemMessage("You answer questions about orders."), HumanMessage(sys.argv[2])]
    while True:
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            print(reply.content)
            break
        for call in reply.tool_calls:
            messages.append(lookup_order.invoke(call))
    """
)

LLAMA_INDEX = LOOKUP + textwrap.dedent(
    """
    import asyncio

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI


    def lookup_order(order_id: str) -> str:
        \"\"\"An order's status and total\"\"\"
        return json.dumps(fetch_order(order_id))


    async def main():
        llm = OpenAI(model="gpt-4o-mini", max_retries=0, temperature=0.2)
        agent = FunctionAgent(
            tools=[FunctionTool.from_defaults(lookup_order)], llm=llm,
            system_prompt="You answer questions about orders.",
        )
        print(str(await agent.run(user_msg=sys.argv[2])))


    asyncio.run(main())
    """
)
"""Run by LlamaIndex's own venv's Python (``make frameworks``: its OpenAI LLM takes
``openai<3``)."""

AGENTS = {
    "decorator": DECORATED,
    "pydantic-ai": PYDANTIC_AI,
    "openai-agents": OPENAI_AGENTS,
    "langchain": LANGCHAIN,
}


def orders_database(path: Path) -> Path:
    """The orders database, holding order ``ORDER_ID``."""
    with sqlite3.connect(path) as db:
        db.execute("create table orders (id text primary key, status text, total real)")
        db.execute("insert into orders values (?, ?, ?)", (ORDER_ID, *ORDER.values()))
    return path


class _Orders(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path == f"/orders/{ORDER_ID}"
        body = json.dumps(ORDER if found else {"error": "no such order"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def orders_service() -> Iterator[str]:
    """The orders service on a free loopback port, stopped at the end: its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Orders)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
