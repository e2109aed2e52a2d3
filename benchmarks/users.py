"""16. As users run it: fresh processes, real cassettes, real calls, side by side with the
same work against a bare server answering the recorded bytes, round by round.

(1) A fresh ``otel-replay serve`` of a 40-turn coding-agent cassette (the session grown
from the Claude Code CLI's request, benchmark 10's): the first request sent right after its
``env`` line against the second (the session's next turn, byte for byte as recorded), and
the time from the command's start to the first answer (beside a bare aiohttp server's
process started and asked alike in the same round: the floor of any Python gateway).
(2) ``otel-replay replay -- python agent.py`` (five model calls with the openai SDK)
against the same agent run alone on a bare server: whole-process wall time. (3) A Vitest
suite of 6 files with 2 replayed model calls each (``useReplay`` in each test) against the
same suite on the bare server, per file (the replayed suite with the ``globalSetup`` the
docs give it, which starts the workers' engines with the run), with the floor under any
engine in Python beside it: the bare suite with a bare aiohttp server's process that the
run's setup starts and each file's first test waits for. (4) 20 tests in one file,
each with its own cassette and one call, against the bare file: per further test (the
median time from one test's start to the next one's, from the second test on, timed in
the file by a ``beforeEach``; over the bare file's). The engine's and
the suites' byte code is cached as in an installed package, and the suites import the
TypeScript package from their ``node_modules``, as a user's project does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import _common
from benchmarks import session as coding
from benchmarks._common import (
    ROOT,
    Results,
    Server,
    chat_body,
    chat_exchange,
    chat_response,
    client_session,
    compact,
    installed_env,
    ms,
    post,
    send_each,
    sized,
    write_cassette,
)
from otel_replay.core.exchange import Response

BENCH = "16 as users run it"
ROUNDS = sized(5, 1)
FILES, CALLS = sized(6, 2), 2
TESTS = sized(20, 3)
JS = ROOT / "js"
VITEST = JS / "node_modules" / "vitest" / "vitest.mjs"

AGENT = """
import os, sys, openai
client = openai.OpenAI(api_key="sk-bench", max_retries=0)
for body in open(sys.argv[1]).read().splitlines():
    client.chat.completions.create(**__import__("json").loads(body))
