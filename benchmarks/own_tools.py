"""17. The agent's own tools: what a replayed tool call adds over calling the function.

A fresh Python process, as a user's agent is one, records ``CALLS`` calls of an
``@otel_replay.tool`` function (an order lookup: distinct arguments each, a small dict
back) into a cassette, then measures them replayed strictly against calling the same
function undecorated, call by call, in turn: once with the gateway in its own process
(the Python API, as the pytest plugin runs it: the hook asks it by a function call) and
once under ``otel-replay replay -- python …`` (the hook asks the gateway over loopback
HTTP). The added time per call is the difference of the medians; the goal is at most
0.5 ms either way.
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks._common import Results, agent_child, ms, sized

CALLS = sized(400, 10)
ROUNDS = sized(5, 1)

CHILD = textwrap.dedent(
    """
    import json, statistics, sys, time

    import otel_replay

    CALLS = int(sys.argv[3])


    def lookup(order_id: str) -> dict:
        return {"id": order_id, "status": "shipped", "total": 42.5, "items": [1, 2, 3]}


    lookup_order = otel_replay.tool(name="lookup_order")(lookup)


    def measure() -> dict:
        replayed, direct = [], []
        for n in range(CALLS):
            started = time.perf_counter()
            lookup_order(f"A-{n}")
            replayed.append(time.perf_counter() - started)
            started = time.perf_counter()
            lookup(f"A-{n}")
            direct.append(time.perf_counter() - started)
        return {"replayed": statistics.median(replayed), "direct": statistics.median(direct)}


    cassette, how = sys.argv[1], sys.argv[2]
    if how == "record":
        with otel_replay.record(cassette):
            for n in range(CALLS):
                lookup_order(f"A-{n}")
    elif how == "in-process":
        with otel_replay.replay(cassette, mode="strict") as run:
            print(json.dumps(measure()))
        assert run.summary.tools_replayed == CALLS, run.summary
    else:  # under `otel-replay replay`
        print(json.dumps(measure()))
    """
)


def _child(folder: Path, *args: str, under: list[str] | None = None) -> dict[str, float]:
    found: dict[str, float] = agent_child(folder, *args, under=under, what="own tools benchmark")
    return found


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "agent.py").write_text(CHILD)
        cassette = str(folder / "tools.json")
        _child(folder, cassette, "record", str(CALLS))
        gateway = [sys.executable, "-m", "otel_replay", "replay", "--mode", "strict"]
        gateway += ["--cassette", cassette, "--"]
        rows: dict[str, list[dict[str, float]]] = {"in-process": [], "gateway": []}
        for _ in range(ROUNDS):
            rows["in-process"].append(_child(folder, cassette, "in-process", str(CALLS)))
            rows["gateway"].append(_child(folder, cassette, "measure", str(CALLS), under=gateway))
    for how, found in rows.items():
        added = [r["replayed"] - r["direct"] for r in found]
        median = sorted(added)[len(added) // 2]
        direct = sorted(r["direct"] for r in found)[len(found) // 2]
        where = "the gateway in process" if how == "in-process" else "the gateway over HTTP"
        results.add(
            "17 own tools",
            f"{CALLS} @otel_replay.tool calls replayed (strict, {where}): added per call",
            f"+{ms(median)}",
            f"the function called directly {ms(direct)}",
            None,
            "added <= 0.5 ms",
            rounds=[a <= 0.0005 for a in added],
        )
