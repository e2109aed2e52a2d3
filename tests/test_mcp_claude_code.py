"""The real Claude Code CLI (pinned in tests/clients) with an HTTP MCP server:
``otel-replay record --mcp weather=URL -- claude -p …`` hands Claude Code the server in
``--mcp-config``; a strict replay with the server and the model upstream stopped gives
the same output, the tool's answer included. The stub model calls the MCP tool when the
prompt says so (``stub:call mcp__weather__get_forecast {…}``); Claude Code is told to
offer MCP tools directly rather than through its tool search, which the stub cannot do."""

from __future__ import annotations

from pathlib import Path

from claude_code_runs import otel_replay
from mcp_weather import serving

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

PROMPT = 'stub:call mcp__weather__get_forecast {"city": "Paris"}'
ALLOWED = ("--allowedTools", "mcp__weather__get_forecast")
DIRECT = {"ENABLE_TOOL_SEARCH": "false"}


def test_claude_code_with_an_http_mcp_server_replays_with_the_server_stopped(
    tmp_path: Path,
) -> None:
    folder, home, cassette = tmp_path / "proj", tmp_path / "home", tmp_path / "weather.json"
    with serving() as url, run_stub() as stub:
        args = ["record", "--cassette", str(cassette), "--upstream-anthropic", stub.url]
        rec = otel_replay(
            [*args, "--mcp", f"weather={url}"], folder, home, "-p", PROMPT, *ALLOWED, **DIRECT
        )
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout.strip() == 'stub reply to: {"result":"sunny in Paris for 1 day (call 1)"}'
    assert "0 replayed · 2 live · 0 misses · 1 tool call live ·" in rec.stderr
    calls = [ex for ex in load(cassette).tools if ex.operation == "tools/call"]
    assert [c.request.params["arguments"] for c in calls] == [{"city": "Paris"}]
    # the server is gone: the replay is served at /mcp/weather from the cassette alone
    gone = "weather=http://127.0.0.1:9/mcp"
    rep = otel_replay(
        ["replay", "--cassette", str(cassette), "--mode", "strict", "--mcp", gone],
        folder,
        home,
        "-p",
        PROMPT,
        *ALLOWED,
        **DIRECT,
    )
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == rec.stdout
    assert "otel-replay: 2 replayed · 0 live · 0 misses · 1 tool call replayed ·" in rep.stderr
