"""19. WebSockets: a replayed turn of the Responses API's WebSocket mode against a bare
WebSocket server sending the same frames.

A gateway recording against the stub upstream (each in a process of its own) records
``TURNS`` turns of one connection: ``response.create`` frames with distinct prompts, each
answered by the stream of events the Responses API sends (a message of some 60 words,
about 70 frames). Each round, a fresh gateway replays the cassette strictly and a bare
aiohttp WebSocket server (``benchmarks._server`` ``ws``) sends the recorded frames of the
same turns, the client taking one turn from each in turn over its own connection to it:
the figure is the median time from a ``response.create`` sent to the answer's last frame
received. *Goal*: the gateway adds ≤ 1 ms a turn over the bare server (met in 3 of 5
rounds).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from benchmarks._common import Results, Server, ms, sized
from otel_replay.cassette.model import load

BENCH = "19 websockets"
TURNS = sized(60, 4)
ROUNDS = sized(5, 1)
PROMPT = "Summarise the state of the build in a short paragraph, turn {n}. " + "Please. " * 20
CLOSING = ("response.completed", "response.failed", "response.incomplete", "error")


def _create(n: int) -> str:
    return json.dumps({"type": "response.create", "model": "gpt-5.5", "input": PROMPT.format(n=n)})


async def _turn(ws: aiohttp.ClientWebSocketResponse, n: int) -> float:
    """One turn: its time from the frame sent to the last frame of its answer."""
    started = time.perf_counter()
    await ws.send_str(_create(n))
    async for message in ws:
        data = message.data
        if message.type == aiohttp.WSMsgType.TEXT and any(c in data[:64] for c in CLOSING):
            return time.perf_counter() - started
    raise RuntimeError("the WebSocket closed before the answer ended")


async def _record(cassette: Path) -> None:
    with Server(kind="stub") as stub:
        with Server(kind="gateway", mode="record", cassette=cassette, upstream=stub.url) as gw:
            async with aiohttp.ClientSession() as client:
                async with client.ws_connect(f"{gw.url}/v1/responses") as ws:
                    for n in range(TURNS):
                        await _turn(ws, n)


async def _round(cassette: Path, frames: Path) -> tuple[float, float]:
    """The median turn replayed by a fresh gateway, and by the bare server."""
    times: dict[str, list[float]] = {"gateway": [], "bare": []}
    with (
        Server(kind="gateway", mode="strict", cassette=cassette) as gateway,
        Server(kind="ws", frames=frames) as bare,
    ):
        async with aiohttp.ClientSession() as client:
            replay = await client.ws_connect(f"{gateway.url}/v1/responses")
            plain = await client.ws_connect(f"{bare.url}/v1/responses")
            for n in range(TURNS):
                times["gateway"].append(await _turn(replay, n))
                times["bare"].append(await _turn(plain, n))
            await replay.close()
            await plain.close()
    return statistics.median(times["gateway"]), statistics.median(times["bare"])


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cassette, frames = folder / "ws.json", folder / "frames.json"
        await _record(cassette)
        recorded = load(cassette).interactions
        assert len(recorded) == TURNS, f"recorded {len(recorded)} of {TURNS} turns"
        turns = [[e.data for e in ex.response.events or []] for ex in recorded]
        frames.write_text(json.dumps(turns))
        rounds = [await _round(cassette, frames) for _ in range(ROUNDS)]
    gateway = statistics.median(g for g, _ in rounds)
    bare = statistics.median(b for _, b in rounds)
    added = [g - b for g, b in rounds]
    results.add(
        BENCH,
        f"a replayed Responses API WebSocket turn ({len(turns[0])} frames), strict",
        ms(gateway),
        ms(bare),
        gateway / bare if bare > 0 else None,
        "adds <= 1 ms",
        rounds=[a <= 0.001 for a in added],
        basis="a bare aiohttp WebSocket server sending the same frames",
    )
