"""An incident with the agent's own tools: a pydantic-ai agent whose tool reads the orders
database runs once as production would (its own instrumentation, content captured, spans
exported to a file); ``otel-replay build --emit-test`` turns the trace into a cassette and
a test; with the database deleted and the provider gone, the emitted test passes — the
tool's calls are answered from the trace's ``execute_tool`` spans, its body never runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tool_agents import ORDER, ORDER_ID, orders_database

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay"]
TESTS = Path(__file__).resolve().parent
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"

AGENT = textwrap.dedent(
    '''
    """The orders agent: pydantic-ai, a tool reading the orders database."""
    import asyncio
    import sqlite3
    from pathlib import Path

    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    HERE = Path(__file__).resolve().parent


    def answer(question: str) -> str:
        client = openai.AsyncOpenAI(max_retries=0)
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, system_prompt="You answer questions about orders.")
        agent.instrument = InstrumentationSettings(include_content=True)  # the global provider

        @agent.tool_plain
        def lookup_order(order_id: str) -> dict:
            """An order's status and total"""
            with open(HERE / "ran.txt", "a") as ran:
                ran.write(order_id + "\\n")
            orders = HERE / "orders.db"
            with sqlite3.connect(f"file:{orders}?mode=ro", uri=True) as db:
                row = db.execute(
                    "select status, total from orders where id = ?", (order_id,)
                ).fetchone()
            return {"status": row[0], "total": row[1]}

        async def run() -> str:
            async with client:
                return (await agent.run(question)).output

        return asyncio.run(run())
    '''
)

PRODUCTION = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from opentelemetry import trace
    from third_party_agents import traced

    import orders_agent

    with traced(Path("."), []) as out:
        trace.set_tracer_provider(out.tracer_provider)
        print(orders_agent.answer(sys.argv[1]))
    """
)


def _env(project: Path, **extra: str) -> dict[str, str]:
    paths = [str(project), str(TESTS), os.environ.get("PYTHONPATH", "")]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    return {**clean, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **extra}


def _answered(text: str) -> bool:
    return json.loads(text.strip().removeprefix("stub reply to: ")) == ORDER


def test_an_incident_replays_without_the_systems_its_tool_reached(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "orders_agent.py").write_text(AGENT)
    (project / "production.py").write_text(PRODUCTION)
    (project / "pytest.ini").write_text(INI)
    database = orders_database(project / "orders.db")
    with run_stub() as stub:
        env = _env(project, OPENAI_BASE_URL=stub.openai_url, OPENAI_API_KEY="sk-prod-0000")
        run = [sys.executable, "production.py", ORDER_ID]
        done = subprocess.run(run, cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _answered(done.stdout)
    ran = project / "ran.txt"
    assert ran.read_text().splitlines() == [ORDER_ID]

    entry = ["--emit-test", "tests/test_incident.py", "--entry", "orders_agent:answer"]
    command = [*CLI, "build", "traces.jsonl", "-o", "tests/cassettes/incident.json", *entry]
    built = subprocess.run(command, cwd=project, env=_env(project), capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    cassette = load(project / "tests" / "cassettes" / "incident.json")
    assert cassette.source["tools"] == "recorded"
    assert [ex.request.model for ex in cassette.tools] == ["lookup_order"]

    database.unlink()  # the incident replays without the database, and without the provider
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["tests/test_incident.py"]
    green = subprocess.run(
        command, cwd=project, env=_env(project), capture_output=True, text=True, timeout=300
    )
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 passed" in green.stdout
    assert "2 replayed · 0 live · 0 misses · 1 tool call replayed" in green.stdout, green.stdout
    assert ran.read_text().splitlines() == [ORDER_ID]  # the tool never ran again
