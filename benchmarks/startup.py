"""11. Start-up: ``otel-replay replay -- true`` against ``python -c pass``.

What a user waits for before and after the agent itself: the command is run as a user
runs it, in a fresh process, with a one-recording cassette and ``true`` as the agent, so
the figure is the command's own cost. The baseline is the interpreter starting and doing
nothing, measured in the same run, alternating with it. Byte code is cached as in an
installed package (in a temporary ``PYTHONPYCACHEPREFIX``, after a warm-up run), whatever
the caller's ``PYTHONDONTWRITEBYTECODE``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import (
    ROOT,
    Results,
    chat_body,
    chat_exchange,
    chat_response,
    installed_env,
    ms,
    sized,
    write_cassette,
)
from otel_replay.core.exchange import Response

RUNS = sized(21, 2)
GOAL = 0.15  # seconds added to the interpreter's own start


def _wall(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cassette = write_cassette(
            folder / "c.json",
            [chat_exchange(chat_body(), Response(status=200, body=chat_response()))],
        )
        env = installed_env(folder / "pycache", dict(os.environ))
        replay = [sys.executable, "-m", "otel_replay", "replay", "--cassette", str(cassette)]
        replay += ["--mode", "strict", "--", "true"]
        bare = [sys.executable, "-c", "pass"]
        for command in (replay, replay, bare):  # byte code written, files in the page cache
            _wall(command, env)
        walls: dict[str, list[float]] = {"replay": [], "bare": []}
        for _ in range(RUNS):
            walls["replay"].append(_wall(replay, env))
            walls["bare"].append(_wall(bare, env))
    wall, interpreter = statistics.median(walls["replay"]), statistics.median(walls["bare"])
    added = wall - interpreter
    results.add(
        "11 start-up",
        "`otel-replay replay -- true`: wall time, added to the interpreter's start",
        f"{ms(wall)} (+{ms(added)})",
        f"python -c pass {ms(interpreter)}",
        wall / interpreter,
        f"added <= {ms(GOAL)}",
        added <= GOAL,
    )
    best, best_bare = min(walls["replay"]), min(walls["bare"])
    results.notes.append(
        f"11 start-up: best of {RUNS}: {ms(best)} against {ms(best_bare)} "
        f"(+{ms(best - best_bare)}; medians are in the table)"
    )
