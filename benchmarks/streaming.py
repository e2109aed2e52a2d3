"""2. Streaming: time to first event and total time for a 200-event SSE response.

Record: the gateway in record mode passing the stub upstream's stream through, against the
same client reading the stub directly, and a bare aiohttp proxy streaming the stub's
answer through (a reference: what any proxy built on aiohttp adds), and a TCP relay
passing the bytes through unread (a reference: what the extra hop alone costs on this
machine, the floor under any proxy). Replay: the gateway
replaying that recording (strict), against a bare aiohttp handler writing the same SSE
bytes. Every server runs in a subprocess of its own; the client reads chunks as they
arrive, sending to the servers compared in slices of ten requests taking turns, in five
rounds. Record's goal is against its floor: the time it adds to the first event against
what the bare proxy adds in the same round.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from benchmarks._common import (
    CHAT,
    Results,
    Server,
    chat_body,
    client_session,
    compact,
    ms,
    sized,
    write_cassette,
)
from otel_replay.cassette.model import load
from otel_replay.streams import sse

EVENTS = 200
REQUESTS = sized(60, 10)
ROUNDS = sized(5, 1)  # the goals are judged in each round: met in 3 of 5
SLICE = 10  # requests each server takes in turn
# The stub streams one event per word of "stub reply to: <question>" plus the role chunk,
# the finish chunk and [DONE].
QUESTION_WORDS = EVENTS - 6


async def _one(session: aiohttp.ClientSession, url: str, data: bytes) -> tuple[float, float, int]:
    started = time.perf_counter()
    first = 0.0
    seen = 0
    async with session.post(url, data=data, headers={"content-type": "application/json"}) as r:
        async for chunk in r.content.iter_any():
            if not first and b"data:" in chunk:
                first = time.perf_counter() - started
            seen += chunk.count(b"\n\n")
    return first, time.perf_counter() - started, seen


async def _series(urls: list[str], bodies: list[bytes]) -> tuple[list[tuple[float, float]], int]:
    """Median time to first event and total time over ``bodies`` for each of ``urls``,
    taking turns in slices so that each samples the same stretch of this machine's time."""
    firsts: dict[str, list[float]] = {url: [] for url in urls}
    totals: dict[str, list[float]] = {url: [] for url in urls}
    events = 0
    async with client_session() as session:
        for start in range(0, len(bodies), SLICE):
            for url in urls:
                for data in bodies[start : start + SLICE]:
                    first, total, events = await _one(session, url + CHAT, data)
                    firsts[url].append(first)
                    totals[url].append(total)
    medians = [(statistics.median(firsts[url]), statistics.median(totals[url])) for url in urls]
    return medians, events


def _ratio(ours: float, baseline: float) -> float | None:
    """Two added times' ratio, None when the noise made either come out below zero."""
    return ours / baseline if ours > 0 and baseline > 0 else None


async def run(results: Results) -> None:
    bodies = [compact(chat_body(i, words=QUESTION_WORDS, stream=True)) for i in range(REQUESTS)]
    warm = bodies[:20]
    rec: dict[str, list[float]] = {k: [] for k in ("stub1", "stubT", "gw1", "gwT", "px1", "rl1")}
    rep: dict[str, list[float]] = {k: [] for k in ("bare1", "bareT", "gw1", "gwT")}
    with tempfile.TemporaryDirectory() as tmp:
        cassette = Path(tmp) / "stream.json"
        with (
            Server(kind="stub") as stub,
            Server(kind="proxy", upstream=stub.url) as proxy,
            Server(kind="relay", upstream=stub.url) as relay,
        ):
            with Server(
                kind="gateway", mode="record", cassette=cassette, upstream=stub.url
            ) as gateway:
                sides = [stub.url, gateway.url, proxy.url, relay.url]
                await _series(sides[::-1], warm)
                for _ in range(ROUNDS):
                    ((s1, sT), (g1, gT), (p1, _), (r1, _)), events = await _series(sides, bodies)
                    rec["stub1"].append(s1)
                    rec["stubT"].append(sT)
                    rec["gw1"].append(g1)
                    rec["gwT"].append(gT)
                    rec["px1"].append(p1)
                    rec["rl1"].append(r1)
        recorded = load(cassette).interactions
        stream_file = Path(tmp) / "stream.sse"
        events_list = recorded[0].response.events or []
        stream_file.write_bytes(b"".join(sse.encode(e) for e in events_list))
        n_replays = (ROUNDS * len(bodies) + len(warm)) // len(recorded) + 1
        replay_cassette = write_cassette(Path(tmp) / "replay.json", recorded * n_replays)
        with (
            Server(kind="bare", stream=stream_file) as bare,
            Server(kind="gateway", mode="strict", cassette=replay_cassette) as gateway,
        ):
            await _series([gateway.url, bare.url], warm)
            for _ in range(ROUNDS):
                ((b1, bT), (g1, gT)), _ = await _series([bare.url, gateway.url], bodies)
                rep["bare1"].append(b1)
                rep["bareT"].append(bT)
                rep["gw1"].append(g1)
                rep["gwT"].append(gT)
    med = statistics.median
    results.notes.append(
        f"2 streaming: {events} SSE events per response ({len(events_list)} recorded)."
    )
    # record's goal is against its floor: what a bare aiohttp proxy adds in the same round
    # (any Python proxy pays it), the stub read directly being the time without either
    added = [g - s for g, s in zip(rec["gw1"], rec["stub1"], strict=True)]
    floor = [p - s for p, s in zip(rec["px1"], rec["stub1"], strict=True)]
    results.add(
        "2 streaming",
        "record: added time to first event, gateway vs a bare aiohttp proxy (each - stub)",
        ms(med(added)),
        ms(med(floor)),
        _ratio(med(added), med(floor)),
        "<= 1.5x the proxy's",
        rounds=[0 < f and a <= 1.5 * f for a, f in zip(added, floor, strict=True)],
        basis="a bare aiohttp proxy's",
    )
    results.add(
        "2 streaming",
        "reference: record's time to first event, gateway vs stub direct",
        ms(med(rec["gw1"])),
        ms(med(rec["stub1"])),
        med(rec["gw1"]) / med(rec["stub1"]),
        "reference",
        basis="stub direct",
    )
    hop = med(rec["rl1"]) - med(rec["stub1"])
    results.add(
        "2 streaming",
        "reference: a TCP byte relay's added time to first event (relay - stub), any proxy's floor",
        ms(hop),
        ms(med(added)),
        _ratio(hop, med(added)),
        "reference",
        basis="the gateway's added",
    )
    results.add(
        "2 streaming",
        "record: total time for the stream",
        ms(med(rec["gwT"])),
        ms(med(rec["stubT"])),
        med(rec["gwT"]) / med(rec["stubT"]),
        basis="stub direct",
    )
    results.add(
        "2 streaming",
        "replay: time to first event, gateway vs bare",
        ms(med(rep["gw1"])),
        ms(med(rep["bare1"])),
        med(rep["gw1"]) / med(rep["bare1"]),
        "added < 1 ms",
        rounds=[g - b < 0.001 for g, b in zip(rep["gw1"], rep["bare1"], strict=True)],
        basis="bare handler",
    )
    results.add(
        "2 streaming",
        "replay: total time for the stream",
        ms(med(rep["gwT"])),
        ms(med(rep["bareT"])),
        med(rep["gwT"]) / med(rep["bareT"]),
        basis="bare handler",
    )
