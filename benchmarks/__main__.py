"""``python -m benchmarks [NAME...]``: run the benchmarks, print the table, write
``benchmarks/results.md``."""

from __future__ import annotations

import asyncio
import importlib
import platform
import sys
import time
from pathlib import Path

from benchmarks._common import Results

BENCHMARKS = ("replay", "streaming", "record", "ingest", "cassette_scale", "build", "vcr")


def table(results: Results) -> str:
    lines = [
        "| # | measure | otel-replay | baseline | ratio | goal | |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results.rows:
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
        verdict = {True: "met", False: "**missed**", None: ""}[r.met]
        lines.append(
            f"| {r.bench} | {r.measure} | {r.value} | {r.baseline} | {ratio} | {r.goal} "
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
    chosen = sys.argv[1:] or list(BENCHMARKS)
    started = time.perf_counter()
    results = asyncio.run(main(chosen))
    text = table(results)
    print()
    print(text)
    header = (
        "# Benchmark results\n\n"
        f"`python -m benchmarks` on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()}, "
        f"{len(__import__('os').sched_getaffinity(0))} cores; "
        f"{time.perf_counter() - started:.0f} s. Ratios are against the baseline measured "
        "in the same run (lower is better unless stated).\n\n"
    )
    notes = "".join(f"- {n}\n" for n in results.notes)
    if chosen == list(BENCHMARKS):
        Path(__file__).with_name("results.md").write_text(
            header + text + "\n" + ("\n" + notes if notes else "")
        )
