"""``make bench`` keeps working: every benchmark runs end to end on a shrunken workload
(``--quick``) and produces its rows. The figures themselves are never asserted: these
machines are noisy, and ``benchmarks/results.md`` holds the real runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results.md"
EXPECTED_ROWS = {
    "1 replay": 4,
    "2 streaming": 6,
    "3 record": 6,
    "4 ingest": 2,
    "5 cassette": 3,
    "6 build": 2,
    "7 vcrpy": 2,
    "8 redaction": 3,
    "9 report": 2,
    "10 session": 9,
    "10 Claude Code": 9,
    "10 Codex": 9,
    "11 start-up": 1,
    "12 small calls": 2,
    "13 loading": 2,
    "14 backends": 3,
    "15 MCP tools": 2,
    "16 as users run it": 8,
    "17 own tools": 2,
    "18 in process": 3,
    "19 websockets": 3,
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


NUMBERS = {
    "replay": "1",
    "streaming": "2",
    "record": "3",
    "ingest": "4",
    "cassette_scale": "5",
    "build": "6",
    "vcr": "7",
    "redaction": "8",
    "report": "9",
    "session": "10",
    "startup": "11",
    "small_calls": "12",
    "loading": "13",
    "backends": "14",
    "mcp_tools": "15",
    "users": "16",
    "own_tools": "17",
    "in_process": "18",
    "websockets": "19",
}
"""Each benchmark's number, the first word of its rows' labels."""

CHUNKS = (
    ("users",),
    ("in_process", "session", "streaming"),
    ("backends", "mcp_tools", "own_tools", "small_calls", "report"),
    ("replay", "record", "ingest", "cassette_scale", "build", "vcr", "redaction", "startup"),
    ("loading", "websockets"),
)
"""The benchmarks in runs of a similar length, which the test workers share."""


def test_the_chunks_hold_every_benchmark_once() -> None:
    from benchmarks.__main__ import BENCHMARKS

    assert sorted(name for chunk in CHUNKS for name in chunk) == sorted(BENCHMARKS)
    assert sorted(NUMBERS) == sorted(BENCHMARKS)


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda chunk: "+".join(chunk))
def test_every_benchmark_runs_and_fills_its_rows(chunk: tuple[str, ...]) -> None:
    before = RESULTS.read_bytes()
    done = run("--quick", *chunk)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if re.match(r"\| \d+ ", line)]
    counts: dict[str, int] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        counts[cells[0]] = counts.get(cells[0], 0) + 1
        assert cells[2], row  # otel-replay's figure
        assert cells[4] == "-" or re.fullmatch(r"−?\d+\.\d\dx", cells[4]), row
    numbers = {NUMBERS[name] for name in chunk}
    assert counts == {k: v for k, v in EXPECTED_ROWS.items() if k.split()[0] in numbers}
    assert RESULTS.read_bytes() == before  # a quick run never overwrites the real results
    if "session" in chunk:
        # benchmark 10 records the captured-shape session through the gateway and replays it
        # strictly, with fresh values and byte for byte, without a miss (a miss fails it)
        assert "10 Claude Code: 4 requests of 48 KB to 74 KB" in done.stdout
        assert "10 Codex: 4 requests of 72 KB to 99 KB" in done.stdout


def test_an_unknown_benchmark_is_named() -> None:
    done = run("--quick", "replay", "nope")
    assert done.returncode == 1
    assert "unknown benchmark nope; choose from replay, streaming" in done.stderr


def _benchmark(module: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_ab_comparison_runs_each_tree() -> None:
    """``python -m benchmarks.ab`` (comparing source trees in one session) keeps working:
    each shape runs end to end for two trees."""
    for shape in ("small", "stream", "coding"):
        args = ["--shape", shape, "--rounds", "1", "--window", "5", str(ROOT), str(ROOT)]
        done = _benchmark("ab", *args)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = [line for line in done.stdout.splitlines() if line.startswith(f"  {ROOT}:")]
        assert len(lines) == 2, done.stdout
        assert all(re.search(r"\d+\.\d{3} ms added .* CPU \d+\.\d\d ms per call", x) for x in lines)


def test_the_first_calls_comparison_runs_each_tree() -> None:
    """``python -m benchmarks.first_calls`` (a run's first calls, a gateway started afresh
    per round and tree) keeps working: both calls timed for the proxy and each tree."""
    done = _benchmark("first_calls", "--rounds", "1", str(ROOT), str(ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    timed = re.compile(r": call 1 \d+\.\d\d / \d+\.\d\d ms · call 2 \d+\.\d\d / \d+\.\d\d ms$")
    lines = [line for line in done.stdout.splitlines() if timed.search(line)]
    names = [line.split(":")[0].strip() for line in lines]
    assert names == ["bare aiohttp proxy", str(ROOT), str(ROOT)], done.stdout


@pytest.mark.parametrize("module", ["ab", "first_calls"])
def test_a_comparison_names_a_path_that_is_no_source_tree(module: str, tmp_path: Path) -> None:
    refused = _benchmark(module, str(tmp_path), timeout=60)
    assert refused.returncode == 2
    assert f"not a source tree of otel-replay: {tmp_path}" in refused.stderr


def test_the_relay_passes_every_byte_both_ways() -> None:
    """Row 2's floor is a relay of the bytes themselves: the stub's streamed answer comes
    through it exactly as straight from the stub, the request's body reaching the stub."""
    import asyncio

    import aiohttp

    from benchmarks._common import CHAT, Server, chat_body, compact

    body = compact(chat_body(7, words=40, stream=True))

    async def fetch(url: str) -> bytes:
        async with aiohttp.ClientSession() as session:
            async with session.post(url + CHAT, data=body) as answer:
                assert answer.status == 200
                return await answer.read()

    with Server(kind="stub") as stub, Server(kind="relay", upstream=stub.url) as relay:
        direct, relayed = asyncio.run(fetch(stub.url)), asyncio.run(fetch(relay.url))
    assert relayed == direct
    assert relayed.endswith(b"data: [DONE]\n\n") and relayed.count(b"\n\n") > 40


