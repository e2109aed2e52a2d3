"""``python -m benchmarks.first_calls [--cassette C] [--rounds N] [--replay] TREE...``: a
run's first calls, recorded by a gateway just started, for several source trees in one session.

A coding agent's run is short: its first call meets a gateway that has served nothing
yet (cold code, redaction automata without states), and its second the first call's
conversation again. ``benchmarks.ab`` measures calls to a long-running gateway; this
measures those first two. Each round, a bare aiohttp proxy in front of the stub (the
floor under record) and then a record-mode gateway run from each tree (the trees' order
alternating between rounds) are started afresh, and sent the same calls in order, a
fresh session id in each, each call streamed and read to its end; for each call it prints
the median over rounds of the time to the first chunk and to the stream's end.

With ``--replay``, each round starts a gateway from each tree replaying ``--cassette``
strictly (run from the tree's directory, as a replay elsewhere than the recording's
directories is: CI's), compared with the stub read directly.

The calls are a recording's requests (``--cassette``: e.g. one ``benchmarks.claude_code``
makes of the real Claude Code CLI, whose requests are 76-80 KB), or by default the first
two turns of ``benchmarks.session``'s coding-agent session (about 76 KB), streamed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks._common import Server
from benchmarks.ab import source_trees
from benchmarks.session import session_bodies

_HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer sk-bench",
    "x-api-key": "sk-ant-bench",
    "anthropic-version": "2023-06-01",
}
_SETTLE = 0.3  # seconds a fresh server is given before its first call, as an agent starts


def _calls(cassette: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """(path, request) of each call, streamed."""
    if cassette is None:
        bodies = session_bodies("2026-12-01T00:00:00Z", "first-calls")[:2]
        return [("/v1/chat/completions", {**body, "stream": True}) for body in bodies]
    from otel_replay.cassette.model import load

    found = []
    for exchange in load(cassette).interactions:
        if isinstance(exchange.raw_request, dict):
            path = "/v1/messages" if exchange.provider == "anthropic" else "/v1/responses"
            found.append((path, {**exchange.raw_request, "stream": True}))
    if not found:
        raise SystemExit(f"no request with a JSON body in {cassette}")
    return found


def _fresh(body: dict[str, Any]) -> bytes:
    """The body with a session id of its own, as every run of an agent has (inside the
    ``user_id`` JSON a recorded Claude Code request holds, its other fields kept, so the
    agent profile still recognises it)."""
    try:
        user = json.loads(body["metadata"]["user_id"])
    except (KeyError, TypeError, ValueError):
        user = {}
    user = {**(user if isinstance(user, dict) else {}), "session_id": str(uuid.uuid4())}
    marked = {**body, "metadata": {"user_id": json.dumps(user)}}
    if "messages" in body and "system" not in body:  # Chat Completions takes no metadata
        marked = {**body, "user": str(uuid.uuid4())}
    return json.dumps(marked, separators=(",", ":")).encode()


async def _call(session: aiohttp.ClientSession, url: str, data: bytes) -> tuple[float, float]:
    """(first chunk, end of stream) in ms."""
    started = time.perf_counter()
    first = None
    async with session.post(url, data=data, headers=_HEADERS) as answer:
        async for _ in answer.content.iter_any():
            if first is None:
                first = time.perf_counter() - started
    end = time.perf_counter() - started
    return 1e3 * (end if first is None else first), 1e3 * end


async def _run(server: Server, calls: list[tuple[str, dict[str, Any]]]) -> list[float]:
    await asyncio.sleep(_SETTLE)
    timings: list[float] = []
    async with aiohttp.ClientSession() as session:
        for path, body in calls:
            timings.extend(await _call(session, server.url + path, _fresh(body)))
    return timings


async def run(trees: list[Path], cassette: Path | None, rounds: int, replay: bool) -> None:
    calls = _calls(cassette)
    kinds: list[Path | None] = [None, *trees]
    seen: dict[Path | None, list[list[float]]] = {kind: [] for kind in kinds}
    with Server(kind="stub") as stub, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for round_ in range(rounds):
            order = trees if round_ % 2 == 0 else trees[::-1]
            for n, kind in enumerate([None, *order]):
                spec: dict[str, Any] = {"kind": "proxy", "upstream": stub.url}
                if kind is None and replay:
                    timings = await _run(stub, calls)
                    seen[kind].append(timings)
                    continue
                if kind is not None and replay:
                    spec = {"kind": "gateway", "mode": "strict", "cassette": cassette}
                elif kind is not None:
                    spec = {
                        "kind": "gateway",
                        "mode": "record",
                        "cassette": folder / f"c{round_}-{n}.json",
                        "traces": folder / f"t{round_}-{n}.jsonl",
                        "upstream": stub.url,
                    }
                with Server(tree=kind, **spec) as server:
                    seen[kind].append(await _run(server, calls))
    mode = "replay" if replay else "record"
    print(f"{mode}, a run's first {len(calls)} calls, {rounds} rounds: p50 first chunk / end")
    floor = "the stub read directly" if replay else "bare aiohttp proxy"
    for kind in kinds:
        medians = [statistics.median(column) for column in zip(*seen[kind], strict=True)]
        parts = [
            f"call {i + 1} {medians[2 * i]:.2f} / {medians[2 * i + 1]:.2f} ms"
            for i in range(len(calls))
        ]
        print(f"  {floor if kind is None else kind}: " + " · ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_calls", description=__doc__)
    parser.add_argument("trees", nargs="+", type=Path, help="source trees to compare")
    parser.add_argument("--cassette", type=Path, help="take the calls from this recording")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument(
        "--replay",
        action="store_true",
        help="replay --cassette strictly instead, against the stub read directly",
    )
    args = parser.parse_args()
    if args.replay and args.cassette is None:
        parser.error("--replay needs --cassette (the recording to replay)")
    asyncio.run(run(source_trees(parser, args.trees), args.cassette, args.rounds, args.replay))


if __name__ == "__main__":
    main()
