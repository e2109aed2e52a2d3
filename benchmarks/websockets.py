"""19. WebSockets: a replayed turn of the Responses API's WebSocket mode against a bare
WebSocket server sending the same frames.

A gateway recording against the stub upstream (each in a process of its own) records
``TURNS`` turns of one connection, in two workloads: ``response.create`` frames with
distinct prompts, and a conversation the agent keeps itself, each turn sending it whole
(its last answer and a new prompt added, as an agent that stores nothing does). Each turn
is answered by the stream of events the Responses API sends (a message of some 60 words,
about 45 frames). Each round, a fresh gateway replays the cassette strictly and a bare
aiohttp WebSocket server (``benchmarks._server`` ``ws``) sends the recorded frames of the
same turns, the client taking one turn from each in turn over its own connection to it:
the figure is the median time from a ``response.create`` sent to the answer's last frame
received. *Goal*: the gateway adds ≤ 1 ms a turn over the bare server (met in 3 of 5
rounds).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks._common import Results, Server, ms, sized
from otel_replay.cassette.model import load

BENCH = "19 websockets"
TURNS = sized(60, 4)
ROUNDS = sized(5, 1)
PROMPT = "Summarise the state of the build in a short paragraph, turn {n}. " + "Please. " * 20
CLOSING = ("response.completed", "response.failed", "response.incomplete", "error")


class _Agent:
    """One connection's turns; ``whole``: its conversation is sent whole each turn."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, whole: bool) -> None:
        self.ws = ws
        self.history: list[dict[str, Any]] | None = [] if whole else None

    def _create(self, n: int) -> str:
        prompt = PROMPT.format(n=n)
        if self.history is None:
            return json.dumps({"type": "response.create", "model": "gpt-5.5", "input": prompt})
        self.history.append({"role": "user", "content": prompt})
        create = {"type": "response.create", "model": "gpt-5.5", "store": False}
        return json.dumps({**create, "input": self.history})

    async def turn(self, n: int) -> float:
        """One turn: its time from the frame sent to the last frame of its answer."""
        started = time.perf_counter()
        await self.ws.send_str(self._create(n))
        async for message in self.ws:
            data = message.data
            if message.type == aiohttp.WSMsgType.TEXT and any(c in data[:64] for c in CLOSING):
                took = time.perf_counter() - started
                if self.history is not None:
                    self.history.append({"role": "assistant", "content": _output_text(data)})
                return took
        raise RuntimeError("the WebSocket closed before the answer ended")


def _output_text(completed: str) -> str:
    """The text of a ``response.completed`` frame's answer."""
    output = json.loads(completed)["response"]["output"]
    return "".join(part["text"] for item in output for part in item.get("content", []))


async def _record(cassette: Path, whole: bool) -> None:
    with Server(kind="stub") as stub:
        with Server(kind="gateway", mode="record", cassette=cassette, upstream=stub.url) as gw:
            async with aiohttp.ClientSession() as client:
                async with client.ws_connect(f"{gw.url}/v1/responses") as ws:
                    agent = _Agent(ws, whole)
                    for n in range(TURNS):
                        await agent.turn(n)


def _cpu(server: Server) -> float:
    """The CPU seconds ``server``'s process has used (user and system), 0 where the
    platform does not tell."""
    assert server.proc is not None
    try:
        fields = Path(f"/proc/{server.proc.pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _round(cassette: Path, frames: Path, whole: bool) -> tuple[float, float, float]:
    """The median turn replayed by a fresh gateway, and by the bare server; the
    gateway's CPU time per turn."""
    times: dict[str, list[float]] = {"gateway": [], "bare": []}
    with (
        Server(kind="gateway", mode="strict", cassette=cassette) as gateway,
        Server(kind="ws", frames=frames) as bare,
    ):
        async with aiohttp.ClientSession() as client:
            replay = _Agent(await client.ws_connect(f"{gateway.url}/v1/responses"), whole)
            plain = _Agent(await client.ws_connect(f"{bare.url}/v1/responses"), whole)
            began = _cpu(gateway)
            for n in range(TURNS):
                times["gateway"].append(await replay.turn(n))
                times["bare"].append(await plain.turn(n))
            cpu = (_cpu(gateway) - began) / TURNS
            await replay.ws.close()
            await plain.ws.close()
    return statistics.median(times["gateway"]), statistics.median(times["bare"]), cpu


async def _workload(results: Results, folder: Path, whole: bool) -> float:
    """Records and replays one workload, adding its row; the gateway's median CPU time
    per turn."""
    cassette, frames = folder / f"ws-{whole}.json", folder / f"frames-{whole}.json"
    await _record(cassette, whole)
    recorded = load(cassette).interactions
    assert len(recorded) == TURNS, f"recorded {len(recorded)} of {TURNS} turns"
    turns = [[e.data for e in ex.response.events or []] for ex in recorded]
    frames.write_text(json.dumps(turns))
    rounds = [await _round(cassette, frames, whole) for _ in range(ROUNDS)]
    gateway = statistics.median(g for g, _, _ in rounds)
    bare = statistics.median(b for _, b, _ in rounds)
    added = [g - b for g, b, _ in rounds]
    what = (
        f"a replayed turn of a conversation sent whole ({TURNS} turns) over the Responses"
        " API WebSocket, strict"
        if whole
        else f"a replayed Responses API WebSocket turn ({len(turns[0])} frames), strict"
    )
    results.add(
        BENCH,
        what,
        ms(gateway),
        ms(bare),
        gateway / bare if bare > 0 else None,
        "adds <= 1 ms",
        rounds=[a <= 0.001 for a in added],
        basis="a bare aiohttp WebSocket server sending the same frames",
    )
    return statistics.median(c for _, _, c in rounds)


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        single, whole = [await _workload(results, Path(tmp), w) for w in (False, True)]
    # CPU time, which the machine's load moves far less than the times above
    results.add(
        BENCH,
        "reference: the replaying gateway's CPU time per turn, a conversation sent whole"
        " vs distinct prompts (a turn costs what it adds)",
        ms(whole),
        ms(single),
        whole / single if single > 0 else None,
        "reference",
        basis="distinct prompts",
    )
