"""14 backends: ``build --from clickhouse+…`` for one incident in a table of 10,000 and
of 1,000,000 spans.

The table is the Collector ClickHouse exporter's own (its schema in
``tests/backend_fixtures``), in chDB behind ClickHouse's HTTP interface
(``otel_replay/testing/clickhouse_http.py``; ``make backends`` installs chDB). Its spans
are a week of another service's traffic, ten spans a trace, made by ClickHouse itself
(``INSERT … SELECT FROM numbers(N)``), and one incident: 50 spans of one trace, ten of them
model calls recorded by the gateway, written as the exporter writes them; the tables are
then merged (``OPTIMIZE … FINAL``), as they are at rest. Each build runs ``build_file`` on
the incident's trace id in a fresh subprocess, which reports the time of the build and its
peak resident memory above what it held before it; after each, the backend's statements
alone (the same SQL, the answer read to the end) are timed from here (best times and
highest peak of five). Goals: memory flat in the size of the table (the selection is the
backend's query, and its answer is read a row at a time), and the time beyond the
backend's query flat too: a larger table costs only what the backend's query costs. On
the larger table, ``doctor --from`` also reads every span of a time window, 100,000 and
30,000 of them (both past the 20,000 spans the readers hold at most while they wait for
a model call in a trace), through the readers: memory flat in the number streamed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import ROOT, Results, chat_body, chat_exchange, chat_response, sized
from benchmarks.ingest import agent_batch
from otel_replay.core.exchange import Response
from otel_replay.readers import Selection
from otel_replay.sources.clickhouse import query_text
from otel_replay.spans.encode import exchange_to_span, export_request
from otel_replay.testing.clickhouse_http import ClickHouse, running
from otel_replay.testing.exporter_rows import exporter_rows, exporter_schema

SIZES = sized((10_000, 1_000_000), (1_000, 2_000))
INCIDENT_SPANS, INCIDENT_CALLS = 50, 10
USER, PASSWORD = "bench", "bench-pw"
WEEK_NS = 7 * 86_400 * 10**9
START_NS = 1_700_000_000 * 10**9
INCIDENT = "1ce1de47" * 4
ROUNDS = sized(5, 1)
# spans of a window read through ``doctor --from``: both past the 20,000 agent spans the
# readers hold while they wait for a model call in the same trace (``readers.agent_spans``)
STREAMED = sized((30_000, 100_000), (100, 1_000))

_CHILD = """
import gc, json, os, sys, time
from otel_replay.pipeline.build import build_file, survey
from otel_replay.readers import Selection
from otel_replay.redaction.redact import Redactor
from otel_replay.sources import open_source

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")

address, trace_id, output, since, until = sys.argv[1:]
redactor = Redactor.from_environment()
if trace_id:
    pull = open_source(address, Selection(trace_ids=frozenset([trace_id])))
else:
    pull = open_source(address, Selection(since_ns=int(since), until_ns=int(until)))
gc.collect()
before = rss()
started = time.perf_counter()
if trace_id:
    calls = build_file(pull, output, redactor=redactor, trace_ids=[trace_id]).interactions
else:  # every span of a time window, streamed through the readers (doctor)
    calls = survey(pull, since_ns=int(since), until_ns=int(until)).calls
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "exchanges": calls, "peak": hwm() - before,
                  "read": pull.read}))
"""


def fill(server: ClickHouse, spans: int) -> None:
    """A week of another service's spans (``spans`` less the incident's), then the
    incident's trace, as the exporter writes it."""
    noise = spans - INCIDENT_SPANS
    step = WEEK_NS // max(noise, 1)
    server.query(
        "INSERT INTO otel.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName,"
        " SpanKind, ServiceName, ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes,"
        " Duration, StatusCode)"
        f" SELECT fromUnixTimestamp64Nano(toInt64({START_NS} + number * {step})),"
        " lower(hex(MD5(toString(intDiv(number, 10))))),"
        " lower(hex(substring(MD5(toString(number)), 1, 8))),"
        " '', ['GET /api/items', 'SELECT orders', 'execute_tool lookup'][number % 3 + 1],"
        " 'Server', 'shop-api',"
        " map('service.name', 'shop-api', 'host.name', 'web-' || toString(number % 16)),"
        " 'opentelemetry.instrumentation.flask', '0.48b0',"
        " map('http.request.method', 'GET', 'http.route', '/api/items/{id}',"
        " 'http.response.status_code', '200',"
        " 'url.full', 'https://shop.example.com/api/items/' || toString(number)),"
        f" 1000000 + number % 5000, 'Unset' FROM numbers({noise})"
    )  # fmt: skip
    server.insert("otel.otel_traces", exporter_rows(incident()))


def incident() -> object:
    """One trace of ``INCIDENT_SPANS``: ``INCIDENT_CALLS`` model calls among the agent's
    own spans, in the middle of the week."""
    trace_id = bytes.fromhex(INCIDENT)
    at = START_NS + WEEK_NS // 2
    spans = []
    response = Response(status=200, body=chat_response())
    for n in range(INCIDENT_CALLS):
        ex = chat_exchange(chat_body(n), response)
        ex.trace_id, ex.span_id = INCIDENT, (n + 1).to_bytes(8, "big").hex()
        ex.start_ns, ex.end_ns = at + n * 10**9, at + n * 10**9 + 5 * 10**8
        spans.append(exchange_to_span(ex))
    others = agent_batch(1, INCIDENT_SPANS - INCIDENT_CALLS).resource_spans[0].scope_spans[0]
    for i, span in enumerate(others.spans):
        span.trace_id = trace_id
        span.span_id = (1000 + i).to_bytes(8, "big")
        span.start_time_unix_nano = at + i * 10**8
        span.end_time_unix_nano = at + i * 10**8 + 10**7
        spans.append(span)
    return export_request(spans)


