"""Load: hundreds of concurrent requests in strict replay, each answered with its own
recording, and concurrent OTLP exporters (HTTP and gRPC) losing no span."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_replay.cassette.model import Cassette, dump, load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp import codec
from otel_replay.testing.stub import StubUpstream

DISTINCT = 500
IDENTICAL = 50
KEY = "sk-test-load-0123456789abcdef"


def _body(text: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}


async def _post_all(url: str, bodies: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    """Every body posted at once, over as many connections as there are bodies."""
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        start = asyncio.Event()

        async def one(body: dict[str, Any]) -> tuple[int, Any]:
            await start.wait()
            async with http.post(
                url, json=body, headers={"authorization": f"Bearer {KEY}"}
            ) as resp:
                return resp.status, await resp.json()

        tasks = [asyncio.ensure_future(one(b)) for b in bodies]
        await asyncio.sleep(0)
        start.set()
        return list(await asyncio.gather(*tasks))


def _gateway(
    mode: str,
    cassette: Path,
    stub: StubUpstream | None = None,
    traces: Path | None = None,
    grpc: bool = False,
) -> GatewayThread:
    return GatewayThread(
        GatewayConfig(
            mode=mode,
            cassette=cassette,
            traces=traces,
            grpc_port=0 if grpc else None,
            upstream_openai=stub.openai_url if stub else "http://127.0.0.1:9/v1",
            environ={"OPENAI_API_KEY": KEY},
        )
    )


@pytest.fixture(scope="module")
def five_hundred(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cassette of 500 distinct recordings, itself recorded under 500-way concurrency."""
    cassette = tmp_path_factory.mktemp("load") / "c.json"

    async def record() -> None:
        async with StubUpstream() as stub:
            gw = _gateway("record", cassette, stub).start()
            try:
                url = gw.env["OPENAI_BASE_URL"] + "/chat/completions"
                answers = await _post_all(url, [_body(f"question {i}") for i in range(DISTINCT)])
            finally:
                await asyncio.get_running_loop().run_in_executor(None, gw.stop)
        assert all(status == 200 for status, _ in answers)

    asyncio.run(record())
    assert len(load(cassette).interactions) == DISTINCT
    return cassette


async def test_500_concurrent_distinct_requests_each_get_their_own_recording(
    five_hundred: Path,
) -> None:
    gw = _gateway("strict", five_hundred).start()
    try:
        order = list(range(DISTINCT))[::-1]  # not the recording order
        url = gw.env["OPENAI_BASE_URL"] + "/chat/completions"
        answers = await _post_all(url, [_body(f"question {i}") for i in order])
    finally:
        summary = await asyncio.get_running_loop().run_in_executor(None, gw.stop)
    for i, (status, body) in zip(order, answers, strict=True):
        assert status == 200, body
        assert body["choices"][0]["message"]["content"] == f"stub reply to: question {i}"
    assert summary.replayed == DISTINCT and summary.misses == [] and summary.unused == []
    assert sorted(summary.hits) == list(range(DISTINCT))


async def test_50_identical_concurrent_requests_consume_50_distinct_recordings(
    five_hundred: Path, tmp_path: Path
) -> None:
    one = load(five_hundred).interactions[0]
    recordings = []
    for i in range(IDENTICAL):
        ex = copy.deepcopy(one)
        ex.response.body["choices"][0]["message"]["content"] = f"recording {i}"
        recordings.append(ex)
    cassette = tmp_path / "same.json"
    dump(Cassette(interactions=recordings, source={}), cassette)
    prompt = one.raw_request["messages"][0]["content"]
    gw = _gateway("strict", cassette).start()
    try:
        url = gw.env["OPENAI_BASE_URL"] + "/chat/completions"
        answers = await _post_all(url, [_body(prompt)] * (IDENTICAL + 1))
    finally:
        summary = await asyncio.get_running_loop().run_in_executor(None, gw.stop)
    texts = sorted(
        body["choices"][0]["message"]["content"] for status, body in answers if status == 200
    )
    assert texts == sorted(f"recording {i}" for i in range(IDENTICAL))
    assert [status for status, _ in answers].count(400) == 1  # one more than recorded
    assert summary.replayed == IDENTICAL and len(summary.misses) == 1
    assert "more model calls than the 50 recorded" in summary.misses[0]


def test_concurrent_http_and_grpc_exporters_lose_no_span(
    five_hundred: Path, tmp_path: Path
) -> None:
    traces = tmp_path / "t.jsonl"
    exporters, per_exporter = 6, 400
    with _gateway("strict", five_hundred, traces=traces, grpc=True) as gw:
        assert gw.server is not None and gw.server.grpc_port
        providers = []
        for n in range(exporters):
            if n % 2:
                exporter: Any = GrpcSpanExporter(
                    endpoint=f"http://127.0.0.1:{gw.server.grpc_port}", insecure=True
                )
            else:
                exporter = HttpSpanExporter(endpoint=gw.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
            provider = TracerProvider(resource=Resource.create({"service.name": f"svc-{n}"}))
            provider.add_span_processor(
                BatchSpanProcessor(exporter, max_export_batch_size=64, schedule_delay_millis=5)
            )
            providers.append(provider)
        barrier = threading.Barrier(exporters)

        def emit(n: int) -> None:
            tracer = providers[n].get_tracer("load")
            barrier.wait()
            for i in range(per_exporter):
                with tracer.start_as_current_span(f"svc-{n}-span-{i}"):
                    pass
            assert providers[n].force_flush(30_000)

        threads = [threading.Thread(target=emit, args=(n,)) for n in range(exporters)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for provider in providers:
            provider.shutdown()
        assert gw.session.store.spans_received == exporters * per_exporter
    names = set()
    for line in traces.read_text().splitlines():
        for item in codec.iter_spans(codec.traces_from_json(json.loads(line))):
            span = item[-1] if isinstance(item, tuple) else item
            names.add(span.name)
    expected = {f"svc-{n}-span-{i}" for n in range(exporters) for i in range(per_exporter)}
    assert names == expected
