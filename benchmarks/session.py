"""10. A coding agent's session: 40 turns, each resending the whole conversation.

A coding agent sends its system prompt, its tools and every earlier message on every turn,
so requests grow from about 76 KB to about 400 KB, and each carries fresh volatile values
(a session id, the time), so the byte-identical fast path does not apply. The session is
first recorded live through the gateway (a bare server as the upstream); then, in rounds,
the same client sends it sequentially (the real pattern) to the bare server and to the
gateway replaying the recording strictly: once with fresh volatile values, once byte for
byte as recorded. The two sessions run turn by turn together (each turn goes to both
before the next goes to either, the gateway first), so both sample the same moments of a
noisy machine and each request finds its server idle since the other's.
The first request a replaying gateway serves after it starts is compared with the same
turn once it is warm, and, for reference, a bare server started alongside it likewise:
what any fresh Python process pays on its first request. Sizes compare the cassette and
trace file with the session's unique content (each distinct message, tool, system prompt
and answer counted once).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks._common import (
    Results,
    Server,
    chat_response,
    compact,
    ms,
    send_each,
    send_turns,
    sized,
)
from otel_replay.cassette.model import dump, load

TURNS = sized(40, 4)
ROUNDS = sized(7, 1)
TOOLS = 24
RECORDED_AT = "2025-01-01T10:00:00Z"


def _prose(seed: int, size: int) -> str:
    """Text with the line breaks and quotes of real prompts (escapes in the JSON)."""
    words = [f"w{(seed * 7919 + i * 104729) % 5000}" for i in range(size // 6 + 1)]
    for i in range(12, len(words), 13):
        words[i] += "\n" if i % 3 else ' "quoted"'
    return " ".join(words)[:size]


def _tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": _prose(1000 + i, 2000),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": _prose(2000 + i, 200)},
                        "limit": {"type": "integer"},
                    },
                    "required": ["path"],
                },
            },
        }
        for i in range(TOOLS)
    ]


def _turn_messages(turn: int, conversation: int = 0) -> list[dict[str, Any]]:
    """What one turn adds: the model's tool call and the tool's result (~8 KB), its text
    different in each ``conversation``."""
    call_id = f"call_{turn:04d}"
    seed = turn + 100_000 * conversation
    return [
        {
            "role": "assistant",
            "content": _prose(3000 + seed, 600),
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "tool_1", "arguments": json.dumps({"path": f"f{turn}"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": _prose(4000 + seed, 7400)},
    ]


def session_bodies(stamp: str, session_id: str, conversation: int = 0) -> list[dict[str, Any]]:
    """The session's requests, ``stamp`` and ``session_id`` being its volatile values;
    sessions of another ``conversation`` share the system prompt and tools only."""
    system = {"role": "system", "content": _prose(1, 18000)}
    tools = _tools()
    history: list[dict[str, Any]] = []
    bodies = []
    for turn in range(TURNS):
        ask = f"step {turn}: go on (session {session_id}, asked at {stamp})"
        body = {
            "model": "gpt-4o-mini",
            "messages": [system, *history, {"role": "user", "content": ask}],
            "tools": tools,
        }
        bodies.append(body)
        history += _turn_messages(turn, conversation)
    return bodies


def unique_content(bodies: list[dict[str, Any]], answer: bytes) -> int:
    """Bytes of every distinct message, tool and answer of the session, each once."""
    pieces: set[bytes] = set()
    for body in bodies:
        pieces.update(compact(m) for m in body["messages"])
        pieces.update(compact(t) for t in body["tools"])
    return sum(map(len, pieces)) + len(answer) * len(bodies)


def _stamp(i: int) -> str:
    return f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:17Z"


async def run(results: Results) -> None:
    answer = compact(chat_response(words=1600))  # ~11 KB
    recorded = session_bodies(RECORDED_AT, str(uuid.UUID(int=0)))
    recorded_bytes = [compact(b) for b in recorded]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        body_file = folder / "answer.json"
        body_file.write_bytes(answer)
        cassette, traces = folder / "session.json", folder / "session.jsonl"
        with Server(kind="bare", body=body_file) as bare:
            with Server(
                kind="gateway", mode="record", cassette=cassette, traces=traces, upstream=bare.url
            ) as recorder:
                await send_each(recorder.url, recorded_bytes)
            sizes = cassette.stat().st_size, traces.stat().st_size
            # each recording replays once: the session three times over serves a warm-up
            # pass, a pass with fresh values and one byte for byte as recorded
            once = load(cassette)
            thrice = folder / "thrice.json"
            dump(replace(once, interactions=once.interactions * 3), thrice)
            fresh_gw, fresh_bare, exact_gw, exact_bare, firsts, seconds = [], [], [], [], [], []
            wall_gw, wall_bare, bare_firsts, bare_seconds = [], [], [], []
            for r in range(ROUNDS):
                warm = [compact(b) for b in session_bodies(_stamp(r), str(uuid.uuid4()))]
                live = [compact(b) for b in session_bodies(_stamp(r + 7), str(uuid.uuid4()))]
                with (
                    Server(kind="gateway", mode="strict", cassette=thrice) as gateway,
                    Server(kind="bare", body=body_file) as fresh,  # started afresh too: the floor
                ):
                    firsts.append((await send_each(gateway.url, warm))[0])
                    bare_firsts.append((await send_each(fresh.url, warm))[0])
                    g, b = await send_turns([gateway.url, bare.url], live)
                    seconds.append(g[0])
                    bare_seconds.append((await send_each(fresh.url, live[:1]))[0])
                    ge, be = await send_turns([gateway.url, bare.url], recorded_bytes)
                for summary in [gateway.final.get("summary", {})]:
                    if summary.get("misses"):
                        raise RuntimeError(f"session benchmark missed: {summary['misses'][:1]}")
                fresh_gw.append(g)
                fresh_bare.append(b)
                exact_gw.append(ge)
                exact_bare.append(be)
                wall_gw.append(sum(g))
                wall_bare.append(sum(b))
    _report(results, recorded_bytes, fresh_gw, fresh_bare, exact_gw, exact_bare)
    wall = statistics.median(g / b for g, b in zip(wall_gw, wall_bare, strict=True))
    results.add(
        "10 session",
        f"{TURNS}-turn session, fresh volatile values, gateway vs bare (whole session)",
        ms(statistics.median(wall_gw)),
        ms(statistics.median(wall_bare)),
        wall,
        "<= 1.5x",
        wall <= 1.5,
    )
    first = statistics.median(f / s for f, s in zip(firsts, seconds, strict=True))
    results.add(
        "10 session",
        "first request after start vs the same turn once warm (fresh values both)",
        ms(statistics.median(firsts)),
        ms(statistics.median(seconds)),
        first,
        "<= 2x",
        first <= 2,
    )
    floor = statistics.median(f / s for f, s in zip(bare_firsts, bare_seconds, strict=True))
    results.add(
        "10 session",
        "reference: a bare aiohttp server's first request after start vs once warm",
        ms(statistics.median(bare_firsts)),
        ms(statistics.median(bare_seconds)),
        floor,
        "reference",
    )
    unique = unique_content(recorded, answer)
    for what, size, goal in (("cassette", sizes[0], 1.5), ("trace file", sizes[1], 3.0)):
        ratio = size / unique
        results.add(
            "10 session",
            f"{what} size vs the session's unique content",
            f"{size / 1e6:.2f} MB",
            f"{unique / 1e6:.2f} MB",
            ratio,
            f"<= {goal}x",
            ratio <= goal,
        )
    kb = [len(b) // 1024 for b in recorded_bytes]
    results.notes.append(f"10 session: {TURNS} requests of {kb[0]} KB to {kb[-1]} KB")


def _report(
    results: Results,
    recorded: list[bytes],
    fresh_gw: list[list[float]],
    fresh_bare: list[list[float]],
    exact_gw: list[list[float]],
    exact_bare: list[list[float]],
) -> None:
    """Added latency at the session's first and last (largest) turn."""
    last = len(recorded) - 1
    for label, gw, bare, goal in (
        ("fresh volatile values", fresh_gw, fresh_bare, 1e-3),
        ("byte-identical (fast path)", exact_gw, exact_bare, 0.3e-3),
    ):
        for turn in (0, last):
            g = statistics.median(run[turn] for run in gw)
            b = statistics.median(run[turn] for run in bare)
            size = len(recorded[turn]) // 1024
            met = (g - b) <= goal if turn == last else None
            results.add(
                "10 session",
                f"added latency per request at {size} KB, {label}",
                ms(g - b),
                ms(b),
                g / b,
                f"added <= {ms(goal)} at 400 KB" if turn == last else "",
                met,
            )
