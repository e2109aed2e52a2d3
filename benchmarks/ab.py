"""``python -m benchmarks.ab [--shape S] [--rounds N] TREE...``: what recording costs per
call, compared across source trees (checkouts of the commits to compare, e.g. made with
``git worktree add``), in one session.

A noisy machine moves a figure by ±30 % from one run to the next, so comparing two full
runs made at different times says little. Here one stub upstream serves a record-mode
gateway per tree (each in a process of its own, run from its tree), and in each round
the same client sends a window of calls to the stub directly, then to each gateway, in
five slices taking turns (the order of the trees alternating between rounds), so every
side samples the same moments. Each tree prints the median over rounds of its added p50
(gateway minus stub; for ``stream``, to the first event) and of the gateway's CPU time
per call.

Shapes: ``small``, benchmark 3's chat call (about 1 KB); ``stream``, benchmark 2's
(a 200-event answer); ``coding``, the first turn of benchmark 10's coding-agent session
(about 76 KB) with fresh UUIDs in every call, so nothing is met twice.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp

from benchmarks._common import CHAT, Server, chat_body, client_session, compact
from benchmarks.session import session_bodies

WINDOW, SLICES = 100, 5
_HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench"}


def _bodies(shape: str, count: int, start: int) -> list[bytes]:
    if shape == "small":
        return [compact(chat_body(start + i)) for i in range(count)]
    if shape == "stream":
        return [compact(chat_body(start + i, words=194, stream=True)) for i in range(count)]
    return [
        compact(session_bodies(f"2026-12-{1 + i % 28:02d}T00:00:00Z", str(uuid.uuid4()))[0])
        for i in range(count)
    ]


async def _latency(session: aiohttp.ClientSession, url: str, data: bytes, stream: bool) -> float:
    started = time.perf_counter()
    async with session.post(url + CHAT, data=data, headers=_HEADERS) as answer:
        if stream:
            async for _ in answer.content.iter_any():
                first = time.perf_counter() - started
                break
        await answer.read()
    return first if stream else time.perf_counter() - started


def _cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _round(
    session: aiohttp.ClientSession,
    stub: Server,
    gateways: list[tuple[Path, Server]],
    bodies: list[bytes],
    stream: bool,
) -> tuple[float, dict[Path, list[float]], dict[Path, float]]:
    direct: list[float] = []
    through: dict[Path, list[float]] = {tree: [] for tree, _ in gateways}
    cpu = {tree: 0.0 for tree, _ in gateways}
    step = max(1, len(bodies) // SLICES)
    for start in range(0, len(bodies), step):
        part = bodies[start : start + step]
        direct += [await _latency(session, stub.url, data, stream) for data in part]
        for tree, gateway in gateways:
            assert gateway.proc is not None
            before = _cpu(gateway.proc.pid)
            through[tree] += [await _latency(session, gateway.url, data, stream) for data in part]
            cpu[tree] += _cpu(gateway.proc.pid) - before
    return statistics.median(direct), through, {t: c / len(bodies) for t, c in cpu.items()}


async def run(trees: list[Path], shape: str, rounds: int, window: int | None = None) -> None:
    stream = shape == "stream"
    if window is None:
        window = WINDOW if shape != "coding" else WINDOW // 4
    added: dict[Path, list[float]] = {tree: [] for tree in trees}
    cpu: dict[Path, list[float]] = {tree: [] for tree in trees}
    sent = 0
    with tempfile.TemporaryDirectory() as tmp, Server(kind="stub") as stub:
        gateways = []
        try:
            for n, tree in enumerate(trees):
                spec = {"kind": "gateway", "mode": "record", "upstream": stub.url}
                spec |= {"cassette": f"{tmp}/{n}.json", "traces": f"{tmp}/{n}.jsonl"}
                gateways.append((tree, Server(tree, **spec).__enter__()))
            async with client_session() as session:
                warm = _bodies(shape, min(20, window), sent)
                sent += len(warm)
                await _round(session, stub, gateways, warm, stream)
                for r in range(rounds):
                    bodies = _bodies(shape, window, sent)
                    sent += window
                    order = gateways if r % 2 == 0 else gateways[::-1]
                    base, through, per_call = await _round(session, stub, order, bodies, stream)
                    for tree in trees:
                        added[tree].append(statistics.median(through[tree]) - base)
                        cpu[tree].append(per_call[tree])
        finally:
            for _, gateway in gateways:
                gateway.__exit__()
    what = "to the first event" if stream else "per call"
    print(f"record, {shape} calls, {rounds} rounds of {window}: added p50 {what} (gateway - stub)")
    for tree in trees:
        rows = ", ".join(f"{x * 1e3:.2f}" for x in added[tree])
        print(
            f"  {tree}: {statistics.median(added[tree]) * 1e3:.3f} ms added "
            f"(rounds: {rows}); gateway CPU {statistics.median(cpu[tree]) * 1e3:.2f} ms per call"
        )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument("trees", nargs="+", type=Path, help="source trees to compare")
    parser.add_argument("--shape", choices=("small", "stream", "coding"), default="small")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--window", type=int, help="calls per round (100; coding: 25)")
    args = parser.parse_args()
    trees = source_trees(parser, args.trees)
    asyncio.run(run(trees, args.shape, args.rounds, args.window))


def source_trees(parser: argparse.ArgumentParser, trees: list[Path]) -> list[Path]:
    """``trees`` resolved; the parser's usage error for any that is no source tree."""
    missing = [t for t in trees if not (t / "otel_replay" / "__init__.py").exists()]
    if missing:
        parser.error(f"not a source tree of otel-replay: {', '.join(map(str, missing))}")
    return [t.resolve() for t in trees]


if __name__ == "__main__":
    main()
