"""3. Record cost: the per-exchange cost the gateway adds in record mode over the
upstream's own time, at the 100th, 1,000th and 10,000th exchange.

The stub upstream and the gateway (record mode, its trace store on disk) each run in a
subprocess of their own. At each checkpoint a window of requests goes straight to the stub
and the same number through the gateway, in five slices taking turns, so both see the
same machine; the exchanges between checkpoints are sent 8 in flight to keep the run
short. The gateway's stop (deriving the cassette from 10,000 spans) is timed too.

A bare aiohttp proxy in front of the same stub takes its turn in every window too: what
any proxy built on aiohttp adds (a reference row), the floor under the gateway's cost.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import aiohttp

from benchmarks._common import (
    CHAT,
    Results,
    Server,
    chat_body,
    client_session,
    compact,
    drive,
    ms,
    sender,
    sized,
)

CHECKPOINTS = sized((100, 1_000, 10_000), (20, 40, 60))
WINDOW = sized(100, 20)
SLICES = 5  # each window is sent in slices, stub and gateway taking turns


async def _interleaved(
    session: aiohttp.ClientSession,
    stub: str,
    gateway: str,
    proxy: str,
    direct: list[bytes],
    recorded: list[bytes],
) -> tuple[list[float], list[float], list[float]]:
    """Latencies of ``direct`` sent to the stub and to the proxy, and ``recorded`` through
    the gateway, in slices taking turns: all sides sample the same stretch of time, so a
    moment of load on this machine weighs on them alike."""
    base: list[float] = []
    gw: list[float] = []
    bare: list[float] = []
    step = max(1, len(direct) // SLICES)
    for i in range(0, len(direct), step):
        part = direct[i : i + step]
        base += (await drive(sender(session, stub + CHAT, part), len(part))).latencies
        bare += (await drive(sender(session, proxy + CHAT, part), len(part))).latencies
        part = recorded[i : i + step]
        gw += (await drive(sender(session, gateway + CHAT, part), len(part))).latencies
    return base, gw, bare


async def run(results: Results) -> None:
    total = CHECKPOINTS[-1]
    bodies = [compact(chat_body(i)) for i in range(total)]
    direct = [compact(chat_body(total + i)) for i in range(WINDOW * len(CHECKPOINTS) * 2)]
    added: dict[int, tuple[float, float]] = {}
    floor: list[float] = []  # the proxy's added cost in each window
    with (
        tempfile.TemporaryDirectory() as tmp,
        Server(kind="stub") as stub,
        Server(kind="proxy", upstream=stub.url) as proxy,
    ):
        with Server(
            kind="gateway",
            mode="record",
            cassette=Path(tmp) / "rec.json",
            traces=Path(tmp) / "traces.jsonl",
            upstream=stub.url,
        ) as gateway:
            async with client_session() as session:
                sent, used = 0, 0
                for checkpoint in CHECKPOINTS:
                    start = checkpoint - WINDOW
                    if start > sent:
                        fill = bodies[sent:start]
                        await drive(sender(session, gateway.url + CHAT, fill), len(fill), 8)
                        sent = start
                    window = direct[used : used + WINDOW]
                    used += WINDOW
                    part = bodies[start:checkpoint]
                    base, gw, bare = await _interleaved(
                        session, stub.url, gateway.url, proxy.url, window, part
                    )
                    sent = checkpoint
                    added[checkpoint] = (statistics.median(gw), statistics.median(base))
                    floor.append(statistics.median(bare) - statistics.median(base))
        stop = gateway.final.get("stop_seconds", 0.0)
        recorded = gateway.final.get("summary", {}).get("live", 0)
    first = added[CHECKPOINTS[0]][0] - added[CHECKPOINTS[0]][1]
    for checkpoint, (gw_p50, stub_p50) in added.items():
        cost = gw_p50 - stub_p50
        results.add(
            "3 record",
            f"added cost per exchange at #{checkpoint:,} (p50 gateway - stub)",
            f"{ms(cost)} ({ms(gw_p50)} total)",
            f"stub {ms(stub_p50)}",
            gw_p50 / stub_p50,
            "< 1 ms",
            cost < 0.001,
        )
    hop = statistics.median(floor)
    middle = statistics.median(gw - stub for gw, stub in added.values())
    results.add(
        "3 record",
        "reference: a bare aiohttp proxy's added cost (p50 proxy - stub, same windows)",
        ms(hop),
        f"gateway {ms(middle)}",
        middle / hop if hop > 0 else None,
        "reference",
    )
    last = added[CHECKPOINTS[-1]][0] - added[CHECKPOINTS[-1]][1]
    flat = last / first if first > 0 else None
    results.add(
        "3 record",
        f"flatness: added cost at #{CHECKPOINTS[-1]:,} / at #{CHECKPOINTS[0]:,}",
        ms(last),
        ms(first),
        flat,
        "<= 1.3x (flat)",
        flat is not None and flat <= 1.3,
        basis=f"at #{CHECKPOINTS[0]:,}",
    )
    results.add(
        "3 record",
        f"stop: derive the cassette from {recorded:,} recorded exchanges",
        f"{stop:.2f} s",
        "-",
        None,
    )
