"""5. Cassette scale: load + index time and memory for 100 and 10,000 interactions, and
the cost of one lookup in each.

Loading goes through ``Session`` exactly as the gateway does (``load`` plus building the
matcher's index); memory is tracemalloc's peak during that, in a run of its own so the
timing is not slowed by tracing. A lookup is ``Matcher.probe`` of a live request equal to
the middle recording (it consumes nothing, so every call does the same work).
"""

from __future__ import annotations

import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

from benchmarks._common import (
    CHAT,
    Results,
    chat_body,
    chat_exchange,
    chat_response,
    sized,
    write_cassette,
)
from otel_replay import providers
from otel_replay.core.exchange import Response
from otel_replay.session.session import Session

SIZES = sized((100, 10_000), (20, 200))
PROBES = sized(2_000, 50)


def _cassette(path: Path, size: int) -> Path:
    response = Response(status=200, body=chat_response())
    return write_cassette(path, [chat_exchange(chat_body(i), response) for i in range(size)])


def _load(path: Path) -> Session:
    session = Session(mode="strict", cassette=path)
    session.prepare()  # the index, which a gateway builds as it starts
    return session


def _load_time(path: Path) -> float:
    best = float("inf")
    for _ in range(2):
        gc.collect()
        started = time.perf_counter()
        _load(path)
        best = min(best, time.perf_counter() - started)
    return best


def _load_memory(path: Path) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        session = _load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del session
    return peak


def _lookup(path: Path, size: int) -> float:
    session = _load(path)
    provider = providers.provider_for(CHAT, {})
    live = provider.canonical(CHAT, chat_body(size // 2))
    matcher = session.matcher
    assert matcher.probe(live) == size // 2
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(PROBES):
            matcher.probe(live)
        best = min(best, (time.perf_counter() - started) / PROBES)
    return best


def run_sync(results: Results) -> None:
    found: dict[int, tuple[float, int, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            path = _cassette(Path(tmp) / f"c{size}.json", size)
            found[size] = (_load_time(path), _load_memory(path), _lookup(path, size))
            size_mb = path.stat().st_size / 1e6
            results.notes.append(f"5 cassette scale: {size:,} interactions = {size_mb:.1f} MB")
    small, large = SIZES
    t_small, m_small, l_small = found[small]
    t_large, m_large, l_large = found[large]
    results.add(
        "5 cassette",
        f"load + index {large:,} interactions (per interaction vs at {small})",
        f"{t_large:.2f} s ({t_large / large * 1e6:.0f} us each)",
        f"{t_small * 1e3:.1f} ms ({t_small / small * 1e6:.0f} us each)",
        (t_large / large) / (t_small / small),
        "linear (~1x per item)",
        basis=f"{small} interactions",
    )
    results.add(
        "5 cassette",
        f"peak memory loading {large:,} (per interaction vs at {small})",
        f"{m_large / 1e6:.1f} MB ({m_large / large / 1e3:.1f} kB each)",
        f"{m_small / 1e6:.2f} MB ({m_small / small / 1e3:.1f} kB each)",
        (m_large / large) / (m_small / small),
        "linear (~1x per item)",
        basis=f"{small} interactions",
    )
    flat = l_large / l_small
    results.add(
        "5 cassette",
        f"one lookup in {large:,} vs in {small}",
        f"{l_large * 1e6:.1f} us",
        f"{l_small * 1e6:.1f} us",
        flat,
        "flat (<= 1.3x)",
        flat <= 1.3,
        basis=f"{small} interactions",
    )


async def run(results: Results) -> None:
    run_sync(results)
