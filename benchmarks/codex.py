"""What otel-replay adds to a Codex run: ``python -m benchmarks.codex``.

Not part of ``make bench``: it needs the pinned Codex CLI (``make clients``). Prints two
lines:

1. Per model call: the first request of a Codex recording (about 75 KB: instructions,
   tools, environment context), with fresh UUIDs each time so no exact-body shortcut
   applies, posted sequentially to the stub upstream directly, through a bare aiohttp
   proxy (what any proxy built on aiohttp adds: the floor under record), through the
   gateway recording, and to the gateway replaying strictly (p50). The stub and each gateway run
   in a process of their own, as the provider and ``otel-replay record`` do for a real
   run (``benchmarks._server``); stub, proxy and gateway take turns in slices.
2. Per run: the wall time of one ``codex exec "say hi"`` straight at the stub, under
   ``otel-replay record`` and under ``otel-replay replay --mode strict`` (median), the
   three taking turns in every round.

Step 1 uses the recording step 2 makes.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks._common import Server, installed_env
from otel_replay.cassette.model import Cassette, dump, load
from otel_replay.testing.stub import run_stub

ROOT = Path(__file__).resolve().parent.parent
CODEX = ROOT / ".venv" / "clients" / "node_modules" / ".bin" / "codex"
CONFIG = "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CALLS, RUNS, SLICES = 30, 5, 5


def _fresh(body: Any) -> bytes:
    ids: dict[str, str] = {}
    text = _UUID.sub(lambda m: ids.setdefault(m[0], str(uuid.uuid4())), json.dumps(body))
    return text.encode()


def _post(port: int, data: bytes) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    connection.request("POST", "/v1/responses", data, headers)
    response = connection.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    if response.status != 200:
        raise SystemExit(f"answered {response.status}")
    return elapsed


def _p50_ms(port: int, body: Any) -> float:
    _post(port, _fresh(body))
    return statistics.median(_post(port, _fresh(body)) for _ in range(CALLS)) * 1000


def _turns(ports: tuple[int, ...], body: Any) -> list[float]:
    """p50 of each server, sent ``CALLS`` requests each in slices taking turns."""
    for port in ports:
        _post(port, _fresh(body))
    times: list[list[float]] = [[] for _ in ports]
    for _ in range(SLICES):
        for port, kept in zip(ports, times, strict=True):
            kept.extend(_post(port, _fresh(body)) for _ in range(CALLS // SLICES))
    return [statistics.median(kept) * 1000 for kept in times]


def per_call(cassette: Path, folder: Path) -> str:
    # the first call that asks for output (Codex warms its WebSocket up with one that does not)
    body = next(
        i.raw_request
        for i in load(cassette).interactions
        if i.request.params.get("generate") is not False
    )
    with Server(kind="stub") as stub, Server(kind="proxy", upstream=stub.url) as proxy:
        recording = Server(
            kind="gateway", mode="record", cassette=folder / "c.json", upstream=stub.url
        )
        with recording as gateway:
            direct, proxied, record = _turns((stub.port, proxy.port, gateway.port), body)
    recorded = load(folder / "c.json")
    many = Cassette(interactions=recorded.interactions[:1] * (CALLS + 2), source=recorded.source)
    dump(many, folder / "r.json")
    with Server(kind="gateway", mode="strict", cassette=folder / "r.json") as gateway:
        replay = _p50_ms(gateway.port, body)
    size = len(_fresh(body)) // 1000
    return (
        f"per call ({size} KB request, p50 of {CALLS}): stub {direct:.1f} ms · "
        f"bare aiohttp proxy {proxied:.1f} ms · record {record:.1f} ms · "
        f"replay {replay:.1f} ms"
    )


def per_run(folder: Path) -> tuple[str, Path]:
    home, project = folder / "home", folder / "project"
    home.mkdir()
    project.mkdir()
    (home / "config.toml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_"))}
    env = installed_env(folder / "pycache", env)
    env["PYTHONPATH"] = str(ROOT)  # this tree's package, not the one installed
    env.update(CODEX_HOME=str(home), OPENAI_API_KEY="sk-bench")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    codex = [str(CODEX), "exec", "--skip-git-repo-check", "say hi"]
    cli = [sys.executable, "-m", "otel_replay.frontends.cli"]
    cassette = folder / "plain.json"

    def timed(command: list[str], environ: dict[str, str]) -> float:
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=project, env=environ, stdin=subprocess.DEVNULL, capture_output=True
        )
        if done.returncode:
            raise SystemExit(done.stderr.decode()[-2000:])
        return time.perf_counter() - started

    offline = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
    strict = [*cli, "replay", "--mode", "strict", "--cassette", str(cassette), "--", *codex]
    direct: list[float] = []
    recorded: list[float] = []
    replayed: list[float] = []
    with run_stub() as stub:
        straight = [str(CODEX), "-c", f'openai_base_url="{stub.openai_url}"', *codex[1:]]
        upstream = ["--upstream-openai", stub.openai_url]
        record = [*cli, "record", "--cassette", str(cassette), *upstream, "--", *codex]
        # the three kinds take turns in every round, so each samples the same moments of
        # a noisy machine; round 0 writes the byte code and the recording replayed
        for round_ in range(RUNS + 1):
            times = (timed(straight, env), timed(record, env), timed(strict, offline))
            if round_:
                for kept, took in zip((direct, recorded, replayed), times, strict=True):
                    kept.append(took)
    median = statistics.median
    line = (
        f"per run (codex exec, median of {RUNS}): direct {median(direct):.2f} s · "
        f"record {median(recorded):.2f} s · replay {median(replayed):.2f} s"
    )
    return line, cassette


if __name__ == "__main__":
    if not CODEX.exists():
        raise SystemExit(f"no Codex CLI at {CODEX}: run `make clients`")
    with tempfile.TemporaryDirectory(prefix="otel-replay-codex-") as tmp:
        run_line, plain = per_run(Path(tmp))
        print(per_call(plain, Path(tmp)))
        print(run_line)
