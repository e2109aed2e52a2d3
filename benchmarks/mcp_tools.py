"""15. Tool calls over MCP: what a replayed tool call adds over calling the server.

A real MCP server (the official SDK's ``MCPServer``, Streamable HTTP, stateless with JSON
answers, as the 2026 revision's clients speak it) answers ``tools/call`` requests for
distinct cities. The calls are recorded once through the gateway (``--mcp``), then sent
again, sequentially, to the server directly and to the gateway replaying strictly, turn by
turn (each call to both before the next). The added time per call is the difference of
the medians; the goal is at most 1 ms. Recording is measured the same way: the gateway
relaying to the server, against the server alone.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks._common import Results, Server, client_session, ms, sized
from otel_replay.cassette.model import dump, load

CALLS = sized(300, 5)
ROUNDS = sized(5, 1)
PATH = "/mcp"
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "get_forecast",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def bodies() -> list[bytes]:
    """The calls, as the official client sends them (compact JSON, ``_meta`` included)."""
    calls = []
    for n in range(CALLS):
        params = {"name": "get_forecast", "arguments": {"city": f"city-{n}"}, "_meta": META}
        message = {"jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": params}
        calls.append(json.dumps(message, separators=(",", ":")).encode())
    return calls


async def _turns(urls: list[str], calls: list[bytes]) -> list[list[float]]:
    """Each call to every url in turn; the latencies of each url's calls."""
    latencies: list[list[float]] = [[] for _ in urls]
    async with client_session() as session:
        for data in calls:
            for i, url in enumerate(urls):
                started = time.perf_counter()
                async with session.post(url, data=data, headers=HEADERS) as answer:
                    payload = await answer.read()
                latencies[i].append(time.perf_counter() - started)
                if answer.status != 200 or b'"result"' not in payload:
                    raise RuntimeError(f"{url}: HTTP {answer.status}: {payload[:300]!r}")
    return latencies


def _added(ours: list[list[float]], direct: list[list[float]]) -> tuple[float, float, float]:
    """Median per-call latency of each side and the time added per call (medians over
    the rounds of the per-round medians)."""
    mine = statistics.median(statistics.median(r) for r in ours)
    theirs = statistics.median(statistics.median(r) for r in direct)
    added = statistics.median(
        statistics.median(o) - statistics.median(d) for o, d in zip(ours, direct, strict=True)
    )
    return mine, theirs, added


async def run(results: Results) -> None:
    calls = bodies()
    with tempfile.TemporaryDirectory() as tmp, Server(kind="mcp") as server:
        folder = Path(tmp)
        direct = server.url + PATH
        cassette = folder / "tools.json"
        weather = {"weather": direct}
        with Server(kind="gateway", mode="record", cassette=cassette, mcp=weather) as gateway:
            await _turns([f"{gateway.url}/mcp/weather"], calls)
        once = load(cassette)
        twice = folder / "twice.json"  # a warm-up pass, then the measure
        dump(replace(once, tools=once.tools * 2), twice)
        replayed, alone, recorded, alone_too = [], [], [], []
        for r in range(ROUNDS):
            with Server(kind="gateway", mode="strict", cassette=twice) as gateway:
                url = f"{gateway.url}/mcp/weather"
                await _turns([direct, url], calls)
                d, g = await _turns([direct, url], calls)
                alone.append(d)
                replayed.append(g)
            if gateway.final.get("summary", {}).get("misses"):
                raise RuntimeError(f"MCP benchmark missed in round {r}")
            again = folder / f"again{r}.json"
            with Server(kind="gateway", mode="record", cassette=again, mcp=weather) as gateway:
                url = f"{gateway.url}/mcp/weather"
                await _turns([direct, url], calls[: len(calls) // 4])  # warm-up
                d, g = await _turns([direct, url], calls)
                alone_too.append(d)
                recorded.append(g)
    mine, theirs, added = _added(replayed, alone)
    results.add(
        "15 MCP tools",
        f"{len(calls)} sequential tool calls replayed (strict): per call / added",
        f"{ms(mine)} / {'+' if added >= 0 else '−'}{ms(abs(added))}",
        f"the MCP server directly {ms(theirs)}",
        mine / theirs,
        "added <= 1 ms",
        added <= 0.001,
    )
    mine, theirs, added = _added(recorded, alone_too)
    results.add(
        "15 MCP tools",
        f"{len(calls)} sequential tool calls recorded (relayed to the server): per call / added",
        f"{ms(mine)} / +{ms(added)}",
        f"the MCP server directly {ms(theirs)}",
        mine / theirs,
        "",
        None,
    )
