"""The real Codex CLI (pinned in tests/clients) with an HTTP MCP server: ``otel-replay
record --mcp weather=URL -- codex exec …`` gives Codex the server as
``-c mcp_servers.weather.url=…`` (its own config.toml untouched); Codex connects through
the gateway, and a strict replay with the server and the model upstream stopped answers
its MCP requests from the cassette."""

from __future__ import annotations

import json
from pathlib import Path

from codex_runs import CONFIG, make_home, make_project, otel_replay
from mcp_weather import serving

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub


def test_codex_reaches_the_mcp_server_through_the_gateway_and_replays_without_it(
    tmp_path: Path,
) -> None:
    home, project = make_home(tmp_path / "home"), make_project(tmp_path / "project")
    cassette, traces = tmp_path / "codex.json", tmp_path / "replayed.jsonl"
    with serving() as url, run_stub() as stub:
        args = ["record", "--cassette", str(cassette), "--upstream-openai", stub.openai_url]
        rec = otel_replay([*args, "--mcp", f"weather={url}"], project, home, "say hi", "sk-test")
    assert rec.code == 0, rec.stderr
    assert (home / "config.toml").read_text() == CONFIG  # given on its command line only
    methods = [ex.operation for ex in load(cassette).tools]
    assert methods[:2] == ["initialize", "tools/list"]
    rep = otel_replay(
        ["replay", "--cassette", str(cassette), "--mode", "strict", "--traces", str(traces)],
        project,
        home,
        "say hi",
    )
    assert rep.code == 0, rep.stderr
    assert rep.stdout == rec.stdout
    # Codex's WebSocket warm-up and its one turn
    calls = len(load(cassette).interactions)
    assert calls == 2
    assert f"otel-replay: {calls} replayed · 0 live · 0 misses" in rep.stderr
    replayed = [
        span["name"]
        for line in traces.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        if any(a["key"] == "mcp.method.name" for a in span["attributes"])
    ]
    assert replayed[:2] == ["initialize", "tools/list"]
