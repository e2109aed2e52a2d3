"""13. Loading a large cassette: 1,000 coding-agent interactions to ready.

25 sessions of 40 turns from benchmark 10's generator (the same agent: one system prompt
and one set of tools; each session its own conversation) are written with ``dump``, in
whatever format it writes. A fresh process then opens the session a gateway would run
(``open_session`` and ``prepare``: the cassette loaded, the matcher's index built, ready
to answer), timed, and its peak resident memory is taken above what the process held before. The
baselines, from the same run: the session's unique content (each distinct message,
tool, system prompt and answer once) for memory, and parsing that content as JSON (the
least a load can do) for time.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import (
    ROOT,
    Results,
    chat_exchange,
    chat_response,
    compact,
    ms,
    sized,
)
from benchmarks.session import RECORDED_AT, session_bodies, unique_content

SESSIONS = sized(25, 1)
ROUNDS = sized(2, 1)


def _bodies() -> list[dict[str, Any]]:
    return [
        body
        for conversation in range(SESSIONS)
        for body in session_bodies(RECORDED_AT, f"session-{conversation}", conversation)
    ]


def write(cassette: Path, unique: Path) -> None:
    """In a process of its own: the cassette, and the unique content as one JSON list."""
    from otel_replay.cassette.model import Cassette, dump
    from otel_replay.core.exchange import Response

    bodies = _bodies()
    answer = chat_response(words=1600)
    response = Response(status=200, body=answer)
    interactions = [chat_exchange(body, response) for body in bodies]
    dump(Cassette(interactions=interactions, source={"otel_replay": "bench"}), cassette)
    pieces = {compact(m) for b in bodies for m in [*b["messages"], *b["tools"]]}
    text = b"[" + b",".join([*sorted(pieces), *[compact(answer)] * len(bodies)]) + b"]"
    unique.write_bytes(text)
    assert len(text) >= unique_content(bodies, compact(answer))


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _high_water() -> int:
    """This process's peak resident memory. Not ``ru_maxrss``: Linux carries that over
    ``exec`` from the parent, so a child of a large benchmark process would report the
    parent's peak."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def ready(cassette: Path, unique: Path) -> dict[str, float]:
    """In a fresh process: seconds to ready and the peak memory it added (bytes)."""
    from otel_replay.gateway.runner import GatewayConfig, open_session

    before = _resident()
    started = time.perf_counter()
    session = open_session(GatewayConfig(mode="strict", cassette=cassette, environ={}))
    session.prepare()  # the index, which a gateway builds as it starts
    seconds = time.perf_counter() - started
    peak = _high_water() - before
    count = len(session.cassette.interactions)
    session.discard()
    started = time.perf_counter()
    json.loads(unique.read_bytes())
    parse = time.perf_counter() - started
    return {"seconds": seconds, "peak": peak, "parse": parse, "interactions": count}


# the child sizes its workload as this process does (``--quick`` included)
_CHILD = (
    "import sys; from benchmarks import _common; _common.QUICK = sys.argv[1] == '1'; "
    "from benchmarks.loading import main; main(sys.argv[2:])"
)


def _child(*args: str) -> str:
    quick = "1" if sized(False, True) else "0"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, quick, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"benchmarks.loading {args[0]}: {done.stderr[-2000:]}")
    return done.stdout


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cassette, unique = Path(tmp) / "large.json", Path(tmp) / "unique.json"
        _child("write", str(cassette), str(unique))
        runs = [json.loads(_child("ready", str(cassette), str(unique))) for _ in range(ROUNDS)]
        size, content = cassette.stat().st_size, unique.stat().st_size
    best = min(runs, key=lambda r: r["seconds"])
    count = int(best["interactions"])
    results.add(
        "13 loading",
        f"{count:,} coding-agent interactions: cassette loaded and indexed, ready",
        ms(best["seconds"]),
        f"parse the unique content {ms(best['parse'])}",
        best["seconds"] / best["parse"],
        "<= 1 s",
        best["seconds"] <= 1.0,
    )
    peak = min(r["peak"] for r in runs)
    results.add(
        "13 loading",
        "the same: peak resident memory added vs the unique content",
        f"{peak / 1e6:.0f} MB",
        f"{content / 1e6:.1f} MB",
        peak / content,
        "<= 3x",
        peak <= 3 * content,
        basis="unique content",
    )
    results.notes.append(
        f"13 loading: {SESSIONS} sessions, cassette {size / 1e6:.1f} MB "
        f"({size / content:.1f}x the unique content)"
    )


def main(args: list[str]) -> None:
    what, paths = args[0], [Path(p) for p in args[1:]]
    if what == "write":
        write(*paths)
    else:
        print(json.dumps(ready(*paths)))
