"""Tools over MCP: an agent (the official ``openai`` SDK + the official ``mcp`` client)
recorded against a real MCP server over Streamable HTTP through the gateway, then replayed
strictly with the server and the model upstream both stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import mcp_weather
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_weather import serving
from schema_check import validate_cassette_file
from test_cassette import cassettes, exchanges, fast

from otel_replay.cassette.model import Cassette, dumps, load, loads
from otel_replay.cassette.v1 import V1
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.core.ids import short_hash
from otel_replay.gateway.agents import agent_command
from otel_replay.matching.mcp import ToolMatcher
from otel_replay.matching.rulefile import RuleFileError, parse_rules, to_toml
from otel_replay.matching.rules import LiveRule, Scope
from otel_replay.providers import mcp as wire
from otel_replay.testing.stub import run_stub

AGENT = [sys.executable, str(Path(__file__).parent / "mcp_agent.py")]
CLI = [sys.executable, "-m", "otel_replay"]
KEY = {"OPENAI_API_KEY": "sk-test-1234567890"}


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@dataclass
class Recorded:
    cassette: Path
    traces: Path
    stdout: str
    stderr: str
    client: str


# the 2026 revision (stateless: discovery, JSON answers) and the 2025 one (initialize,
# a session id, SSE answers, a GET stream, DELETE), each against the server's own form
REVISIONS = {"auto": {"stateless": True, "json_response": True}, "legacy": {}}


@pytest.fixture(scope="module", params=sorted(REVISIONS))
def recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Recorded]:
    client = request.param
    folder = tmp_path_factory.mktemp(f"mcp-{client}")
    cassette, traces = folder / "weather.json", folder / "traces.jsonl"
    with serving(**REVISIONS[client]) as url, run_stub() as stub:
        rec = run(
            [
                "record",
                "--cassette",
                str(cassette),
                "--traces",
                str(traces),
                "--upstream-openai",
                stub.openai_url,
                "--mcp",
                f"weather={url}",
                "--",
                *AGENT,
                "Paris",
            ],
            {**KEY, "AGENT_MCP_MODE": client},
        )
    assert rec.returncode == 0, rec.stderr
    yield Recorded(cassette, traces, rec.stdout, rec.stderr, client)


def test_record_passes_tool_calls_through_and_counts_them(recorded: Recorded) -> None:
    assert recorded.stdout.splitlines() == [
        "tools: get_forecast",
        "tool get_forecast: sunny in Paris for 1 day (call 1)",
        "model: stub reply to: sunny in Paris for 1 day (call 1)",
    ]
    assert "0 replayed · 2 live · 0 misses · 1 tool call live ·" in recorded.stderr
    validate_cassette_file(recorded.cassette)  # outside the test's tmp_path: checked here
    cassette = load(recorded.cassette)
    assert len(cassette.interactions) == 2  # the model calls, apart from the tool calls
    methods = [ex.operation for ex in cassette.tools]
    first = "server/discover" if recorded.client == "auto" else "initialize"
    assert methods == [first, "tools/list", "tools/call"]
    call = cassette.tools[-1]
    assert call.request.endpoint == "/mcp/weather"
    assert call.request.model == "get_forecast"
    assert call.request.params == {
        "method": "tools/call",
        "name": "get_forecast",
        "arguments": {"city": "Paris"},
    }
    if recorded.client == "legacy":  # the session id the server issued is not kept
        assert cassette.tools[0].response.headers["mcp-session-id"] == "issued"
        assert cassette.tools[0].response.events is not None


def test_strict_replay_with_server_and_upstream_stopped_gives_the_same_result(
    recorded: Recorded,
) -> None:
    rep = run(
        ["replay", "--cassette", str(recorded.cassette), "--mode", "strict", "--", *AGENT, "Paris"],
        {"AGENT_MCP_MODE": recorded.client},
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == recorded.stdout  # the tool's answer included
    assert "otel-replay: 2 replayed · 0 live · 0 misses · 1 tool call replayed ·" in rep.stderr


def test_report_and_diff_show_the_tool_calls_replayed_or_live(
    recorded: Recorded, tmp_path: Path
) -> None:
    replayed = tmp_path / "replayed.jsonl"
    rep = run(
        [
            *("replay", "--cassette", str(recorded.cassette), "--mode", "strict"),
            *("--traces", str(replayed), "--", *AGENT, "Paris"),
        ],
        {"AGENT_MCP_MODE": recorded.client},
    )
    assert rep.returncode == 0, rep.stderr
    same = run(["diff", str(recorded.traces), str(replayed)])
    assert same.returncode == 0, same.stdout  # the same trajectory, tool call included
    report = tmp_path / "run.md"
    assert run(["report", str(replayed), "-o", str(report)]).returncode == 0
    assert '| tool get_forecast [replayed] {"city":"Paris"} |' in report.read_text()
    assert run(["report", str(recorded.traces), "-o", str(report)]).returncode == 0
    assert '| tool get_forecast [live] {"city":"Paris"} |' in report.read_text()


def test_the_recorded_trace_builds_the_same_tool_calls(recorded: Recorded, tmp_path: Path) -> None:
    built = tmp_path / "built.json"
    done = run(["build", str(recorded.traces), "-o", str(built), "--quiet"])
    assert done.returncode == 0, done.stderr
    assert "1 tool call · 1 with arguments and result captured" in done.stderr
    original = load(recorded.cassette).tools
    again = load(built).tools
    assert [t.request for t in again] == [t.request for t in original]
    rep = run(
        ["replay", "--cassette", str(built), "--mode", "strict", "--", *AGENT, "Paris"],
        {"AGENT_MCP_MODE": recorded.client},
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == recorded.stdout


def test_changed_tool_arguments_miss_naming_the_tool(recorded: Recorded) -> None:
    rep = run(
        ["replay", "--cassette", str(recorded.cassette), "--mode", "strict", "--", *AGENT, "Paris"],
        {"AGENT_MCP_MODE": recorded.client, "AGENT_EXTRA_ARGS": '{"days": 3}'},
    )
    assert rep.returncode == 1
    old = short_hash(json.dumps({"arguments": {"city": "Paris"}}, separators=(",", ":")))
    new = short_hash(json.dumps({"arguments": {"city": "Paris", "days": 3}}, separators=(",", ":")))
    message = f"replay miss: tool arguments changed for weather.get_forecast (hash {old}→{new})"
    assert f"tool error: {message}" in rep.stdout  # the client shows the JSON-RPC error
    assert f"otel-replay: {message}" in rep.stderr
    assert "1 replayed · 0 live · 1 miss ·" in rep.stderr
    misses = json.loads(recorded.cassette.with_name("weather.misses.json").read_text())
    assert misses["misses"][0]["component"] == "arguments"
    why = run(["why", "--cassette", str(recorded.cassette)])
    assert why.returncode == 0, why.stderr
    assert why.stdout.splitlines()[0] == message
    assert 'this call:  {"arguments":{"city":"Paris","days":3}}' in why.stdout
    suggest = run(["why", "--cassette", str(recorded.cassette), "--suggest"])
    assert suggest.returncode == 1 and suggest.stdout == ""


def test_tool_calls_are_spans_by_the_mcp_conventions(recorded: Recorded) -> None:
    spans = [
        span
        for line in recorded.traces.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    tools = [s for s in spans if s["name"] == "tools/call get_forecast"]
    assert len(tools) == 1
    attrs = {a["key"]: next(iter(a["value"].values())) for a in tools[0]["attributes"]}
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "get_forecast"
    assert attrs["jsonrpc.request.id"]
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    result = json.loads(attrs["gen_ai.tool.call.result"])
    assert result["content"][0]["text"] == "sunny in Paris for 1 day (call 1)"
    assert "otel_replay.format_version" not in attrs  # never read back as a model call


def test_serve_summary_counts_tool_calls(recorded: Recorded) -> None:
    with subprocess.Popen(
        [*CLI, "serve", "--cassette", str(recorded.cassette), "--mode", "strict"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as serve:
        assert serve.stdin is not None and serve.stdout is not None
        env = json.loads(serve.stdout.readline())["env"]
        assert env["OTEL_REPLAY_MCP_WEATHER_URL"].endswith("/mcp/weather")
        agent = subprocess.run(
            [*AGENT, "Paris"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env, "AGENT_MCP_MODE": recorded.client},
        )
        serve.stdin.close()
        summary = json.loads(serve.stdout.readline())["summary"]
    assert agent.returncode == 0, agent.stderr
    assert agent.stdout == recorded.stdout
    assert summary["tools"] == {"replayed": 1, "live": 0, "misses": 0}


def test_a_live_rule_sends_the_tool_to_the_real_server_even_in_strict_replay(
    recorded: Recorded, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[live]]\nserver = "weather"\ntool = "get_*"\n')
    before = recorded.cassette.read_text()
    with serving(**REVISIONS[recorded.client]) as url:
        rep = run(
            [
                "replay",
                "--cassette",
                str(recorded.cassette),
                "--mode",
                "strict",
                "--rules",
                str(rules),
                "--mcp",
                f"weather={url}",
                "--",
                *AGENT,
                "Paris",
            ],
            {"AGENT_MCP_MODE": recorded.client},
        )
        assert mcp_weather.calls == [("Paris", 1)]  # the real server answered
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == recorded.stdout
    assert "otel-replay: 2 replayed · 0 live · 0 misses · 1 tool call live ·" in rep.stderr
    assert recorded.cassette.read_text() == before  # a call always live is never kept


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ('server = "weather"\nmodel = "x"', "model does not go with server and tool"),
        ('tool = ""', "tool must be a non-empty string"),
        ('server = "weather"\nkind = "x"', "unknown key 'kind'"),
    ],
)
def test_a_bad_tool_live_rule_is_a_one_line_error(entry: str, error: str) -> None:
    with pytest.raises(RuleFileError, match=error) as caught:
        parse_rules(f"[[live]]\n{entry}\n", "rules.toml")
    assert str(caught.value).startswith("rules.toml:")
    assert "\n" not in str(caught.value)


def test_tool_live_rules_scope_tool_calls_only() -> None:
    rules, _ = parse_rules('[[live]]\nserver = "weather"\n', "rules.toml")
    (rule,) = rules.rules
    assert isinstance(rule, LiveRule) and rule.for_tools
    assert rule.scope == Scope(provider="mcp", endpoint="/mcp/weather")
    written = to_toml(rules.rules)
    assert written == '[[live]]\nserver = "weather"\n'  # as the user wrote it
    again, _ = parse_rules(written, "again.toml")
    assert again.rules == rules.rules


# --- stdio servers ------------------------------------------------------------------------

SERVER = [sys.executable, str(Path(__file__).parent / "mcp_weather.py")]
BRIDGE = ["--stdio", *CLI, "mcp-stdio", "weather", "--"]


@pytest.mark.parametrize("client", sorted(REVISIONS))
def test_stdio_server_recorded_through_mcp_stdio_then_replayed_without_it(
    client: str, tmp_path: Path
) -> None:
    cassette = tmp_path / "stdio.json"
    with run_stub() as stub:
        rec = run(
            [
                "record",
                "--cassette",
                str(cassette),
                "--upstream-openai",
                stub.openai_url,
                "--",
                *AGENT,
                "Lisbon",
                *BRIDGE,
                *SERVER,
            ],
            {**KEY, "AGENT_MCP_MODE": client},
        )
    assert rec.returncode == 0, rec.stderr
    assert "tool get_forecast: sunny in Lisbon for 1 day (call 1)" in rec.stdout
    assert "0 replayed · 2 live · 0 misses · 1 tool call live ·" in rec.stderr
    tools = load(cassette).tools
    assert [ex.request.endpoint for ex in tools] == ["/mcp/weather"] * 3
    assert tools[-1].request.params["arguments"] == {"city": "Lisbon"}
    # the server's command now fails at once: a replay never starts it
    failing = [sys.executable, "-c", "raise SystemExit(9)"]
    rep = run(
        [
            "replay",
            "--cassette",
            str(cassette),
            "--mode",
            "strict",
            "--",
            *AGENT,
            "Lisbon",
            *BRIDGE,
            *failing,
        ],
        {"AGENT_MCP_MODE": client},
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "2 replayed · 0 live · 0 misses · 1 tool call replayed ·" in rep.stderr


def test_mcp_stdio_outside_a_gateway_runs_the_server_itself() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_REPLAY_")}
    echo = [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"]
    done = subprocess.run(
        [*CLI, "mcp-stdio", "weather", "--", *echo],
        input="ping\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "PING"


# --- the pure parts ---------------------------------------------------------------------


def _call(server: str, method: str, params: dict[str, object], rid: int = 1) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


FORECAST = {"name": "get_forecast", "arguments": {"city": "Paris"}}
ROWS = [  # one request per row, each differing from the recorded call in one component
    ("weather", "tools/call", FORECAST, None),
    ("ticket", "tools/call", FORECAST, "server"),
    ("weather", "prompts/get", {"name": "get_forecast"}, "method"),
    ("weather", "tools/call", {**FORECAST, "name": "get_alerts"}, "tool"),
    ("weather", "tools/call", {**FORECAST, "arguments": {"city": "Lyon"}}, "arguments"),
]


@pytest.mark.parametrize(("server", "method", "params", "component"), ROWS)
def test_a_miss_names_the_component_that_differs(
    server: str, method: str, params: dict[str, object], component: str | None
) -> None:
    recorded = wire.canonical("weather", _call("weather", "tools/call", FORECAST))
    matcher = ToolMatcher([recorded])
    meta = {
        **params,
        "_meta": {"progressToken": 7, "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"},
    }
    request = wire.canonical(server, _call(server, method, meta, rid=99))
    if component is None:
        assert matcher.match(request) == 0  # ids and _meta are volatile
        return
    with pytest.raises(Exception) as caught:
        matcher.match(request)
    assert getattr(caught.value, "component", None) == component


def test_identical_calls_are_consumed_in_order_and_listings_repeat() -> None:
    call = wire.canonical("weather", _call("weather", "tools/call", FORECAST))
    listing = wire.canonical("weather", _call("weather", "tools/list", {}))
    matcher = ToolMatcher([listing, call, call])
    assert [matcher.match(call), matcher.match(call)] == [1, 2]
    with pytest.raises(Exception, match=r"more calls of tool weather\.get_forecast than the 2"):
        matcher.match(call)
    assert [matcher.match(listing), matcher.match(listing)] == [0, 0]


def test_cassette_keeps_tool_calls_after_the_model_calls() -> None:
    request = wire.canonical("weather", _call("weather", "tools/call", FORECAST))
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    tool = Exchange("mcp", "tools/call", request, Response(200, body=answer))
    model = Exchange("openai", "chat", CanonicalRequest("/v1/chat/completions"), Response(200))
    text = dumps(Cassette(interactions=[model], source={}, tools=[tool]))
    assert [item["provider"] for item in json.loads(text)["interactions"]] == ["openai", "mcp"]
    again = loads(text)
    assert again.interactions == [model]
    assert again.tools == [tool]
    assert loads(dumps(again)) == again


def test_coding_agents_get_the_servers_on_their_command_line() -> None:
    env = {"OTEL_REPLAY_MCP_WEATHER_URL": "http://127.0.0.1:5/mcp/weather"}
    claude = agent_command(["claude", "-p", "hi"], env)
    assert claude[:3] == ["claude", "-p", "hi"]
    assert claude[3] == "--mcp-config"
    config = json.loads(claude[4])
    assert config == {
        "mcpServers": {"weather": {"type": "http", "url": "http://127.0.0.1:5/mcp/weather"}}
    }
    codex = agent_command(["codex", "exec", "hi"], env)
    assert codex == [
        "codex",
        "-c",
        'mcp_servers.weather.url="http://127.0.0.1:5/mcp/weather"',
        "exec",
        "hi",
    ]
    assert wire.env_name("my-server.v2") == "OTEL_REPLAY_MCP_MY_SERVER_V2_URL"


def test_the_python_api_records_and_replays_tool_calls(tmp_path: Path) -> None:
    import otel_replay

    cassette = tmp_path / "api.json"
    with serving() as url, run_stub() as stub:
        with otel_replay.record(cassette, upstream_openai=stub.openai_url, mcp={"weather": url}):
            assert os.environ["OTEL_REPLAY_MCP_WEATHER_URL"].endswith("/mcp/weather")
            rec = subprocess.run(
                [*AGENT, "Lisbon"], capture_output=True, text=True, timeout=60, env=os.environ | KEY
            )
    assert rec.returncode == 0, rec.stderr
    with otel_replay.replay(cassette, mode="strict") as handle:
        rep = subprocess.run([*AGENT, "Lisbon"], capture_output=True, text=True, timeout=60)
    assert rep.stdout == rec.stdout
    assert handle.summary is not None and handle.summary.tools_replayed == 1
    with pytest.raises(otel_replay.ConfigError, match="mcp: expected NAME=URL"):
        with otel_replay.replay(cassette, mode="strict", mcp={"bad name": "http://x"}):
            pass


PLUGIN_TEST = """
import os, subprocess, sys

