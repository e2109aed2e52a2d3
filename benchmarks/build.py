"""6. build: spans per second and peak memory deriving a cassette from a trace file of
10,000 and of 100,000 spans.

The file is generated: agent runs of ten spans, one of them a model call recorded by the
gateway (exact bodies) and nine the agent's own spans (tool calls, HTTP calls, steps), each
run its own trace, written as OTLP JSON lines of 500 spans. Each build runs in a fresh
subprocess, which reports the time and its peak resident memory above what it held before
the build (what users see; tracemalloc would triple the run time). It runs what
``otel-replay build`` runs, ``build_file``: each interaction spills to disk as it is read
and the cassette is written in start-time order at the end, so memory stays flat in the
size of the trace file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._common import ROOT, Results, chat_body, chat_exchange, chat_response, sized
from benchmarks.ingest import agent_batch
from otel_replay.core.exchange import Response
from otel_replay.otlp import codec
from otel_replay.spans.encode import exchange_to_span, export_request

SIZES = sized((10_000, 100_000), (1_000, 2_000))
RUN = 10
LINE = 500

_CHILD = """
import gc, json, os, sys, time
from pathlib import Path
from otel_replay.pipeline.build import build_file
from otel_replay.redaction.redact import Redactor

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def hwm():  # this process's peak RSS (ru_maxrss would include the parent's at fork)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")

path = Path(sys.argv[1])
redactor = Redactor.from_environment()
gc.collect()
before = rss()
started = time.perf_counter()
report = build_file([path], path.with_suffix(".cassette.json"), redactor=redactor,
                    on_error=lambda exc: None)
seconds = time.perf_counter() - started
peak = hwm()
out = {"seconds": seconds, "exchanges": report.interactions, "peak": peak - before}
print(json.dumps(out))
"""


def generate(path: Path, spans: int) -> None:
    """Agent runs of ``RUN`` spans, each run one trace, ``LINE`` spans per line."""
    template = agent_batch(1, RUN - 1)
    response = Response(status=200, body=chat_response())
    with open(path, "w", encoding="utf-8") as out:
        pending = []
        for run in range(spans // RUN):
            trace_id = (run + 1).to_bytes(16, "big")
            ex = chat_exchange(chat_body(run), response)
            ex.trace_id = trace_id.hex()
            ex.span_id = (run * RUN + 1).to_bytes(8, "big").hex()
            ex.start_ns += run * 1_000_000
            ex.end_ns += run * 1_000_000
            pending.append(exchange_to_span(ex))
            for i, span in enumerate(template.resource_spans[0].scope_spans[0].spans):
                copy = type(span)()
                copy.CopyFrom(span)
                copy.trace_id = trace_id
                copy.span_id = (run * RUN + 2 + i).to_bytes(8, "big")
                pending.append(copy)
            if len(pending) >= LINE:
                out.write(codec.json_line(export_request(pending)) + "\n")
                pending = []
        if pending:
            out.write(codec.json_line(export_request(pending)) + "\n")


def _child(path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def run(results: Results) -> None:
    found: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            path = Path(tmp) / f"traces{size}.jsonl"
            generate(path, size)
            timed = found[size] = _child(path)
            results.notes.append(
                f"6 build: {size:,} spans = {path.stat().st_size / 1e6:.0f} MB of OTLP JSON "
                f"lines -> {int(timed['exchanges']):,} interactions"
            )
    small, large = (found[s] for s in SIZES)
    rate_small = SIZES[0] / small["seconds"]
    rate_large = SIZES[1] / large["seconds"]
    results.add(
        "6 build",
        f"spans per second, {SIZES[1]:,} vs {SIZES[0]:,} spans (time per span)",
        f"{rate_large:,.0f} spans/s",
        f"{rate_small:,.0f} spans/s",
        rate_small / rate_large,
        "flat (<= 1.3x)",
        rate_small / rate_large <= 1.3,
        basis=f"{SIZES[0]:,} spans",
    )
    results.add(
        "6 build",
        f"peak RSS growth, {SIZES[1]:,} vs {SIZES[0]:,} spans",
        f"{large['peak'] / 1e6:.0f} MB",
        f"{small['peak'] / 1e6:.0f} MB",
        large["peak"] / small["peak"],
        "flat (<= 1.5x)",
        large["peak"] / small["peak"] <= 1.5,
        basis=f"{SIZES[0]:,} spans",
    )