def _child(address: str, output: Path, window: tuple[int, int] | None = None) -> dict[str, float]:
    """The build of the incident, or (``window``) the survey of every span in it."""
    trace_id, since, until = (INCIDENT, 0, 0) if window is None else ("", *window)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, address, trace_id, str(output), str(since), str(until)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"CLICKHOUSE_USER": USER, "CLICKHOUSE_PASSWORD": PASSWORD, "PATH": "/usr/bin:/bin",
             "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _query_seconds(server: ClickHouse) -> float:
    """The build's two statements alone (is the trace-range table there; the SELECT),
    the answer read to the end."""
    selection = Selection(trace_ids=frozenset([INCIDENT]))
    window = (
        "Timestamp >= (SELECT min(Start) FROM `otel`.`otel_traces_trace_id_ts` WHERE TraceId IN"
        f" ('{INCIDENT}')) AND Timestamp <= (SELECT max(End) + 1 FROM"
        f" `otel`.`otel_traces_trace_id_ts` WHERE TraceId IN ('{INCIDENT}'))"
    )
    sql = query_text("otel", "otel_traces", selection, window, by_trace=False)
    started = time.perf_counter()
    server.query("EXISTS TABLE `otel`.`otel_traces_trace_id_ts`")
    answer = server.query(sql)
    seconds = time.perf_counter() - started
    assert answer.count(b"\n") == INCIDENT_SPANS, answer[:200]
    return seconds


def _stream(results: Results, address: str, folder: Path, size: int) -> None:
    """``doctor --from`` over every span of a window of the table, for each size in
    ``STREAMED``."""
    step = WEEK_NS // (size - INCIDENT_SPANS)
    peaks = {}
    for count in STREAMED:
        window = (START_NS, START_NS + count * step)
        timed = _child(address, folder / "survey.json", window)
        peaks[count] = timed["peak"]
        results.notes.append(
            f"14 backends: doctor --from over {count:,} spans ({timed['read'] / 1e6:.0f} MB"
            f" of JSONEachRow) in {timed['seconds']:.1f} s"
        )
    small, large = (peaks[count] for count in STREAMED)
    results.add(
        "14 backends",
        f"peak RSS growth, doctor --from clickhouse streaming {STREAMED[1]:,} vs"
        f" {STREAMED[0]:,} spans",
        f"{large / 1e6:.1f} MB",
        f"{small / 1e6:.1f} MB",
        large / small,
        "flat (<= 1.5x)",
        large / small <= 1.5,
    )


async def run(results: Results) -> None:
    found: dict[int, dict[str, float]] = {}
    for size in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            python = Path(sys.prefix) / "chdb" / "bin" / "python"
            schema = Path(tmp) / "exporter-schema.sql"  # the exporter's own DDL (make go)
            schema.write_text(exporter_schema(), encoding="utf-8")
            with running(python, Path(tmp), schema, USER, PASSWORD) as server:
                started = time.perf_counter()
                fill(server, size)
                filled = time.perf_counter() - started
                address = f"clickhouse+{server.url}/otel"
                for table in ("otel_traces", "otel_traces_trace_id_ts"):  # merged, as at rest
                    server.query(f"OPTIMIZE TABLE otel.{table} FINAL")
                _child(address, Path(tmp) / "warm.json")  # the table's first read
                runs, queries = [], []
                for _ in range(ROUNDS):  # the build and the query alone, taking turns
                    runs.append(_child(address, Path(tmp) / "incident.json"))
                    queries.append(_query_seconds(server))
                if size == SIZES[1]:
                    _stream(results, address, Path(tmp), size)
                timed = found[size] = {
                    "seconds": min(r["seconds"] for r in runs),
                    "peak": max(r["peak"] for r in runs),
                    "exchanges": runs[0]["exchanges"],
                    "query": min(queries),
                }
            results.notes.append(
                f"14 backends: {size:,} spans in the exporter's table (filled in {filled:.1f} s)"
                f" -> {int(timed['exchanges'])} interactions in {timed['seconds'] * 1000:.0f} ms,"
                f" the backend's query alone {timed['query'] * 1000:.0f} ms"
                f" ({100 * timed['query'] / timed['seconds']:.0f}% of the build)"
            )
    small, large = (found[s] for s in SIZES)
    results.add(
        "14 backends",
        f"peak RSS growth, build --from clickhouse, {SIZES[1]:,} vs {SIZES[0]:,} spans",
        f"{large['peak'] / 1e6:.1f} MB",
        f"{small['peak'] / 1e6:.1f} MB",
        large["peak"] / small["peak"],
        "flat (<= 1.5x)",
        large["peak"] / small["peak"] <= 1.5,
    )
    own_small = max(small["seconds"] - small["query"], 1e-3)
    own_large = max(large["seconds"] - large["query"], 1e-3)
    results.add(
        "14 backends",
        f"build time beyond the backend's query, {SIZES[1]:,} vs {SIZES[0]:,} spans",
        f"{own_large * 1000:.0f} ms",
        f"{own_small * 1000:.0f} ms",
        own_large / own_small,
        "flat (<= 1.5x): the table's size costs only its query",
        own_large / own_small <= 1.5,
    )