"""


async def run(results: Results) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = installed_env(folder / "pycache", {**os.environ, "PYTHONPATH": str(ROOT)})
        env.pop("CI", None)
        await _serve_start(results, folder, env)
        _replay_command(results, folder, env)
        if not VITEST.exists():
            results.notes.append(f"{BENCH}: Vitest rows skipped (no {VITEST}; `make js`)")
            return
        _vitest(results, folder, env)


# -- (1) a fresh serve ------------------------------------------------------------------


async def _serve_start(results: Results, folder: Path, env: dict[str, str]) -> None:
    shape = await coding.claude_code()
    recorded = [compact(b) for b in shape.sessions(-1)]
    answer = folder / "answer.sse"
    answer.write_bytes(shape.answer)
    cassette = folder / "claude-code.json"
    with Server(kind="bare", stream=answer) as bare:
        with Server(kind="gateway", mode="record", cassette=cassette, upstream=bare.url) as rec:
            await send_each(rec.url, recorded, shape.route)
    command = [sys.executable, "-m", "otel_replay", "serve", "--mode", "strict"]
    command += ["--cassette", str(cassette)]
    firsts, seconds, starts, bare_starts = [], [], [], []
    bare_firsts: list[float] = []
    bare_seconds: list[float] = []
    warm = 0 if _common.QUICK else 1  # a first round writes the byte code
    for r in range(ROUNDS + warm):
        bare_started = time.perf_counter()
        with Server(kind="bare", stream=answer) as fresh:
            bare_latencies, bare_start = [], 0.0
            async with client_session() as client:
                for body in recorded[:2]:
                    sent = time.perf_counter()
                    await post(client, fresh.url + shape.route.path, body, shape.route.headers)
                    bare_latencies.append(time.perf_counter() - sent)
                    bare_start = bare_start or time.perf_counter() - bare_started
        started = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdin is not None
        url = json.loads(proc.stdout.readline())["env"]["ANTHROPIC_BASE_URL"]
        latencies, answered = [], 0.0
        async with client_session() as client:
            for body in recorded[:2]:
                sent = time.perf_counter()
                await post(client, url + shape.route.path, body, shape.route.headers)
                latencies.append(time.perf_counter() - sent)
                answered = answered or time.perf_counter() - started
        proc.stdin.close()
        summary = json.loads(proc.stdout.read().strip().splitlines()[-1])["summary"]
        proc.wait(60)
        if summary["misses"]:
            raise RuntimeError(f"serve benchmark missed: {summary['misses'][:1]}")
        if r >= warm:
            firsts.append(latencies[0])
            seconds.append(latencies[1])
            starts.append(answered)
            bare_starts.append(bare_start)
            bare_firsts.append(bare_latencies[0])
            bare_seconds.append(bare_latencies[1])
    ratios = [f / s for f, s in zip(firsts, seconds, strict=True)]
    results.add(
        BENCH,
        "fresh `serve`, 40-turn Claude Code cassette: first request right after the env line "
        "vs the second",
        ms(statistics.median(firsts)),
        ms(statistics.median(seconds)),
        statistics.median(ratios),
        "<= 2x",
        rounds=[x <= 2 for x in ratios],
        basis="the second request",
    )
    results.add(
        BENCH,
        "the same: from the command's start to the first answer",
        ms(statistics.median(starts)),
        ms(statistics.median(bare_starts)),
        statistics.median(starts) / statistics.median(bare_starts),
        "<= 250.000 ms",
        rounds=[s <= 0.25 for s in starts],
        basis="a bare aiohttp server's process, started alike",
    )
    results.add(
        BENCH,
        "the floor of the first row: a bare aiohttp server's first request vs its second, asked "
        "alike (by a new client on a new connection)",
        ms(statistics.median(bare_firsts)),
        ms(statistics.median(bare_seconds)),
        statistics.median(f / s for f, s in zip(bare_firsts, bare_seconds, strict=True)),
        basis="its second request",
    )


# -- (2) replay -- python agent.py ----------------------------------------------------


def _wall(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started


def _replay_command(results: Results, folder: Path, env: dict[str, str]) -> None:
    bodies = folder / "bodies.jsonl"
    bodies.write_text("\n".join(compact(chat_body(n)).decode() for n in range(5)) + "\n")
    agent = folder / "agent.py"
    agent.write_text(AGENT)
    answer = folder / "answer.json"
    answer.write_bytes(compact(chat_response()))
    cassette = write_cassette(
        folder / "agent.json",
        [chat_exchange(chat_body(n), Response(status=200, body=chat_response())) for n in range(5)],
    )
    run_agent = [sys.executable, str(agent), str(bodies)]
    replay = [sys.executable, "-m", "otel_replay", "replay", "--cassette", str(cassette)]
    replay += ["--mode", "strict", "--", *run_agent]
    (folder / "beside.py").write_text(BESIDE)
    spec = json.dumps({"kind": "bare", "body": str(answer)})
    beside = [sys.executable, str(folder / "beside.py"), spec, str(ROOT), *run_agent]
    with Server(kind="bare", body=answer) as bare:
        bare_env = {**env, "OPENAI_BASE_URL": f"{bare.url}/v1"}
        for command in () if _common.QUICK else (replay, run_agent, beside):
            _wall(command, bare_env, folder)  # byte code written, files in the page cache
        walls: dict[str, list[float]] = {"replay": [], "bare": [], "beside": []}
        for _ in range(ROUNDS):
            walls["replay"].append(_wall(replay, bare_env, folder))
            walls["bare"].append(_wall(run_agent, bare_env, folder))
            walls["beside"].append(_wall(beside, bare_env, folder))
    added = [r - b for r, b in zip(walls["replay"], walls["bare"], strict=True)]
    floor = [f - b for f, b in zip(walls["beside"], walls["bare"], strict=True)]
    replayed, alone = statistics.median(walls["replay"]), statistics.median(walls["bare"])
    results.add(
        BENCH,
        "`otel-replay replay -- python agent.py` (5 calls, openai SDK): whole run, added",
        f"{ms(replayed)} (+{ms(statistics.median(added))})",
        ms(alone),
        replayed / alone,
        "added <= 150.000 ms",
        rounds=[a <= 0.15 for a in added],
        basis="the agent on a bare server",
    )
    results.add(
        BENCH,
        "the floor of the row above: the agent beside a bare aiohttp server's process that "
        "starts with it (what a gateway in Python costs a run on this machine, before its "
        "own work): added",
        f"{ms(statistics.median(walls['beside']))} (+{ms(statistics.median(floor))})",
        ms(alone),
        statistics.median(walls["beside"]) / alone,
        basis="the agent on a bare server",
    )


BESIDE = """
import subprocess, sys
# a bare aiohttp server's process started as the agent is, not waited for (its answers are
# the running bare server's): what any gateway in Python adds to a run by starting beside it
server = subprocess.Popen(
    [sys.executable, "-m", "benchmarks._server", sys.argv[1]],
    cwd=sys.argv[2], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
)
code = subprocess.call(sys.argv[3:])
server.stdin.close()
server.wait()
sys.exit(code)
"""


# -- (3) and (4) Vitest ----------------------------------------------------------------

TEST = """
test("t{n}", async () => {{
  {use}for (const body of {bodies}) {{
    const answer = await fetch(`${{process.env.OPENAI_BASE_URL}}/chat/completions`, {{
      method: "POST", headers: {{ "content-type": "application/json" }}, body,
    }});
    expect(answer.status).toBe(200);
    await answer.json();
  }}
}});
"""


def _installed() -> None:
    """The package under ``js/bench/node_modules`` as installing its tarball lays it out
    (``package.json`` and the ``files`` it names): a suite then imports it as a user's
    project does, from ``node_modules``, which Vitest loads as it is rather than through
    its own transform (a path outside ``node_modules``, as the package's own folder is)."""
    target = JS / "bench" / "node_modules" / "otel-replay"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    manifest = json.loads((JS / "package.json").read_text())
    shutil.copy(JS / "package.json", target / "package.json")
    for name in manifest["files"]:
        shutil.copytree(JS / name, target / name)


STAMPS = """import { appendFileSync } from "node:fs";
import { beforeEach } from "vitest";
// when each test starts (the run's BENCH_STAMPS file): a test's whole cost is the time
// from its start to the next one's, its setup and its end's work included
beforeEach(() => {
  if (process.env.BENCH_STAMPS) appendFileSync(process.env.BENCH_STAMPS, `${performance.now()}\\n`);
});"""


def _suite(folder: Path, name: str, files: int, tests: int, calls: int, replayed: bool) -> Path:
    """A suite of ``files`` test files of ``tests`` tests, each making ``calls`` model
    calls; with ``useReplay`` and a cassette per test, or against the bare server. A
    project of its own (its ``package.json``), which finds the package in
    ``node_modules`` (``_installed``) and Vitest in the checkout's."""
    suite = Path(tempfile.mkdtemp(prefix=f".suite-{name}-", dir=JS / "bench"))
    (suite / "package.json").write_text('{"name": "suite", "private": true, "type": "module"}\n')
    (suite / "cassettes").mkdir()
    # the replayed suite as the docs set it up: the run's setup starts the workers' engines
    setup = ', globalSetup: ["otel-replay/vitest/summary"]' if replayed else ""
    (suite / "vitest.config.mjs").write_text(
        f'export default {{ test: {{ include: ["*.test.mjs"], testTimeout: 60000{setup} }} }};\n'
    )
    n = 0
    for f in range(files):
        lines = ['import { expect, test } from "vitest";', STAMPS]
        if replayed:
            lines.append('import { useReplay } from "otel-replay/vitest";')
        for _ in range(tests):
            chats = [chat_body(n + c) for c in range(calls)]
            if replayed:
                exchanges = [
                    chat_exchange(b, Response(status=200, body=chat_response())) for b in chats
                ]
                write_cassette(suite / "cassettes" / f"c{n}.json", exchanges)
            use = f'await useReplay("c{n}", {{ mode: "strict" }});\n  ' if replayed else ""
            texts = json.dumps([compact(b).decode() for b in chats])
            lines.append(TEST.format(n=n, use=use, bodies=texts))
            n += calls
        (suite / f"f{f}.test.mjs").write_text("\n".join(lines))
    return suite


FLOOR_SETUP = """
import {{ spawn }} from "node:child_process";
import {{ createServer }} from "node:net";

// the floor under any engine in Python: a bare aiohttp server's process, started with the
// run as the pool's engines are (on a port chosen here, not waited for)
export default async function setup() {{
  const probe = createServer();
  await new Promise((done) => probe.listen(0, "127.0.0.1", done));
  const port = probe.address().port;
  await new Promise((done) => probe.close(done));
  const spec = JSON.stringify({{ kind: "bare", body: {body}, port }});
  const child = spawn({python}, ["-m", "benchmarks._server", spec], {{
    cwd: {root}, stdio: ["pipe", "ignore", "inherit"],
  }});
  process.env.FLOOR_URL = `http://127.0.0.1:${{port}}/v1`;
  return () => new Promise((done) => {{ child.once("exit", done); child.stdin.end(); }});
}}
"""

FLOOR_READY = """
async function floorReady() {
  // a file's first request waits until the server listens, as a worker's first
  // `useReplay` waits for its engine
  for (;;) {
    try {
      await fetch(`${process.env.FLOOR_URL}/ready`, { method: "POST", body: "{}" });
      break;
    } catch {
      await new Promise((done) => setTimeout(done, 5));
    }
  }
  process.env.OPENAI_BASE_URL = process.env.FLOOR_URL;
}
"""


def _floor(suite: Path, answer: Path) -> Path:
    """``suite`` (a bare one) beside a bare aiohttp server's process that the run's setup
    starts and each file's first test waits for: what a Python engine costs before any
    of otel-replay's own work."""
    setup = FLOOR_SETUP.format(
        body=json.dumps(str(answer)), python=json.dumps(sys.executable), root=json.dumps(str(ROOT))
    )
    (suite / "floor-setup.mjs").write_text(setup)
    config = suite / "vitest.config.mjs"
    with_setup = ', globalSetup: ["./floor-setup.mjs"] } };'
    config.write_text(config.read_text().replace(" } };", with_setup))
    waited = "{\n  await floorReady();\n  for (const body"
    for test_file in suite.glob("*.test.mjs"):
        text = test_file.read_text().replace('test("', FLOOR_READY + '\ntest("', 1)
        test_file.write_text(text.replace("{\n  for (const body", waited))
    return suite


def _per_test(suite: Path, env: dict[str, str], stamps: Path) -> float:
    """The median time from one test's start to the next one's in ``suite``'s one file,
    from its second test on (the first starts the file's engine)."""
    stamps.write_text("")
    _vitest_run(suite, {**env, "BENCH_STAMPS": str(stamps)})
    starts = [float(line) for line in stamps.read_text().split()]
    return statistics.median(b - a for a, b in itertools.pairwise(starts[1:])) / 1000


def _vitest_run(suite: Path, env: dict[str, str], *extra: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        ["node", str(VITEST), "run", *extra], cwd=suite, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"vitest failed in {suite}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - started


def _vitest(results: Results, folder: Path, env: dict[str, str]) -> None:
    answer = folder / "answer.json"
    with Server(kind="bare", body=answer) as bare:
        node_env = {
            **env,
            "OTEL_REPLAY_BIN": f"{sys.executable} -m otel_replay",
            "OPENAI_BASE_URL": f"{bare.url}/v1",  # the bare suite's; replayed tests set theirs
        }
        _installed()
        many = _suite(folder, "many", 1, TESTS, 1, True)
        many_bare = _suite(folder, "many-bare", 1, TESTS, 1, False)
        suites = {
            "files": (_suite(folder, "files", FILES, 1, CALLS, True),),
            "files-bare": (_suite(folder, "files-bare", FILES, 1, CALLS, False),),
            "files-floor": (_floor(_suite(folder, "floor", FILES, 1, CALLS, False), answer),),
        }
        apiece = {"many": many, "many-bare": many_bare}  # timed test by test
        try:
            warm = () if _common.QUICK else [*suites.values(), *((s,) for s in apiece.values())]
            for suite, *extra in warm:  # byte code, Vite's caches
                _vitest_run(suite, node_env, *extra)
            walls: dict[str, list[float]] = {name: [] for name in [*suites, *apiece]}
            stamps = folder / "stamps.txt"
            for _ in range(ROUNDS):
                for name, (suite, *extra) in suites.items():
                    walls[name].append(_vitest_run(suite, node_env, *extra))
                for name, suite in apiece.items():
                    walls[name].append(_per_test(suite, node_env, stamps))
        finally:
            for suite in [*(s for s, *_ in suites.values()), *apiece.values()]:
                shutil.rmtree(suite, ignore_errors=True)
            shutil.rmtree(JS / "bench" / "node_modules", ignore_errors=True)
    per_file = [(w - b) / FILES for w, b in zip(walls["files"], walls["files-bare"], strict=True)]
    results.add(
        BENCH,
        f"Vitest, {FILES} files x {CALLS} replayed calls (`useReplay` per file): added per file",
        ms(statistics.median(per_file)),
        ms(statistics.median(walls["files-bare"])),
        statistics.median(walls["files"]) / statistics.median(walls["files-bare"]),
        "added <= 50.000 ms per file",
        rounds=[p <= 0.05 for p in per_file],
        basis="the bare suite, whole run",
    )
    floors = zip(walls["files-floor"], walls["files-bare"], strict=True)
    floor = [(f - b) / FILES for f, b in floors]
    results.add(
        BENCH,
        "the floor of the row above: the bare suite beside a bare aiohttp server's process "
        "the run's setup starts, waited for by each file: added per file",
        ms(statistics.median(floor)),
        ms(statistics.median(walls["files-bare"])),
        statistics.median(walls["files-floor"]) / statistics.median(walls["files-bare"]),
        basis="the bare suite, whole run",
    )
    # a test's start to the next one's, medians of the file's tests from the second on
    further = [m - b for m, b in zip(walls["many"], walls["many-bare"], strict=True)]
    results.add(
        BENCH,
        f"Vitest, {TESTS} tests in one file, a cassette and a call each: added per further test",
        ms(statistics.median(further)),
        ms(statistics.median(walls["many-bare"])),
        statistics.median(walls["many"]) / statistics.median(walls["many-bare"]),
        "added <= 10.000 ms per test",
        rounds=[f <= 0.01 for f in further],
        basis="the bare file's test",
    )


if __name__ == "__main__":
    out = Results()
    asyncio.run(run(out))
