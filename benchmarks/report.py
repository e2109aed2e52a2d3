"""9 report: the HTML report of a 10,000-span run against a 100-span one.

The trace files are generated as for ``6 build`` (agent runs of ten spans, one a model
call recorded by the gateway). Two ratios: the time ``otel-replay report`` takes per span
(flat: generation is linear in the spans), and the time headless Chromium takes from
navigation to the first rendered rows (the page's ``otel-replay-ready`` mark), which the
page keeps near constant by rendering only the rows in view. Chromium is Debian's
(``make test`` installs it); the best of three loads counts, and the best of seven
generations of the small report (about 10 ms) and of two of the large one.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks._common import Results, sized
from benchmarks.build import generate
from otel_replay.frontends.reportcmd import report_command
from otel_replay.testing.browser import browser_page

SIZES = sized((100, 10_000), (100, 1_000))
RUNS = dict(zip(SIZES, (7, 2), strict=True))  # a 100-span report takes ~10 ms: noise moves it
LOADS = 3
READY = "performance.getEntriesByName('otel-replay-ready')[0].startTime"


async def _render_ms(page_file: Path) -> float:
    best = float("inf")
    async with browser_page() as page:
        for _ in range(LOADS):
            await page.open(page_file.as_uri())
            best = min(best, float(await page.eval(READY)))
        if page.errors:
            raise RuntimeError(f"the report page logged errors: {page.errors[:3]}")
    return best


def _generate_s(traces: Path, page: Path) -> float:
    started = time.perf_counter()
    if report_command([traces], page) != 0:
        raise RuntimeError("otel-replay report failed")
    return time.perf_counter() - started


async def run(results: Results) -> None:
    generated: dict[int, float] = {}
    rendered: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.jsonl"
        generate(warm, 10)
        report_command([warm], warm.with_suffix(".html"))  # imports out of the timing
        for size in SIZES:
            traces, page = Path(tmp) / f"t{size}.jsonl", Path(tmp) / f"r{size}.html"
            generate(traces, size)
            generated[size] = min(_generate_s(traces, page) for _ in range(RUNS[size]))
            rendered[size] = await _render_ms(page)
            results.notes.append(
                f"9 report: {size:,} spans -> {page.stat().st_size / 1e6:.1f} MB of HTML"
            )
    small, large = SIZES
    per_span = (generated[large] / large) / (generated[small] / small)
    results.add(
        "9 report",
        f"`report` time per span, {large:,} vs {small:,} spans",
        f"{generated[large] / large * 1e6:.0f} µs/span",
        f"{generated[small] / small * 1e6:.0f} µs/span",
        per_span,
        "flat (<= 1.5x)",
        per_span <= 1.5,
        basis=f"{small:,} spans",
    )
    ratio = rendered[large] / rendered[small]
    results.add(
        "9 report",
        f"Chromium: load to first rows, {large:,} vs {small:,} spans",
        f"{rendered[large]:.0f} ms",
        f"{rendered[small]:.0f} ms",
        ratio,
        "<= 10x",
        ratio <= 10,
        basis=f"{small:,} spans",
    )
