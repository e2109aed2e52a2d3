"""``python -m benchmarks.turn_work [--codex] [--record] [TURNS]``: the work of each turn of
benchmark 10's captured-shape session, counted rather than timed, so that it reads the same
on a busy machine.

The session (grown from the Claude Code CLI's request, ``captured.py``, or with
``--codex`` the Codex CLI's) is recorded through
a gateway against a bare handler streaming the stub's answer, then replayed strictly by a
gateway in this process: a warm session, then a session with fresh values whose every
request is profiled (``cProfile``). It prints the Python function calls each request
took (the gateway's and the client's), and how many a turn adds to the next: what a turn
costs for what it resends rather than what it adds. Under ``valgrind --tool=callgrind``,
``--count-only`` leaves the profiler out and gives the instructions instead. ``--record``
profiles the recording instead: a gateway in this process records the session to a
trace file (its spans written against the file's pieces and lists), and the trace file's
size is printed too.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import sys
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import captured
from benchmarks._common import Route, Server, client_session, compact, post, send_each
from otel_replay.cassette.model import dump, load
from otel_replay.gateway.runner import GatewayConfig, GatewayServer


def _sessions(codex: bool, n: int, date: str, turns: int) -> list[dict[str, Any]]:
    if codex:
        return captured.codex_session_bodies(n, date, turns)
    return captured.session_bodies(str(uuid.UUID(int=n)), date, turns)


def _route(codex: bool) -> Route:
    if codex:
        return Route(captured.RESPONSES, captured.CODEX_HEADERS)
    return Route(captured.MESSAGES, captured.HEADERS)


async def _answer(folder: Path, route: Route, first: dict[str, Any]) -> None:
    """The stub upstream's answer to the session's first request, in ``folder/answer``."""
    with Server(kind="stub") as stub:
        async with client_session() as session:
            answer = await post(session, stub.url + route.path, compact(first), route.headers)
    (folder / "answer").write_bytes(answer)


async def calls_per_turn(turns: int, profile: bool = True, codex: bool = False) -> list[int]:
    """Function calls of each request of a fresh session replayed strictly (zeros
    without ``profile``)."""
    route = _route(codex)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        recorded = _sessions(codex, 0, "2025-01-01", turns)
        await _answer(folder, route, recorded[0])
        cassette = folder / "session.json"
        with Server(kind="bare", stream=folder / "answer") as bare:
            with Server(kind="gateway", mode="record", cassette=cassette, upstream=bare.url) as g:
                await send_each(g.url, [compact(b) for b in recorded], route)
        once = load(cassette)
        dump(replace(once, interactions=once.interactions * 2), cassette)
        gateway = GatewayServer(
            GatewayConfig(
                mode="strict",
                cassette=cassette,
                traces=None,
                upstream_openai="http://127.0.0.1:9/v1",
                upstream_anthropic="http://127.0.0.1:9",
                environ={},
            )
        )
        await gateway.start()
        url = f"http://127.0.0.1:{gateway.port}{route.path}"
        counts = []
        try:
            async with client_session() as session:
                for n, date in enumerate(("2026-11-02", "2026-11-03")):
                    for body in _sessions(codex, n + 1, date, turns):
                        profiler = cProfile.Profile()
                        if n and profile:
                            profiler.enable()
                        await post(session, url, compact(body), route.headers)
                        profiler.disable()
                        if n:
                            counts.append(pstats.Stats(profiler).total_calls if profile else 0)
        finally:
            summary = await gateway.stop()
        if summary.misses:
            raise RuntimeError(f"the captured session missed: {summary.misses[:1]}")
    return counts


async def record_calls(turns: int, codex: bool = False) -> tuple[list[int], int]:
    """Function calls of each request of the session recorded by a gateway in this
    process, and the size of the trace file it writes."""
    route, recorded = _route(codex), _sessions(codex, 0, "2025-01-01", turns)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        await _answer(folder, route, recorded[0])
        traces = folder / "session.jsonl"
        with Server(kind="bare", stream=folder / "answer") as bare:
            gateway = GatewayServer(
                GatewayConfig(
                    mode="record",
                    cassette=folder / "session.json",
                    traces=traces,
                    upstream_openai=bare.url + "/v1",
                    upstream_anthropic=bare.url,
                    environ={},
                )
            )
            await gateway.start()
            url = f"http://127.0.0.1:{gateway.port}{route.path}"
            counts = []
            try:
                async with client_session() as session:
                    for body in recorded:
                        profiler = cProfile.Profile()
                        profiler.enable()
                        await post(session, url, compact(body), route.headers)
                        profiler.disable()
                        counts.append(pstats.Stats(profiler).total_calls)
            finally:
                await gateway.stop()
        return counts, traces.stat().st_size


def main(args: list[str]) -> None:
    profile = "--count-only" not in args
    turns = int(next((a for a in args if a.isdigit()), "40"))
    if "--record" in args:
        counts, size = asyncio.run(record_calls(turns, codex="--codex" in args))
        print(f"trace file: {size:,} bytes; the session's requests: {sum(counts):,} calls")
    else:
        counts = asyncio.run(calls_per_turn(turns, profile, codex="--codex" in args))
    if not profile:
        return
    print("function calls per request, turn by turn:", " ".join(map(str, counts)))
    if turns > 2:
        growth = (counts[-1] - counts[1]) / (turns - 2)
        print(f"turn 2: {counts[1]} calls; turn {turns}: {counts[-1]}; {growth:.0f} more a turn")


if __name__ == "__main__":
    main(sys.argv[1:])
