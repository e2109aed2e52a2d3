"""The agent's own tools, recorded and replayed as users run them: a script on pydantic-ai,
openai-agents, LangChain or a hand-written loop with ``@otel_replay.tool``, under
``otel-replay record`` with the orders database (or service) up and the stub upstream
standing in for the provider, then ``otel-replay replay`` in strict mode with both gone:
same output, the tool's body never ran, the summary counts the tool call replayed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from framework_agents import framework_python
from tool_agents import AGENTS, LLAMA_INDEX, ORDER, ORDER_ID, orders_database, orders_service

from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.codec import iter_spans, traces_from_json
from otel_replay.testing.stub import run_stub

CLI = [sys.executable, "-m", "otel_replay.frontends.cli"]
PREFIX = "stub reply to: "
KEY = {"OPENAI_API_KEY": "sk-test"}  # what the agent's SDK reads; the stub takes any


@dataclass
class Ran:
    code: int
    out: str
    err: str
    tool_ran: int

    @property
    def answered(self) -> bool:
        """Whether the agent printed the model's answer about the order (each framework
        writes the tool's result to the model in its own spacing)."""
        text = self.out.removeprefix(PREFIX)
        return text != self.out and json.loads(text) == ORDER


def _run(
    folder: Path,
    verb: str,
    orders: str,
    *options: str,
    env: dict[str, str] | None = None,
    python: Path | None = None,
) -> Ran:
    script = folder / "agent.py"
    ran = folder / "ran.txt"
    before = len(ran.read_text().splitlines()) if ran.exists() else 0
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    environ.update(NO_PROXY="127.0.0.1,localhost", **(env or {}))
    here = Path(__file__).resolve().parent  # its helper modules shadow frameworks' names
    path = [p for p in sys.path if p and Path(p).resolve() != here]
    if python is None:  # another venv's Python has its own packages (otel-replay too)
        environ["PYTHONPATH"] = os.pathsep.join(path)
    command = [*CLI, verb, "--cassette", str(folder / "c.json"), *options]
    command += ["--", str(python or sys.executable), str(script), orders, ORDER_ID]
    done = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=180)
    after = len(ran.read_text().splitlines()) if ran.exists() else 0
    return Ran(done.returncode, done.stdout.strip(), done.stderr, after - before)


def _recorded(folder: Path, agent: str, orders: str) -> None:
    (folder / "agent.py").write_text(AGENTS[agent])
    with run_stub() as stub:
        done = _run(folder, "record", orders, "--upstream-openai", stub.openai_url, env=KEY)
    assert done.code == 0, done.err
    assert done.answered, done.err
    assert done.tool_ran == 1
    assert "1 tool call live" in done.err, done.err


@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_tool_replays_with_its_database_gone(tmp_path, agent):
    database = orders_database(tmp_path / "orders.db")
    _recorded(tmp_path, agent, str(database))
    cassette = json.loads((tmp_path / "c.json").read_text())
    assert cassette["source"]["tools"] == "recorded"
    database.unlink()  # the system the tool reached is gone, and so is the provider
    traces = tmp_path / "replayed.jsonl"
    done = _run(tmp_path, "replay", str(database), "--traces", str(traces), env={"CI": "true"})
    assert done.code == 0, done.err
    assert done.answered
    assert done.tool_ran == 0  # the tool's body never ran
    assert "2 replayed · 0 live · 0 misses · 1 tool call replayed" in done.err, done.err
    spans = [
        s
        for line in traces.read_text().splitlines()
        for _, _, s in iter_spans(traces_from_json(line))
    ]
    calls = [s for s in spans if s.name == "execute_tool lookup_order"]
    assert len(calls) == 1
    attrs = attributes_to_dict(calls[0].attributes)
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"order_id": ORDER_ID}
    assert attrs["otel_replay.replayed"] is True


@pytest.mark.parametrize("agent", ["pydantic-ai", "openai-agents"])
def test_a_tool_replays_with_its_service_stopped(tmp_path, agent):
    with orders_service() as url:
        _recorded(tmp_path, agent, url)
    done = _run(tmp_path, "replay", url, env={"CI": "true"})  # the service has stopped
    assert (done.code, done.answered, done.tool_ran) == (0, True, 0), done.err


def test_changed_arguments_miss_naming_the_tool(tmp_path):
    """The agent now sends the tool another order id than the model asked for (a change
    in a hand-written loop): the call misses, naming the tool, which does not run."""
    database = orders_database(tmp_path / "orders.db")
    (tmp_path / "agent.py").write_text(
        AGENTS["decorator"].replace(
            "result = lookup_order(**json.loads(call.function.arguments))",
            "asked = json.loads(call.function.arguments)\n"
            "        asked['order_id'] = os.environ.get('ASKED', '') + asked['order_id']\n"
            "        result = lookup_order(**asked)",
        )
    )
    with run_stub() as stub:
        url = stub.openai_url
        done = _run(tmp_path, "record", str(database), "--upstream-openai", url, env=KEY)
    assert done.code == 0, done.err
    missed = _run(tmp_path, "replay", str(database), env={"CI": "true", "ASKED": "x"})
    assert missed.code == 1
    assert missed.tool_ran == 0
    assert "replay miss: tool arguments changed for lookup_order (hash" in missed.err, missed.err


def test_tools_live_and_a_live_rule_run_the_tool(tmp_path):
    database = orders_database(tmp_path / "orders.db")
    _recorded(tmp_path, "decorator", str(database))
    live = _run(tmp_path, "replay", str(database), "--tools", "live", env={"CI": "true"})
    assert (live.code, live.answered, live.tool_ran) == (0, True, 1), live.err
    assert "tool call" not in live.err
    (tmp_path / "otel-replay.toml").write_text('[[live]]\ntool = "lookup_order"\n')
    ruled = _run(tmp_path, "replay", str(database), env={"CI": "true"})
    assert (ruled.code, ruled.answered, ruled.tool_ran) == (0, True, 1), ruled.err
    assert "1 tool call live" in ruled.err


