"""``python -m benchmarks [--quick] [NAME...]``: run the benchmarks, print the table,
write ``benchmarks/results.md`` (a full run of all of them only; ``--quick`` shrinks every
workload to a smoke test of the benchmark code and writes nothing)."""

from __future__ import annotations

import asyncio
import importlib
import platform
import sys
import time
from pathlib import Path

from benchmarks import _common
from benchmarks._common import Results

BENCHMARKS = (
    "replay",
    "streaming",
    "record",
    "ingest",
    "cassette_scale",
    "build",
    "vcr",
    "redaction",
    "report",
    "session",
    "startup",
    "loading",
    "small_calls",
    "backends",
    "mcp_tools",
    "own_tools",
    "users",
    "in_process",
    "websockets",
)


def table(results: Results) -> str:
    lines = [
        "| # | measure | otel-replay | baseline | ratio | goal | |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results.rows:
        verdict = f"**{r.verdict}**" if r.met is False else r.verdict
        lines.append(
            f"| {r.bench} | {r.measure} | {r.value} | {r.baseline} | {r.ratio_text} | {r.goal} "
            f"| {verdict} |"
        )
    return "\n".join(lines)


async def main(names: list[str]) -> Results:
    results = Results()
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"[{name}]", flush=True)
        started = time.perf_counter()
        await module.run(results)
        print(f"  ({time.perf_counter() - started:.1f} s)", flush=True)
    return results


if __name__ == "__main__":
    args = sys.argv[1:]
    _common.QUICK = "--quick" in args
    chosen = [a for a in args if a != "--quick"] or list(BENCHMARKS)
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        sys.exit(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    started = time.perf_counter()
    results = asyncio.run(main(chosen))
    text = table(results)
    print()
    print(text)
    for note in results.notes:
        print(f"- {note}")
    header = (
        "# Benchmark results\n\n"
        f"`python -m benchmarks` on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()}, "
        f"{len(__import__('os').sched_getaffinity(0))} cores; "
        f"{time.perf_counter() - started:.0f} s. Ratios are against the baseline measured "
        "in the same run (lower is better unless stated).\n\n"
    )
    notes = "".join(f"- {n}\n" for n in results.notes)
    if chosen == list(BENCHMARKS) and not _common.QUICK:
        Path(__file__).with_name("results.md").write_text(
            header + text + "\n" + ("\n" + notes if notes else "")
        )
