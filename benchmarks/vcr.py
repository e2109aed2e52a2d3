"""7. The in-process alternative: the same replay through vcrpy, the reference users know.

The same aiohttp client sends the same distinct chat turns, sequentially: replayed by vcrpy
inside the client's process, matching on method, URL and body (what telling model calls
apart needs) and with vcrpy's default method + URL matching (which replays recordings in
order whatever the body says); and by the gateway in strict replay in its own process.
vcrpy's cassette is recorded against the bare server of benchmark 1; the gateway's is
built directly.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
from pathlib import Path

import vcr as vcrpy

from benchmarks._common import (
    CHAT,
    Results,
    Server,
    chat_body,
    chat_exchange,
    chat_response,
    client_session,
    compact,
    drive,
    ms,
    post,
    sized,
    write_cassette,
)
from otel_replay.core.exchange import Response

REQUESTS = sized(100, 10)
ROUNDS = sized(2, 1)
DEFAULT_MATCH = ("method", "scheme", "host", "port", "path", "query")
MATCH_ON = ("method", "scheme", "host", "port", "path", "query", "body")


async def _series(url: str, bodies: list[bytes]) -> list[float]:
    async with client_session() as session:
        timing = await drive(lambda i: post(session, url + CHAT, bodies[i]), len(bodies))
    return timing.latencies


async def run(results: Results) -> None:
    logging.getLogger("vcr").setLevel(logging.WARNING)
    raw = [chat_body(i) for i in range(REQUESTS)]
    bodies = [compact(b) for b in raw]
    response = chat_response()
    gw_p50, vcr_p50, vcr_url_p50 = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        body_file = Path(tmp) / "body.json"
        body_file.write_bytes(compact(response))
        tape = str(Path(tmp) / "vcr.yaml")
        replay = write_cassette(
            Path(tmp) / "replay.json",
            [chat_exchange(b, Response(status=200, body=response)) for b in raw] * (ROUNDS + 1),
        )
        with Server(kind="bare", body=body_file) as bare:
            with vcrpy.use_cassette(tape, record_mode="all", match_on=MATCH_ON):
                await _series(bare.url, bodies)
            url = bare.url  # vcrpy replays what it recorded for this URL; the server is gone
        with Server(kind="gateway", mode="strict", cassette=replay) as gateway:
            await _series(gateway.url, bodies)
            for _ in range(ROUNDS):
                with vcrpy.use_cassette(tape, record_mode="none", match_on=MATCH_ON):
                    vcr_p50.append(statistics.median(await _series(url, bodies)))
                with vcrpy.use_cassette(tape, record_mode="none", match_on=DEFAULT_MATCH):
                    vcr_url_p50.append(statistics.median(await _series(url, bodies)))
                gw_p50.append(statistics.median(await _series(gateway.url, bodies)))
    gw, vc = statistics.median(gw_p50), statistics.median(vcr_p50)
    vc_url = statistics.median(vcr_url_p50)
    results.add(
        "7 vcrpy",
        f"sequential p50, gateway vs vcrpy matching the body ({REQUESTS} recordings)",
        ms(gw),
        ms(vc),
        gw / vc,
        "reference",
        basis="vcrpy",
    )
    results.add(
        "7 vcrpy",
        "sequential p50, gateway vs vcrpy default matching (method + URL only)",
        ms(gw),
        ms(vc_url),
        gw / vc_url,
        "reference",
        basis="vcrpy",
    )