def test_the_captured_session_grows_as_the_cli_sends_it() -> None:
    """Benchmark 10's captured shape: the Claude Code CLI's first request with this
    session's values in its placeholders, then each turn resending all before it, the one
    ``cache_control`` marker of the conversation on its newest message."""
    import json

    from benchmarks import captured
    from benchmarks._common import compact

    bodies = captured.session_bodies("0f0f0f0f-1111-2222-3333-444444444444", "2026-05-06", 5)
    sent = [compact(b) for b in bodies]
    assert all(b"{{" not in s for s in sent)
    assert all(b"0f0f0f0f-1111" in s and b"Today's date is 2026-05-06" in s for s in sent)
    assert b"/home/dev/project" in sent[0] and "—".encode() in sent[0]
    assert [len(s) for s in sent] == sorted(len(s) for s in sent)
    first = json.loads(sent[0])
    assert [block.get("cache_control") for block in first["system"]][1:] == [
        {"type": "ephemeral"}
    ] * 2
    assert first["stream"] is True and len(first["tools"]) == 12
    for body in bodies[1:]:
        marked = [m for m in body["messages"] if "cache_control" in json.dumps(m)]
        assert marked == [body["messages"][-1]]
        assert body["messages"][:1] == first["messages"][:1]  # resent as it was


@pytest.mark.parametrize("shape", [[], ["--codex"], ["--record"]])
def test_the_work_per_turn_is_counted(shape: list[str]) -> None:
    """``python -m benchmarks.turn_work`` (a turn's function calls in a captured-shape
    session, replayed strictly with fresh values, or recorded) keeps working on a short
    session."""
    done = _benchmark("turn_work", *shape, "4")
    assert done.returncode == 0, done.stderr[-3000:]
    if "--record" in shape:
        assert re.search(
            r"^trace file: [\d,]+ bytes; the session's requests: [\d,]+ calls$", done.stdout, re.M
        ), done.stdout
    counts = re.search(r"turn by turn: (\d+) (\d+) (\d+) (\d+)$", done.stdout, re.MULTILINE)
    assert counts, done.stdout
    assert re.search(r"^turn 2: \d+ calls; turn 4: \d+; -?\d+ more a turn$", done.stdout, re.M)
