"""1. Replay latency and throughput over loopback: the gateway in strict replay against a
bare aiohttp handler returning the same bytes (the physical limit).

Both servers run in a subprocess of their own; the same aiohttp client in this process
sends the same requests (a distinct chat turn each) sequentially and 16 in flight. Rounds
alternate bare and gateway and the median of the per-round ratios is reported.

A third figure sends requests that differ from their recordings only in a volatile value
(a timestamp in the user's turn, as agents put the current time in a prompt): they cannot
take the exact-body fast path and go through normalisation and the component matcher. A
fourth sends the same requests to a gateway with a rule file of 20 rules loaded, against
the gateway without one. These three take turns request by request (bare, gateway, the
gateway with rules), so that each samples the same moments of a noisy machine.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks._common import (
    CHAT,
    Results,
    Server,
    Timing,
    chat_body,
    chat_exchange,
    chat_response,
    client_session,
    compact,
    drive,
    ms,
    send_turns,
    sender,
    sized,
    write_cassette,
)
from otel_replay.core.exchange import Response

ROUNDS = sized(3, 1)
WARMUP = sized(200, 20)
SEQUENTIAL = sized(800, 40)
CONCURRENT = sized(2400, 64)
IN_FLIGHT = 16
VOLATILE = sized(400, 20)
RECORDED_AT, LIVE_AT = "2025-01-01T10:00:00Z", "2026-11-29T14:{:02d}:{:02d}Z"


RULES = 20


def rule_file(path: Path, count: int = RULES) -> Path:
    """A rule file of ``count`` rules of every kind and scope, none of which the benchmark's
    requests carry, so every request still goes through them all."""
    blocks: list[str] = []
    for i in range(count):
        if i % 3 == 0:
            blocks.append(f'[[volatile]]\nkind = "order{i}"\npattern = "ORD{i}-[0-9]{{6}}"\n')
        elif i % 3 == 1:
            blocks.append(f'[[ignore]]\npath = "params.metadata.run_{i}"\nprovider = "openai"\n')
        elif i % 2:
            blocks.append(f'[[live]]\nmodel = "realtime-{i}*"\n')
        else:
            scope = 'model = "gpt-4o*"'
            blocks.append(
                f'[[volatile]]\nkind = "build{i}"\npattern = "B{i}-[a-f0-9]{{8}}"\n{scope}\n'
            )
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def _stamped(n: int, stamp: str) -> dict[str, Any]:
    body = chat_body(n)
    body["messages"][1]["content"] += f" (asked at {stamp})"
    return body


async def _measure(url: str, bodies: list[bytes], offset: int) -> tuple[Timing, Timing, int]:
    async with client_session() as session:
        target = url + CHAT

        def call_from(base: int, count: int) -> Callable[[int], Awaitable[bytes]]:
            return sender(session, target, bodies[base : base + count])

        await drive(call_from(offset, WARMUP), WARMUP, 4)
        offset += WARMUP
        seq = await drive(call_from(offset, SEQUENTIAL), SEQUENTIAL)
        offset += SEQUENTIAL
        conc = await drive(call_from(offset, CONCURRENT), CONCURRENT, IN_FLIGHT)
        offset += CONCURRENT
    return seq, conc, offset


async def run(results: Results) -> None:
    per_round = WARMUP + SEQUENTIAL + CONCURRENT
    total = ROUNDS * per_round
    response = chat_response()
    raw = [chat_body(i) for i in range(total)]
    bodies = [compact(b) for b in raw]
    volatile_ids = range(total, total + ROUNDS * VOLATILE)
    raw += [_stamped(i, RECORDED_AT) for i in volatile_ids]
    live = [compact(_stamped(i, LIVE_AT.format(i // 60 % 60, i % 60))) for i in volatile_ids]
    with tempfile.TemporaryDirectory() as tmp:
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(compact(response))
        cassette = write_cassette(
            Path(tmp) / "replay.json",
            [chat_exchange(b, Response(status=200, body=response)) for b in raw],
        )
        rules = rule_file(Path(tmp) / "otel-replay.toml")
        seq_ratios, conc_ratios, vol_ratios, rule_ratios = [], [], [], []
        bare_seq, bare_conc, gw_seq, gw_conc, bare_vol, gw_vol, ruled = [], [], [], [], [], [], []
        with (
            Server(kind="bare", body=body_file) as bare,
            Server(kind="gateway", mode="strict", cassette=cassette) as gateway,
            Server(kind="gateway", mode="strict", cassette=cassette, rules=rules) as with_rules,
        ):
            offset = 0
            for r in range(ROUNDS):
                b_seq, b_conc, _ = await _measure(bare.url, bodies, offset)
                g_seq, g_conc, offset = await _measure(gateway.url, bodies, offset)
                stamped = live[r * VOLATILE : (r + 1) * VOLATILE]
                # taking turns request by request, so the three sample the same moments
                b_vol, g_vol, r_vol = map(
                    statistics.median,
                    await send_turns([bare.url, gateway.url, with_rules.url], stamped),
                )
                ruled.append(r_vol)
                rule_ratios.append(r_vol / g_vol)
                bare_vol.append(b_vol)
                gw_vol.append(g_vol)
                vol_ratios.append(g_vol / b_vol)
                bare_seq.append(b_seq.p50)
                gw_seq.append(g_seq.p50)
                bare_conc.append(b_conc.rate)
                gw_conc.append(g_conc.rate)
                seq_ratios.append(g_seq.p50 / b_seq.p50)
                conc_ratios.append(b_conc.rate / g_conc.rate)
        for server in (gateway, with_rules):
            summary = server.final.get("summary", {})
            if summary.get("misses"):
                raise RuntimeError(f"replay benchmark missed: {summary['misses'][:1]}")
    seq, conc = statistics.median(seq_ratios), statistics.median(conc_ratios)
    results.add(
        "1 replay",
        "sequential p50 latency, gateway vs bare",
        ms(statistics.median(gw_seq)),
        ms(statistics.median(bare_seq)),
        seq,
        "<= 1.2x",
        seq <= 1.2,
        basis="bare handler",
    )
    results.add(
        "1 replay",
        f"{IN_FLIGHT} in flight, time per request (1/throughput)",
        f"{statistics.median(gw_conc):.0f} req/s",
        f"{statistics.median(bare_conc):.0f} req/s",
        conc,
        "<= 1.3x",
        conc <= 1.3,
        basis="bare handler",
    )
    vol = statistics.median(vol_ratios)
    results.add(
        "1 replay",
        "sequential p50, a fresh timestamp in each request (full matcher), gateway vs bare",
        ms(statistics.median(gw_vol)),
        ms(statistics.median(bare_vol)),
        vol,
        "reference",
        basis="bare handler",
    )
    rule = statistics.median(rule_ratios)
    results.add(
        "1 replay",
        f"sequential p50, full matcher, a rule file of {RULES} rules vs none",
        ms(statistics.median(ruled)),
        ms(statistics.median(gw_vol)),
        rule,
        "<= 1.2x",
        rule <= 1.2,
        basis="no rules",
    )
