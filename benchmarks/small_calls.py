"""12. An openai-agents / pydantic-ai style session: many small sequential calls.

Such frameworks run short tool loops: each agent run sends a system prompt, a few tool
definitions and the user's question, then one call per tool round, each carrying the run
so far, so the calls are small (2 to 6 KB here) and many (200: 20 runs of 10 calls). The
session is recorded through the gateway (a bare server as the upstream), then sent again,
sequentially, byte for byte as recorded (these frameworks put no time or fresh id into
their requests), to the bare server and to the gateway replaying strictly. A third round
measures recording itself: the gateway in record mode against the bare server alone.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks._common import Results, Server, compact, ms, send_each, sized
from otel_replay.cassette.model import dump, load

RUNS = sized(20, 2)
CALLS_PER_RUN = 10
ROUNDS = sized(5, 1)
TOOLS = ("search_docs", "read_file", "run_tests")


def _text(seed: int, size: int) -> str:
    words = [f"t{(seed * 7919 + i * 104729) % 3000}" for i in range(size // 6 + 1)]
    return " ".join(words)[:size]


def _tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": _text(100 + i, 160),
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        }
        for i, name in enumerate(TOOLS)
    ]


def session_bodies() -> list[dict[str, Any]]:
    """The session's calls: each run grows by one tool call and its result per call."""
    system = {"role": "system", "content": _text(1, 1000)}
    tools = _tools()
    bodies = []
    for run in range(RUNS):
        messages: list[dict[str, Any]] = [
            system,
            {"role": "user", "content": f"task {run}: " + _text(200 + run, 200)},
        ]
        for call in range(CALLS_PER_RUN):
            bodies.append({"model": "gpt-4o-mini", "messages": list(messages), "tools": tools})
            call_id = f"call_{run:02d}{call:02d}aBcDeF"
            messages += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": TOOLS[call % len(TOOLS)],
                                "arguments": json.dumps({"query": f"step {call} of {run}"}),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": _text(run * 50 + call, 150)},
            ]
    return bodies


def answer() -> dict[str, Any]:
    """The model asks for one more tool call (~600 bytes)."""
    call = {"name": "read_file", "arguments": json.dumps({"query": "src/app.py"})}
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_Xy9", "type": "function", "function": call}],
                    "refusal": None,
                },
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920},
    }


def _added(
    gateway: list[list[float]], bare: list[list[float]]
) -> tuple[float, float, float, float]:
    """Whole-session wall times and their ratio, and the time added per call (medians
    over the rounds; the ratio is the median of the rounds' ratios)."""
    walls_g, walls_b = [sum(r) for r in gateway], [sum(r) for r in bare]
    ratio = statistics.median(g / b for g, b in zip(walls_g, walls_b, strict=True))
    per_call = statistics.median(
        statistics.median(g) - statistics.median(b) for g, b in zip(gateway, bare, strict=True)
    )
    return statistics.median(walls_g), statistics.median(walls_b), ratio, per_call


async def run(results: Results) -> None:
    bodies = [compact(b) for b in session_bodies()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        body_file = folder / "answer.json"
        body_file.write_bytes(compact(answer()))
        cassette = folder / "calls.json"
        replay_g, replay_b, record_g, record_b = [], [], [], []
        with Server(kind="bare", body=body_file) as bare:
            with Server(kind="gateway", mode="record", cassette=cassette, upstream=bare.url) as gw:
                await send_each(gw.url, bodies)
            # each recording replays once: twice over serves a warm-up pass and the measure
            once = load(cassette)
            twice = folder / "twice.json"
            dump(replace(once, interactions=once.interactions * 2), twice)
            for r in range(ROUNDS):
                with Server(kind="gateway", mode="strict", cassette=twice) as gateway:
                    await send_each(gateway.url, bodies)
                    await send_each(bare.url, bodies)
                    replay_g.append(await send_each(gateway.url, bodies))
                    replay_b.append(await send_each(bare.url, bodies))
                if gateway.final.get("summary", {}).get("misses"):
                    raise RuntimeError(f"small-calls benchmark missed in round {r}")
                recording = folder / f"again{r}.json"
                with Server(
                    kind="gateway", mode="record", cassette=recording, upstream=bare.url
                ) as recorder:
                    await send_each(recorder.url, bodies[: len(bodies) // 4])  # warm-up
                    record_g.append(await send_each(recorder.url, bodies))
                    record_b.append(await send_each(bare.url, bodies))
    n = len(bodies)
    for label, gateway_runs, bare_runs in (
        ("replay (strict, as recorded)", replay_g, replay_b),
        ("record (forwarded to the bare server)", record_g, record_b),
    ):
        whole_g, whole_b, ratio, per_call = _added(gateway_runs, bare_runs)
        replaying = label.startswith("replay")
        results.add(
            "12 small calls",
            f"{n} small sequential calls, {label}: whole session / added per call",
            f"{ms(whole_g)} / +{ms(per_call)}",
            f"bare {ms(whole_b)}" if replaying else f"bare upstream alone {ms(whole_b)}",
            ratio,
            "<= 1.5x" if replaying else "",
            ratio <= 1.5 if replaying else None,
        )
    sizes = [len(b) / 1024 for b in bodies]
    results.notes.append(
        f"12 small calls: {n} calls of {min(sizes):.1f} KB to {max(sizes):.1f} KB "
        f"({RUNS} runs of {CALLS_PER_RUN})"
    )