def test_a_cassette_that_never_recorded_tools_runs_them_live_and_says_so_once(tmp_path):
    database = orders_database(tmp_path / "orders.db")
    _recorded(tmp_path, "decorator", str(database))
    path = tmp_path / "c.json"
    older = json.loads(path.read_text())
    del older["source"]["tools"]  # as written before tools were recorded
    older["interactions"] = [i for i in older["interactions"] if i["provider"] != "mcp"]
    path.write_text(json.dumps(older))
    done = _run(tmp_path, "replay", str(database), env={"CI": "true"})
    assert (done.code, done.answered, done.tool_ran) == (0, True, 1), done.err
    assert done.err.count("did not record the agent's own tools") == 1, done.err


IN_PROCESS = """
import json, sqlite3

import openai
import otel_replay

ORDERS = {orders!r}


@otel_replay.tool
def lookup_order(order_id: str) -> dict:
    with open({ran!r}, "a") as ran:
        ran.write(order_id + "\\n")
    with sqlite3.connect(f"file:{{ORDERS}}?mode=ro", uri=True) as db:
        row = db.execute("select status, total from orders where id = ?", (order_id,)).fetchone()
    return {{"status": row[0], "total": row[1]}}


TOOLS = [{{"type": "function", "function": {{
    "name": "lookup_order", "description": "An order's status and total",
    "parameters": {{"type": "object", "properties": {{"order_id": {{"type": "string"}}}}}}}}}}]


def test_orders(otel_replay):
    with otel_replay("orders"):
        client = openai.OpenAI(max_retries=0)
        messages = [{{"role": "user", "content": "A-17"}}]
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            ).choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                result = lookup_order(**json.loads(call.function.arguments))
                messages.append(
                    {{"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}}
                )
    assert json.loads(reply.content.removeprefix("stub reply to: ")) == {{
        "status": "shipped", "total": 42.5
    }}
"""


def test_a_pytest_block_records_and_replays_a_tool_in_process(pytester, monkeypatch):
    """The pytest plugin's block: the hooks ask the gateway in the test's own process."""
    database = orders_database(pytester.path / "orders.db")
    ran = pytester.path / "ran.txt"
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_orders=IN_PROCESS.format(orders=str(database), ran=str(ran)))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with run_stub() as stub:
        recorded = pytester.runpytest_inprocess(
            "-p",
            "no:hypothesispytest",
            "--otel-replay=record",
            f"--otel-replay-upstream-openai={stub.openai_url}",
        )
    recorded.assert_outcomes(passed=1)
    assert ran.read_text().splitlines() == [ORDER_ID]
    database.unlink()
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--otel-replay=strict")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*2 replayed · 0 live · 0 misses · 1 tool call replayed*"])
    assert ran.read_text().splitlines() == [ORDER_ID]  # not run again


def test_the_hooks_cost_a_child_that_imports_no_framework_next_to_nothing(tmp_path):
    """Every Python a run starts loads the hooks' ``sitecustomize``: it installs a finder
    and imports neither an adapter, nor the road to the gateway, nor an HTTP client; a
    ``sitecustomize`` of the user's own still runs after it."""
    from otel_replay.gateway.environment import SITE

    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['THEIRS'] = 'ran'\n")
    code = (
        "import os, sys; "
        "print(os.environ.get('THEIRS'), sorted(m for m in sys.modules if m.startswith("
        "('otel_replay.hooks.frameworks', 'otel_replay.hooks.road', 'http.client', "
        "'importlib.abc'))), 'otel_replay.hooks.install' in sys.modules)"
    )
    env = {**os.environ, "OTEL_REPLAY_URL": "http://127.0.0.1:9", "OTEL_REPLAY_MODE": "strict"}
    env["PYTHONPATH"] = os.pathsep.join([str(SITE), str(tmp_path)])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["ran", "[]", "True"], done.stderr


def test_a_gateway_that_cannot_be_reached_is_named(monkeypatch):
    """A child whose run's gateway is gone says so, rather than running the tool."""
    import socket

    from otel_replay.hooks.calls import call_tool
    from otel_replay.hooks.road import ToolRoadError

    with socket.socket() as taken:  # a free port nobody listens on
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
    monkeypatch.setenv("OTEL_REPLAY_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_REPLAY_MODE", "strict")
    ran = []
    with pytest.raises(ToolRoadError, match=f"cannot ask the gateway at http://127.0.0.1:{port}"):
        call_tool("lookup_order", {"order_id": ORDER_ID}, lambda: ran.append(1))
    assert ran == []


def test_a_llama_index_tool_replays_with_its_database_gone(tmp_path):
    """LlamaIndex's ``FunctionTool`` in its ``FunctionAgent``, in LlamaIndex's own venv."""
    python = framework_python("llamaindex")
    database = orders_database(tmp_path / "orders.db")
    (tmp_path / "agent.py").write_text(LLAMA_INDEX)
    with run_stub() as stub:
        url = stub.openai_url
        done = _run(
            tmp_path, "record", str(database), "--upstream-openai", url, env=KEY, python=python
        )
    assert (done.code, done.answered, done.tool_ran) == (0, True, 1), done.err
    database.unlink()
    replayed = _run(tmp_path, "replay", str(database), env={"CI": "true"}, python=python)
    assert (replayed.code, replayed.answered, replayed.tool_ran) == (0, True, 0), replayed.err
    assert "2 replayed · 0 live · 0 misses · 1 tool call replayed" in replayed.err