AGENT = {agent!r}


def test_forecast(otel_replay):
    with otel_replay("weather") as run:
        assert os.environ["OTEL_REPLAY_MCP_WEATHER_URL"].endswith("/mcp/weather")
        done = subprocess.run([*AGENT, "Porto"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "tool get_forecast: sunny in Porto for 1 day (call 1)" in done.stdout
"""


def test_the_pytest_plugin_records_and_replays_tool_calls(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_agent=PLUGIN_TEST.format(agent=AGENT))
    monkeypatch.setenv("OPENAI_API_KEY", KEY["OPENAI_API_KEY"])  # the recording's
    with serving() as url, run_stub() as stub:
        recorded = pytester.runpytest_inprocess(
            "-p",
            "no:hypothesispytest",
            "--otel-replay=record",
            f"--otel-replay-upstream-openai={stub.openai_url}",
            f"--otel-replay-mcp=weather={url}",
        )
    recorded.assert_outcomes(passed=1)
    tools = load(pytester.path / "cassettes" / "weather.json").tools
    assert [t.operation for t in tools][-1] == "tools/call"
    monkeypatch.delenv("OPENAI_API_KEY")  # the replay needs none, nor the server
    replayed = pytester.runpytest_inprocess("-p", "no:hypothesispytest", "--otel-replay=strict")
    replayed.assert_outcomes(passed=1)


def test_the_mount_answers_what_is_not_a_recorded_request(recorded: Recorded) -> None:
    import httpx

    import otel_replay

    headers = {"accept": "application/json, text/event-stream"}
    miss = "replay miss: no call to the MCP server tickets was recorded"
    with (
        pytest.raises(otel_replay.ReplayMiss, match=miss),  # the block ends failing strict
        otel_replay.replay(recorded.cassette, mode="strict") as handle,
        httpx.Client(headers=headers) as client,
    ):
        url = handle.env["OTEL_REPLAY_MCP_WEATHER_URL"]
        bad = client.post(url, content=b"{not json")
        deep = client.post(url, content=b"[" * 100_000)
        note = client.post(url, json={"jsonrpc": "2.0", "method": "notifications/x"})
        batch = client.post(url, json=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        stream = client.get(url)
        end = client.delete(url)
        stray = client.post(url, json={"jsonrpc": "2.0"}, headers={"host": "evil.example"})
        other = client.post(
            url.replace("/weather", "/tickets"),
            json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
        )
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, -32700)
    assert (deep.status_code, deep.json()["error"]["code"]) == (400, -32700)
    assert (note.status_code, note.content) == (202, b"")
    assert (batch.status_code, batch.json()["error"]["code"]) == (400, -32600)
    assert stream.status_code == 405
    assert end.status_code == 200
    assert stray.status_code == 403
    assert other.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32603,
            "message": miss,
        },
    }


@fast
@given(cassettes, st.lists(exchanges.map(lambda ex: replace(ex, provider="mcp")), max_size=3))
def test_a_cassette_with_tool_calls_round_trips_in_every_version(
    c: Cassette, tools: list[Exchange]
) -> None:
    c.tools = tools
    text = dumps(c)
    assert loads(text) == c
    assert dumps(loads(text)) == text
    assert loads(V1.encode(c)) == c  # version 1 keeps them among its interactions too


def test_recording_a_server_nobody_named_is_refused_not_a_miss(tmp_path: Path) -> None:
    import httpx

    import otel_replay

    with otel_replay.record(tmp_path / "c.json") as handle, httpx.Client() as client:
        answer = client.post(
            handle.url + "/mcp/weather", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
    assert answer.status_code == 404
    assert (
        "no MCP server weather was given (--mcp weather=URL)" in answer.json()["error"]["message"]
    )
    assert handle.summary is not None and handle.summary.misses == []
