"""8. Redaction of hostile text, which must take time linear in its size.

Inputs built to stall a backtracking regex engine (a run of ``eyJ``, repeated
``://user:``, ``aws_secret_key=`` or ``?key=``, an unterminated private key) and one dense
with token-shaped values (every ``Bearer`` followed by a 64-letter word, all redacted) are
redacted at 100 KB and at 1 MB by a fresh ``Redactor`` with one environment secret, as the
gateway's is; the best of a few rounds counts. Rows: the worst growth from 100 KB to 1 MB
(10× the input: linear is 10× the time), the worst trap against 1 MB of plain prose, and
the dense text for reference (each redaction costs a call back into Python).
"""

from __future__ import annotations

import time

from benchmarks._common import Results, ms, sized
from otel_replay.redaction.redact import Redactor

SMALL, LARGE = sized(100_000, 2_000), sized(1_000_000, 20_000)
ROUNDS = sized(3, 1)
TRAPS = {
    "jwt": "eyJ",
    "url-password": "://user:",
    "aws": "aws_secret_key=",
    "query": "?key=",
    "private-key": "-----BEGIN PRIVATE KEY-----",
}
DENSE = "Bearer " + "a" * 64 + " "
PLAIN = "The agent read the file, ran the tests and reported the results to the user. "


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _best(text: str) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        redactor = Redactor({"SERVICE_TOKEN": "s3cr3t-value-1234"})
        started = time.perf_counter()
        redactor.text(text)
        best = min(best, time.perf_counter() - started)
    return best


async def run(results: Results) -> None:
    plain = _best(_fill(PLAIN, LARGE))
    growth: dict[str, float] = {}
    large: dict[str, float] = {}
    for name, unit in {**TRAPS, "dense": DENSE}.items():
        small = _best(_fill(unit, SMALL))
        large[name] = _best(_fill(unit, LARGE))
        growth[name] = large[name] / max(small, 1e-9) / (LARGE / SMALL)
    worst_growth = max(growth, key=growth.__getitem__)
    results.add(
        "8 redaction",
        f"hostile text 100 KB → 1 MB, worst of {len(growth)} ({worst_growth}), "
        "time growth per unit of size",
        f"{growth[worst_growth]:.2f}",
        "1.00 = linear",
        growth[worst_growth],
        "≤ 1.5 (linear)",
        growth[worst_growth] <= 1.5,
    )
    worst_trap = max(TRAPS, key=large.__getitem__)
    results.add(
        "8 redaction",
        f"1 MB built to make a backtracking engine stall, worst of {len(TRAPS)} ({worst_trap})",
        ms(large[worst_trap]),
        f"1 MB plain prose {ms(plain)}",
        large[worst_trap] / plain,
        "≤ 25× plain",
        large[worst_trap] <= 25 * plain,
    )
    results.add(
        "8 redaction",
        f"1 MB dense with tokens ({LARGE // len(DENSE):,} redacted)",
        ms(large["dense"]),
        f"1 MB plain prose {ms(plain)}",
        large["dense"] / plain,
        "reference",
    )
